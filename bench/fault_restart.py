"""Postgres restarted under mixed idempotent writes against the local runtime (issue 25 §2).

A cluster of its own, a devserver (``python -m infra.devserver``) pointed at it, ``--writers`` threads writing
todos, notes and memory events with idempotency keys (a 503 is retried with the same key). After ``--before``
seconds Postgres gets a fast shutdown, stays down ``--outage`` seconds, starts again, and the writers go on for
``--after`` seconds. Prints the statuses seen, how long the 503s took, how long after the start the first write
succeeded, and how many acknowledged writes are missing afterwards (the goal: 0, and no 500).

    .venv/bin/python bench/fault_restart.py [--writers 8] [--before 5] [--outage 5] [--after 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

from agentmate.core import migrate  # noqa: E402
from infra import localpg  # noqa: E402
from tests.e2e.test_devserver import _free_port, _wait_healthy  # noqa: E402


class Writers:
    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.base, self.headers = base, headers
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.statuses: Counter[int] = Counter()
        self.unavailable_s: list[float] = []
        self.acked: set[str] = set()
        self.first_ok_after: dict[str, float] = {}

    def run(self, n: int) -> None:
        with httpx.Client(base_url=self.base, timeout=60, headers=self.headers) as http:
            i = 0
            while not self.stop.is_set():
                i += 1
                key = f"w{n}-{i}-{uuid.uuid4().hex[:6]}"
                while not self.stop.is_set():
                    t0 = time.monotonic()
                    r = _write(http, i % 3, key)
                    took = time.monotonic() - t0
                    with self.lock:
                        self.statuses[r.status_code] += 1
                        if r.status_code in (200, 201):
                            self.acked.add(key)
                            self.first_ok_after.setdefault("ok", time.monotonic())
                            break
                        if r.status_code == 503:
                            self.unavailable_s.append(took)
                    time.sleep(float(r.headers.get("Retry-After", "1")) if r.status_code == 503 else 0.1)


def _write(http: httpx.Client, kind: int, key: str) -> httpx.Response:
    if kind == 0:
        return http.post("/api/todos", json={"title": key}, headers={"Idempotency-Key": key})
    if kind == 1:
        return http.post(
            "/api/notes", json={"title": key, "content": "bench"}, headers={"Idempotency-Key": key}
        )
    body = {"event_type": "observation", "idempotency_key": key, "payload": {"text": key}}
    return http.post("/api/memory/events", json=body)


def _account(base: str) -> dict[str, str]:
    email, password = f"bench-{uuid.uuid4().hex[:8]}@example.com", "correct horse battery"
    with httpx.Client(base_url=base, timeout=30) as http:
        http.post("/api/auth/register", json={"email": email, "password": password}).raise_for_status()
        token = http.post("/api/auth/login", json={"email": email, "password": password}).json()["token"]
        r = http.post(
            "/api/auth/apikeys",
            json={"name": "b", "scopes": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        r.raise_for_status()
    return {"X-Api-Key": r.json()["key"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--before", type=float, default=5)
    parser.add_argument("--outage", type=float, default=5)
    parser.add_argument("--after", type=float, default=10)
    parser.add_argument("--connect-timeout", default="5")
    args = parser.parse_args()
    pg_dir = Path(tempfile.mkdtemp(prefix="fault-restart-"))
    pg_port, http_port = _free_port(), _free_port()
    localpg.start(pg_dir, pg_port)
    localpg.ensure_database(pg_port, "agentmate")
    migrate.apply_all(localpg.url(pg_port, "agentmate"))
    env = {
        **os.environ,
        "DATABASE_URL": localpg.url(pg_port, "agentmate", localpg.APP_ROLE),
        "MIGRATION_DATABASE_URL": localpg.url(pg_port, "agentmate"),
        "DB_CONNECT_TIMEOUT_S": args.connect_timeout,
        "AGENTMATE_LOCAL_DIR": str(pg_dir / "local"),
        "REGISTRATIONS_PER_ADDRESS": "1000",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.devserver", "--port", str(http_port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        _wait_healthy(proc, http_port)
        base = f"http://127.0.0.1:{http_port}"
        writers = Writers(base, _account(base))
        threads = [threading.Thread(target=writers.run, args=(n,), daemon=True) for n in range(args.writers)]
        for t in threads:
            t.start()
        time.sleep(args.before)
        localpg.stop(pg_dir)
        stopped = time.monotonic()
        time.sleep(args.outage)
        localpg.start(pg_dir, pg_port)
        started = time.monotonic()
        with writers.lock:
            writers.first_ok_after.clear()
        time.sleep(args.after)
        writers.stop.set()
        for t in threads:
            t.join(120)
        with psycopg.connect(localpg.url(pg_port, "agentmate")) as conn:
            rows = conn.execute(
                "SELECT title FROM todos UNION ALL SELECT title FROM notes"
                " UNION ALL SELECT idempotency_key FROM memory_events"
            ).fetchall()
        stored = {r[0] for r in rows}
        waits = sorted(writers.unavailable_s)
        print(f"writers {args.writers}, outage {started - stopped:.1f} s (fast shutdown, then start)")
        print(f"statuses: {dict(sorted(writers.statuses.items()))}")
        if waits:
            print(f"503 answered in: p50 {statistics.median(waits):.2f} s, max {waits[-1]:.2f} s")
        ok = writers.first_ok_after.get("ok")
        print(f"first 2xx after the start: {ok - started:.2f} s" if ok else "no 2xx after the start")
        print(f"acknowledged {len(writers.acked)}, missing afterwards {len(writers.acked - stored)}")
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
        localpg.stop(pg_dir)


if __name__ == "__main__":
    main()
