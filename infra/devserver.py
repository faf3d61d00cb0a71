"""The local runtime: embedded Postgres + migrations + every route group (and MCP) on one port.

    python -m infra.devserver [--host 127.0.0.1] [--port 26001]      # AGENTMATE_PG_PORT (default 26432)

Data lives in .local/ (git-ignored; ``AGENTMATE_LOCAL_DIR`` moves it) and survives restarts, the JWT signing secret
too: a random one is generated on first start into ``.local/jwt-secret`` (mode 600) unless ``JWT_SECRET`` is set.
``DATABASE_URL`` (application role) together with ``MIGRATION_DATABASE_URL`` (owner) point it at an existing server
instead of the embedded one. When the server exits (Ctrl-C, SIGTERM) it stops the embedded Postgres it started; one
that was already running on the port is left alone.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

PG_PORT = int(os.environ.get("AGENTMATE_PG_PORT", "26432"))
LOCAL = Path(os.environ.get("AGENTMATE_LOCAL_DIR", ROOT / ".local"))


def local_jwt_secret(path: Path) -> str:
    """The local runtime's signing secret: read from ``path``, or generated there (mode 600) on first start."""
    import secrets

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        os.chmod(path, 0o600)
        secret = path.read_text(encoding="utf-8").strip()
        if len(secret) >= 32:
            return secret
        raise SystemExit(
            f"{path} holds no usable secret (under 32 characters): delete it to generate a new one"
        ) from None
    secret = secrets.token_urlsafe(48)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(secret + "\n")
    return secret


def prepare_environment() -> bool:
    """Start Postgres (unless DATABASE_URL is given), migrate, and set the app's environment. True when this
    process started the embedded Postgres (and so must stop it)."""
    from agentmate.core import migrate
    from infra import localpg

    started = False
    if os.environ.get("DATABASE_URL"):
        owner_url = os.environ.get("MIGRATION_DATABASE_URL", os.environ["DATABASE_URL"])
    else:
        started = localpg.start(LOCAL / "pg", PG_PORT, durable=True)  # someone's data: crash-safe
        localpg.ensure_database(PG_PORT, "agentmate")
        owner_url = localpg.url(PG_PORT, "agentmate")
        os.environ["DATABASE_URL"] = localpg.url(PG_PORT, "agentmate", role=localpg.APP_ROLE)
    applied = migrate.apply_all(owner_url)
    print(f"migrations: {'applied ' + str(applied) if applied else 'up to date'}", flush=True)
    os.environ.setdefault("AGENTMATE_ENV", "dev")
    if not os.environ.get("JWT_SECRET") and not os.environ.get("JWT_SECRET_ARN"):
        os.environ["JWT_SECRET"] = local_jwt_secret(LOCAL / "jwt-secret")
    os.environ.setdefault("VECTOR_PATH", str(LOCAL / "vectors"))
    os.environ.setdefault("ACCOUNT_ARCHIVE_DIR", str(LOCAL / "account-archives"))  # export/import archives
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    return started


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through main's finally (uvicorn installs its own while serving)


# glibc's M_ARENA_MAX (mallopt's parameter number): how many malloc arenas the process may create.
_M_ARENA_MAX = -8
MALLOC_ARENAS = 2


def limit_malloc_arenas() -> bool:
    """Cap glibc's malloc arenas before the server starts its worker threads. By default glibc gives each busy thread
    an arena of its own (up to 8 per core), and with uvicorn's pool of 40 worker threads the server's heap kept
    growing by about 1 MB a minute in the 30-minute soak (anonymous pages +15 %), where two arenas held it at
    +2 % (docs/benchmarks.md, issue 25 soak). The same as ``MALLOC_ARENA_MAX=2`` in the environment, which a
    process can no longer set for itself. False where there is no glibc (nothing to cap)."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return False
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        return bool(libc.mallopt(_M_ARENA_MAX, MALLOC_ARENAS))
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run Agentmate locally")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=26001)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    limit_malloc_arenas()
    started = False
    try:
        started = prepare_environment()
        # The OAuth issuer is this server's own base URL unless one is given (e.g. behind a tunnel).
        os.environ.setdefault("OAUTH_ISSUER_URL", f"http://{args.host}:{args.port}")

        import uvicorn

        from infra.local_app import build_local_app

        print(
            f"Agentmate is serving on http://{args.host}:{args.port}  (REST /api/*, MCP /mcp/*); "
            "Ctrl-C stops it",
            flush=True,
        )
        # proxy_headers=False: the client address (login throttling) is the socket peer, never X-Forwarded-For.
        # job_poller: the in-process poller plays SQS's part for the job queue (agentmate.jobs.poller).
        uvicorn.run(
            build_local_app(job_poller=True),
            host=args.host,
            port=args.port,
            log_level="warning",
            proxy_headers=False,
        )
    except KeyboardInterrupt:
        pass
    finally:
        if started:
            from infra import localpg

            localpg.stop(LOCAL / "pg")
            print("stopped the embedded Postgres", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
