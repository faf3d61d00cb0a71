"""The local runtime (python -m infra.devserver, what scripts/run.sh execs) stops the embedded Postgres it started
when it exits, on SIGTERM and on Ctrl-C (SIGINT), and leaves alone one it did not start."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from infra import localpg

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(local: Path, pg_port: int, http_port: int) -> subprocess.Popen[str]:
    env = {**os.environ, "AGENTMATE_PG_PORT": str(pg_port), "AGENTMATE_LOCAL_DIR": str(local)}
    env.pop("DATABASE_URL", None)
    env.pop("MIGRATION_DATABASE_URL", None)
    return subprocess.Popen(
        [sys.executable, "-m", "infra.devserver", "--port", str(http_port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wait_healthy(proc: subprocess.Popen[str], http_port: int, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"devserver exited early: {proc.stdout.read() if proc.stdout else ''}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/api/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError("devserver did not answer /api/health in time")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_the_devserver_stops_the_postgres_it_started(tmp_path, signum):
    pg_port, http_port = _free_port(), _free_port()
    proc = _serve(tmp_path / "local", pg_port, http_port)
    try:
        _wait_healthy(proc, http_port)
        assert localpg._ready(pg_port)  # its own embedded Postgres is up
        proc.send_signal(signum)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            localpg.stop(tmp_path / "local" / "pg")
    assert proc.returncode in (0, 128 + signum), out
    assert "stopped the embedded Postgres" in out
    assert not localpg._ready(pg_port)


def test_the_devserver_leaves_a_postgres_it_did_not_start_running(tmp_path):
    pg_port, http_port = _free_port(), _free_port()
    base = tmp_path / "theirs"
    assert localpg.start(base, pg_port) is True
    try:
        proc = _serve(tmp_path / "local", pg_port, http_port)
        try:
            _wait_healthy(proc, http_port)
            proc.send_signal(signal.SIGTERM)
            out, _ = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert "stopped the embedded Postgres" not in out
        assert localpg._ready(pg_port)
    finally:
        localpg.stop(base)
