"""The local runtime killed hard during acknowledged writes: the devserver and its Postgres postmaster both get
SIGKILL (no shutdown checkpoint, no flush of anything in memory), the runtime is started again on the same data,
and every write that was acknowledged with a 2xx is there. Its Postgres runs crash-safe (``localpg.DURABLE``)."""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg

from infra import localpg
from tests.e2e.test_devserver import _free_port, _serve, _wait_healthy

ACKED_BEFORE_KILL = 40  # the kill comes after this many acknowledged writes (a count, not a time)


def _account(base: str) -> dict[str, str]:
    email, password = f"kill-{uuid.uuid4().hex[:10]}@example.com", "correct horse battery"
    with httpx.Client(base_url=base, timeout=30) as http:
        assert http.post("/api/auth/register", json={"email": email, "password": password}).status_code == 201
        token = http.post("/api/auth/login", json={"email": email, "password": password}).json()["token"]
        r = http.post(
            "/api/auth/apikeys",
            json={"name": "k", "scopes": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert r.status_code == 201, r.text
    return {"X-Api-Key": r.json()["key"]}


def _write_until_killed(
    base: str, headers: dict[str, str], acked: list[str], enough: threading.Event
) -> None:
    """Idempotent writes (todos and memory events, alternately) until the server stops answering."""
    with httpx.Client(base_url=base, timeout=30, headers=headers) as http:
        for i in range(100_000):
            key = f"w{i}-{uuid.uuid4().hex[:8]}"
            try:
                if i % 2:
                    r = http.post("/api/todos", json={"title": key}, headers={"Idempotency-Key": key})
                else:
                    body = {"event_type": "observation", "idempotency_key": key, "payload": {"text": key}}
                    r = http.post("/api/memory/events", json=body)
            except httpx.HTTPError:
                return
            if r.status_code in (200, 201):
                acked.append(key)
                if len(acked) >= ACKED_BEFORE_KILL:
                    enough.set()


def _postmaster_pid(local: Path) -> int:
    pid_file = localpg.cluster_dir(local / "pg") / "data" / "postmaster.pid"
    return int(pid_file.read_text().split()[0])


def _wait_gone(pid: int) -> None:
    """Until the killed postmaster is reaped: a new one refuses to start while its PID still answers."""
    for _ in range(600):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the killed postmaster {pid} is still there")


def test_sigkill_of_the_devserver_and_its_postgres_loses_no_acknowledged_write(tmp_path: Path) -> None:
    # Given the local runtime on its own data folder, taking idempotent writes from a client
    local, pg_port, http_port = tmp_path / "local", _free_port(), _free_port()
    base = f"http://127.0.0.1:{http_port}"
    proc: Any = _serve(local, pg_port, http_port)
    try:
        _wait_healthy(proc, http_port)
        headers = _account(base)
        acked: list[str] = []
        enough = threading.Event()
        writer = threading.Thread(
            target=_write_until_killed, args=(base, headers, acked, enough), daemon=True
        )
        writer.start()
        assert enough.wait(timeout=300)
        # When the server and the postmaster are both killed with SIGKILL in the middle of the writes
        postmaster = _postmaster_pid(local)
        proc.send_signal(signal.SIGKILL)
        os.kill(postmaster, signal.SIGKILL)
        proc.communicate(timeout=60)
        writer.join(timeout=120)
        assert not writer.is_alive()
        _wait_gone(postmaster)
        # And the runtime is started again on the same folder (Postgres recovers from its WAL)
        proc = _serve(local, pg_port, http_port)
        _wait_healthy(proc, http_port)
        # Then every acknowledged write is stored
        with psycopg.connect(localpg.url(pg_port, "agentmate")) as conn:
            rows = conn.execute(
                "SELECT title FROM todos UNION ALL SELECT idempotency_key FROM memory_events"
            ).fetchall()
        stored = {r[0] for r in rows}
        assert len(acked) >= ACKED_BEFORE_KILL
        assert set(acked) - stored == set()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=120)
        localpg.stop(local / "pg")
