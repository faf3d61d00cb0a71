#!/usr/bin/env bash
# Build the SAM artifacts (shared layer + zip functions, and the MCP image when Docker runs) into
# .aws-sam/build, then precompile their bytecode with the Lambda runtime's Python (3.12).
#
# The layer is arm64: `sam build` runs shared/Makefile, i.e. infra/layer.py, which installs aarch64 wheels only
# (pip --platform manylinux_2_*_aarch64 --only-binary=:all:), leaves out the offline embedding stack (the `local`
# extra: a deployment embeds over HTTP), prunes tests/headers/stubs, strips the shared objects with
# aarch64-linux-gnu-strip (installed here from Debian's binutils-aarch64-linux-gnu when run as root; without it the
# objects stay unstripped, with a warning) and fails unless every shared object is aarch64. After the precompile,
# the layer must be at most LAYER_LIMIT_MIB (150) MiB unzipped: the build fails above it, printing the largest
# distributions (docs/deploy.md §5).
#
# Why: `sam build` ships no .pyc, and /opt and /var/task are read-only in Lambda, so without this
# every cold start compiles the whole layer again (platform-notes: 458 ms with .pyc vs 1485 ms without).
# The bytecode is written with --invalidation-mode unchecked-hash: it stays valid whatever mtimes the
# zip/unzip round trip gives the sources (timestamp-checked .pyc would be silently ignored).
#
#   scripts/build-layer.sh                # layer + every function; the MCP image only if Docker runs
#   scripts/build-layer.sh --layer-only   # just the shared layer (no Docker, no functions/ needed)
#   SAM_BUILD_ARGS="--cached --parallel" scripts/build-layer.sh
#
# Afterwards `sam deploy` (which reads .aws-sam/build/template.yaml) uploads exactly these artifacts.
# Needs: the tools venv (scripts/tools-venv.sh), a python3.12 (PATH, or pyenv's 3.12.x), make, PyPI access.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$REPO_ROOT/.aws-sam/build"
LAYER_ID=SharedLayer
MCP_ID=McpFunction
LAMBDA_UNZIPPED_LIMIT=$((250 * 1024 * 1024)) # function + all its layers, unzipped
LAYER_LIMIT_MIB=${LAYER_LIMIT_MIB:-150}         # what every function carries (issue 26)

LAYER_ONLY=0
case "${1:-}" in
    --layer-only) LAYER_ONLY=1 ;;
    "") ;;
    *) echo "usage: $0 [--layer-only]" >&2; exit 2 ;;
esac

# --- python3.12: sam build's python3.12 workflow runs `python3.12 -m pip` from PATH -----------------
find_python312() {
    local candidate root
    for candidate in "${PYTHON312:-}" "$(command -v python3.12 2>/dev/null || true)"; do
        [[ -n "$candidate" ]] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null &&
            { echo "$candidate"; return; }
    done
    if command -v pyenv >/dev/null 2>&1; then
        root="$(pyenv root)"
        candidate="$(printf '%s\n' "$root"/versions/3.12.*/bin/python3.12 | sort -V | tail -1)"
        [[ -n "$candidate" && -x "$candidate" ]] && { echo "$candidate"; return; }
    fi
    return 1
}
PY312="$(find_python312)" || {
    echo "python3.12 not found: put one on PATH, set PYTHON312=/path/to/python3.12, or install it with pyenv" >&2
    exit 1
}
# Put the real interpreter's directory first (a pyenv shim may refuse to run without a local version).
PATH="$(dirname "$PY312"):$PATH"
PYTHON312="$PY312" # shared/Makefile runs infra/layer.py with it
export PATH PYTHON312
echo "python3.12: $PY312 ($("$PY312" -V 2>&1))" >&2

# --- a strip that knows aarch64 (the layer's objects are arm64 whatever this machine is) -------------------
if ! command -v aarch64-linux-gnu-strip >/dev/null 2>&1 && [[ "$(uname -m)" != aarch64 ]] &&
    [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "installing binutils-aarch64-linux-gnu (aarch64-linux-gnu-strip) from Debian packages..." >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils-aarch64-linux-gnu >/dev/null 2>&1 ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq binutils-aarch64-linux-gnu >/dev/null; } ||
        echo "WARNING: binutils-aarch64-linux-gnu did not install: the layer's objects stay unstripped" >&2
fi

TOOLS_VENV="$("$REPO_ROOT/scripts/tools-venv.sh")"
export SAM_CLI_TELEMETRY=0

# --- sam build ----------------------------------------------------------------------------------------
cd "$REPO_ROOT"
# shellcheck disable=SC2206
build_args=(--template template.yaml --build-dir "$BUILD_DIR" ${SAM_BUILD_ARGS:-})
if [[ $LAYER_ONLY -eq 1 ]]; then
    "$TOOLS_VENV/bin/sam" build "${build_args[@]}" "$LAYER_ID"
elif docker info >/dev/null 2>&1; then
    "$TOOLS_VENV/bin/sam" build "${build_args[@]}"
else
    echo "WARNING: Docker is not running: building without $MCP_ID (its container image)." >&2
    echo "WARNING: .aws-sam/build is NOT deployable as is; build on a machine with Docker to deploy." >&2
    "$TOOLS_VENV/bin/sam" build "${build_args[@]}" --exclude "$MCP_ID"
fi

# --- precompile every zip artifact (the layer's python/ and each function's directory) ---------------
compiled=()
for dir in "$BUILD_DIR"/*/; do
    dir="${dir%/}"
    [[ -d "$dir" ]] || continue
    # Stale bytecode from the source tree (other Python versions, timestamp mode) goes first.
    find "$dir" -name __pycache__ -type d -prune -exec rm -rf {} +
    "$PY312" -m compileall -q -j 0 --invalidation-mode unchecked-hash "$dir" >/dev/null
    compiled+=("$(basename "$dir")")
done
[[ ${#compiled[@]} -gt 0 ]] || { echo "nothing was built in $BUILD_DIR" >&2; exit 1; }
echo "precompiled (cpython-312, unchecked-hash): ${compiled[*]}" >&2

# --- sizes: every object aarch64, the layer within LAYER_LIMIT_MIB; Lambda refuses a function whose code + layers
# exceed 250 MB unzipped -------------------------------------------------------------------------------------
status=0
"$PY312" "$REPO_ROOT/infra/layer.py" check "$BUILD_DIR/$LAYER_ID" --limit-mib "$LAYER_LIMIT_MIB" >&2 || status=1
layer_bytes=$(du -sb "$BUILD_DIR/$LAYER_ID" | cut -f1)
for dir in "${compiled[@]}"; do
    [[ "$dir" == "$LAYER_ID" ]] && continue
    total=$((layer_bytes + $(du -sb "$BUILD_DIR/$dir" | cut -f1)))
    if ((total > LAMBDA_UNZIPPED_LIMIT)); then
        echo "ERROR: $dir + $LAYER_ID = $((total / 1024 / 1024)) MB unzipped, over Lambda's 250 MB" >&2
        status=1
    fi
done
exit $status
