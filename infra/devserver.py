"""The local runtime: embedded Postgres + migrations + every route group (and MCP) on one port.

    python -m infra.devserver [--host 127.0.0.1] [--port 26001]

Data lives in .local/ (git-ignored) and survives restarts. ``DATABASE_URL`` (application role) together with
``MIGRATION_DATABASE_URL`` (owner) point it at an existing server instead of the embedded one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

PG_PORT = int(os.environ.get("AGENTMATE_PG_PORT", "26432"))
LOCAL = ROOT / ".local"


def prepare_environment() -> None:
    """Start Postgres (unless DATABASE_URL is given), migrate, and set the app's environment."""
    from agentmate.core import migrate
    from infra import localpg

    if os.environ.get("DATABASE_URL"):
        owner_url = os.environ.get("MIGRATION_DATABASE_URL", os.environ["DATABASE_URL"])
    else:
        localpg.start(LOCAL / "pg", PG_PORT)
        localpg.ensure_database(PG_PORT, "agentmate")
        owner_url = localpg.url(PG_PORT, "agentmate")
        os.environ["DATABASE_URL"] = localpg.url(PG_PORT, "agentmate", role=localpg.APP_ROLE)
    applied = migrate.apply_all(owner_url)
    print(f"migrations: {'applied ' + str(applied) if applied else 'up to date'}", flush=True)
    os.environ.setdefault("AGENTMATE_ENV", "dev")
    os.environ.setdefault("VECTOR_PATH", str(LOCAL / "vectors"))
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run Agentmate locally")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=26001)
    args = parser.parse_args(argv)
    prepare_environment()

    import uvicorn

    from infra.local_app import build_local_app

    print(f"Agentmate is serving on http://{args.host}:{args.port}  (REST /api/*, MCP /mcp/*)", flush=True)
    uvicorn.run(build_local_app(), host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
