"""Issue 2 (c): HTTP throughput and latency of the local server on ``GET /api/todos/{id}``, against plain
FastAPI + psycopg serving the same SELECT, in the same run.

    .venv/bin/python bench/http_throughput.py [--requests 4000] [--clients 8]

Each server is uvicorn in its own subprocess on a free loopback port: infra.local_app ``build_local_app``
(every route group behind the path dispatcher, exactly what ``python -m infra.devserver`` serves) and the
baseline bench/baseline_hello/select_app.py (no auth, no error mapping, no middleware; the same tenant
SELECT through a psycopg pool of the same size). ``--clients`` keep-alive connections (one thread each) share a
fixed number of requests; the table shows req/s and per-request latency percentiles. Postgres: the bench
cluster in .local/bench-pg with a fresh migrated database (see bench/common.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

from common import PASSWORD, ROOT, free_port, machine, prepare_database, print_table, ratio, summary


class Server:
    def __init__(self, app: str, env: dict[str, str], *, factory: bool = False) -> None:
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "uvicorn",
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--log-level",
            "warning",
            "--no-access-log",
        ]
        if factory:
            cmd.append("--factory")
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{app} exited: {self.proc.stderr.read().decode()[-3000:]}")  # type: ignore[union-attr]
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/api/health")
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"{app} did not start on port {self.port}") from None
                time.sleep(0.1)

    def request(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        payload = json.dumps(body) if body is not None else None
        conn.request(
            method, path, body=payload, headers={"Content-Type": "application/json", **(headers or {})}
        )
        r = conn.getresponse()
        data = r.read()
        conn.close()
        if r.status >= 300:
            raise RuntimeError(f"{method} {path}: {r.status} {data[:500]!r}")
        return json.loads(data)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def load(
    port: int, path: str, headers: dict[str, str], total: int, clients: int
) -> tuple[list[float], float, int]:
    """``total`` GETs over ``clients`` keep-alive connections; returns (latencies ms, wall s, non-200 count)."""
    remaining = [total]
    lock = threading.Lock()
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    start_gate = threading.Barrier(clients + 1)

    def worker(i: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        out = latencies[i]
        start_gate.wait()
        while True:
            with lock:
                if remaining[0] <= 0:
                    break
                remaining[0] -= 1
            t0 = time.perf_counter_ns()
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            r.read()
            out.append((time.perf_counter_ns() - t0) / 1e6)
            if r.status != 200:
                errors[i] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    start_gate.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return [x for xs in latencies for x in xs], wall, sum(errors)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4000, help="requests per server")
    parser.add_argument("--clients", type=int, default=8, help="concurrent keep-alive clients")
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)

    prepare_database("agentmate_bench_http")
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    servers: list[Server] = []
    try:
        agentmate = Server("infra.local_app:build_local_app", env, factory=True)
        servers.append(agentmate)
        email = f"bench-http-{time.time_ns()}@example.com"
        account_id = agentmate.request("POST", "/api/auth/register", {"email": email, "password": PASSWORD})[
            "account_id"
        ]
        token = agentmate.request("POST", "/api/auth/login", {"email": email, "password": PASSWORD})["token"]
        key = agentmate.request(
            "POST",
            "/api/auth/apikeys",
            {"name": "bench", "scopes": ["todos:rw"]},
            {"Authorization": f"Bearer {token}"},
        )["key"]
        todo_id = ""
        for i in range(50):
            todo_id = agentmate.request("POST", "/api/todos", {"title": f"bench {i}"}, {"X-Api-Key": key})[
                "id"
            ]

        baseline = Server("bench.baseline_hello.select_app:app", {**env, "BENCH_ACCOUNT_ID": account_id})
        servers.append(baseline)

        cases = [
            ("baseline: FastAPI + psycopg, same SELECT", baseline.port, f"/todos/{todo_id}", {}),
            (
                "agentmate local server, GET /api/todos/{id}",
                agentmate.port,
                f"/api/todos/{todo_id}",
                {"X-Api-Key": key},
            ),
            ("reference: FastAPI hello route, no database", baseline.port, "/hello", {}),
        ]
        results = []
        for label, port, path, headers in cases:
            load(port, path, headers, args.warmup, args.clients)
            latencies, wall, errors = load(port, path, headers, args.requests, args.clients)
            results.append((label, latencies, wall, errors))
    finally:
        for s in servers:
            s.stop()

    base_rps = len(results[0][1]) / results[0][2]
    base = summary(results[0][1])
    rows = []
    for label, latencies, wall, errors in results:
        s = summary(latencies)
        rps = len(latencies) / wall
        rows.append(
            [
                label,
                len(latencies),
                errors,
                f"{rps:.0f}",
                ratio(rps, base_rps),
                f"{s['p50']:.2f}",
                ratio(s["p50"], base["p50"]),
                f"{s['p95']:.2f}",
                ratio(s["p95"], base["p95"]),
                f"{s['p99']:.2f}",
            ]
        )
    print_table(
        f"HTTP: {args.clients} concurrent keep-alive clients, {args.requests} requests per server",
        [
            "server",
            "requests",
            "non-200",
            "req/s",
            "req/s vs baseline",
            "p50 ms",
            "p50 vs baseline",
            "p95 ms",
            "p95 vs baseline",
            "p99 ms",
        ],
        rows,
        notes=[f"Machine: {machine()}; clients, uvicorn (1 worker) and Postgres share these CPUs."],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
