#!/usr/bin/env bash
# Set everything up on a fresh machine and run the whole test suite against a real Postgres.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -q -n "${PYTEST_WORKERS:-2}" "$@"
