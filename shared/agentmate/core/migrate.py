"""Forward-only SQL migration runner over ``migrations/NNNN_slug.sql``.

Run as the database owner (never as the application role)::

    python -m agentmate.core.migrate --database-url postgresql://owner@host/db [--dir migrations]

Each file is applied in its own transaction under an advisory lock, and recorded in ``schema_migrations``.
Applied files are immutable: a changed checksum is an error rather than a silent skip.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg

_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_LOCK_ID = 7_452_001
DEFAULT_DIR = Path(__file__).resolve().parents[3] / "migrations"


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def discover(directory: Path = DEFAULT_DIR) -> list[Migration]:
    found: list[Migration] = []
    for path in sorted(directory.glob("*.sql")):
        m = _NAME.match(path.name)
        if not m:
            raise ValueError(f"migration file name must look like NNNN_slug.sql: {path.name}")
        found.append(Migration(int(m.group(1)), m.group(2), path))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise ValueError("duplicate migration version numbers")
    return found


def apply_all(database_url: str, directory: Path = DEFAULT_DIR) -> list[int]:
    """Apply every pending migration; returns the versions applied now."""
    applied_now: list[int] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(%(lock_id)s)", {"lock_id": _LOCK_ID})
        try:
            conn.execute(
                """CREATE TABLE IF NOT EXISTS schema_migrations (
                       version integer PRIMARY KEY,
                       name text NOT NULL,
                       checksum text NOT NULL,
                       applied_at timestamptz NOT NULL DEFAULT now())"""
            )
            done = {r[0]: r[1] for r in conn.execute("SELECT version, checksum FROM schema_migrations")}
            for mig in discover(directory):
                if mig.version in done:
                    if done[mig.version] != mig.checksum:
                        raise RuntimeError(f"migration {mig.path.name} changed after it was applied")
                    continue
                with conn.transaction():
                    conn.execute(mig.sql)
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name, checksum) VALUES (%(version)s, %(name)s, %(checksum)s)",
                        {"version": mig.version, "name": mig.name, "checksum": mig.checksum},
                    )
                applied_now.append(mig.version)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%(lock_id)s)", {"lock_id": _LOCK_ID})
    return applied_now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="owner connection URL")
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    applied = apply_all(args.database_url, args.dir)
    print(f"applied {len(applied)} migration(s): {applied}" if applied else "schema is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
