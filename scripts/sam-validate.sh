#!/usr/bin/env bash
# Validate template.yaml offline: no AWS account, credentials or network needed.
#
#   1. `sam validate`        runs the SAM transform itself (catches what CloudFormation would reject
#                            at deploy time, e.g. Runtime/Layers on an Image function);
#   2. `sam validate --lint` runs cfn-lint over the template (types, properties, best practices).
#
# Both must pass; any lint finding (warnings included) fails the script.
#   scripts/sam-validate.sh [template]      (default: template.yaml at the repo root)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TEMPLATE="${1:-$REPO_ROOT/template.yaml}"
REGION="${AWS_REGION:-us-east-1}"

TOOLS_VENV="$("$REPO_ROOT/scripts/tools-venv.sh")"

# No telemetry, and make sure no real profile or credentials are picked up: validation is offline.
export SAM_CLI_TELEMETRY=0
export AWS_ACCESS_KEY_ID=validate AWS_SECRET_ACCESS_KEY=validate AWS_SESSION_TOKEN=validate
export AWS_DEFAULT_REGION="$REGION" AWS_REGION="$REGION"
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
unset AWS_PROFILE

# (keep `lint` out of samconfig.toml validate params: it would turn step 1 into a second lint run)
cd "$REPO_ROOT"
"$TOOLS_VENV/bin/sam" validate --template "$TEMPLATE" --region "$REGION"
"$TOOLS_VENV/bin/sam" validate --lint --template "$TEMPLATE" --region "$REGION"
