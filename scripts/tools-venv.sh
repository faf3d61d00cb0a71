#!/usr/bin/env bash
# Create (or reuse) the tools virtualenv holding AWS SAM CLI and cfn-lint.
#
# SAM CLI pins boto3/pydantic differently from the application, so it lives in its own venv
# (default: <repo>/.tools-venv, override with TOOLS_VENV). Idempotent: when `sam` and `cfn-lint`
# already run from that venv, nothing is installed. Pass --upgrade to force a reinstall.
#
#   scripts/tools-venv.sh             # create/verify, prints the venv path
#   TOOLS_VENV=/opt/tools scripts/tools-venv.sh
#   PYTHON=python3.12 scripts/tools-venv.sh
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_VENV="${TOOLS_VENV:-$REPO_ROOT/.tools-venv}"
PYTHON="${PYTHON:-python3}"
UPGRADE=0
[[ "${1:-}" == "--upgrade" ]] && UPGRADE=1

export SAM_CLI_TELEMETRY=0

installed() {
    [[ -x "$TOOLS_VENV/bin/sam" && -x "$TOOLS_VENV/bin/cfn-lint" ]] &&
        "$TOOLS_VENV/bin/sam" --version >/dev/null 2>&1 &&
        "$TOOLS_VENV/bin/cfn-lint" --version >/dev/null 2>&1
}

if [[ $UPGRADE -eq 0 ]] && installed; then
    echo "tools venv ready: $TOOLS_VENV ($("$TOOLS_VENV/bin/sam" --version), $("$TOOLS_VENV/bin/cfn-lint" --version))" >&2
    echo "$TOOLS_VENV"
    exit 0
fi

if [[ ! -x "$TOOLS_VENV/bin/python" ]]; then
    echo "creating tools venv at $TOOLS_VENV with $($PYTHON -V 2>&1)" >&2
    "$PYTHON" -m venv "$TOOLS_VENV"
fi

"$TOOLS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
"$TOOLS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade aws-sam-cli cfn-lint
"$TOOLS_VENV/bin/python" -m pip check >&2

installed || { echo "tools venv at $TOOLS_VENV is broken: sam/cfn-lint do not run" >&2; exit 1; }
echo "tools venv ready: $TOOLS_VENV ($("$TOOLS_VENV/bin/sam" --version), $("$TOOLS_VENV/bin/cfn-lint" --version))" >&2
echo "$TOOLS_VENV"
