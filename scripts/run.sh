#!/usr/bin/env bash
# Set everything up on a fresh machine and serve the whole platform on http://127.0.0.1:26001
# (embedded Postgres in .local/pg, crash-safe: fsync, synchronous_commit and full_page_writes on; embedded vector
# index in .local/vectors; offline embeddings).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m infra.devserver "$@"
