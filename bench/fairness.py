"""Issue 25 §1: with the default limits, a noisy tenant at full concurrency leaves a quiet tenant's p95 within 2x of
its p95 alone.

    .venv/bin/python bench/fairness.py [--quiet-requests 600] [--noisy-clients 16] [--rounds 2]

One local server (uvicorn running infra.local_app, what ``python -m infra.devserver`` serves, on a free loopback
port) with the default ``LIMIT_*`` settings. The quiet tenant is one keep-alive client sending, back to back,
``GET /api/todos/{id}`` and ``GET /api/todos/search?q=`` (an expensive route) in turn at ``--quiet-rate`` requests
per second (an agent's pace, inside the default 1,200 a minute). The noisy tenant is
``--noisy-clients`` keep-alive clients (threads of a process of their own), each sending the same mix with no
think time. Two noisy behaviours:
``polite`` honours ``Retry-After`` on a 429 (what agent-integration.md tells an agent to do), ``hostile`` retries
at once. Rounds alternate "quiet alone" and "quiet beside the noisy tenant" so a neighbour's load hits both; the
table gives each round's quiet p50/p95 and the noisy tenant's answers by status. Every loop is bounded in count
and time and sends traffic to 127.0.0.1 only. Postgres: the bench cluster of bench/common.py.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter
from typing import Any

from common import PASSWORD, machine, prepare_database, print_table, summary
from http_throughput import Server

GOAL = 2.0
NOISY_CAP_S = 300.0  # a noisy client never runs longer than this, whatever happens to the quiet one


def _seed(server: Server, label: str) -> tuple[dict[str, str], str]:
    email = f"bench-fair-{label}-{time.time_ns()}@example.com"
    server.request("POST", "/api/auth/register", {"email": email, "password": PASSWORD})
    token = server.request("POST", "/api/auth/login", {"email": email, "password": PASSWORD})["token"]
    key = server.request(
        "POST",
        "/api/auth/apikeys",
        {"name": "bench", "scopes": ["todos:rw"]},
        {"Authorization": f"Bearer {token}"},
    )["key"]
    headers = {"X-Api-Key": key}
    todo_id = ""
    for i in range(20):
        todo_id = server.request("POST", "/api/todos", {"title": f"fair {label} {i}"}, headers)["id"]
    return headers, todo_id


def _paths(todo_id: str) -> list[str]:
    return [f"/api/todos/{todo_id}", "/api/todos/search?q=fair&limit=10"]


def quiet(
    port: int, headers: dict[str, str], todo_id: str, requests: int, rate: float
) -> tuple[list[float], Counter[int]]:
    """``requests`` at ``rate`` per second (an agent's pace, within the default limit), latency per request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    paths = _paths(todo_id)
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    start = time.monotonic()
    for i in range(requests):
        pause = start + i / rate - time.monotonic()
        if pause > 0:
            time.sleep(pause)
        t0 = time.perf_counter_ns()
        conn.request("GET", paths[i % 2], headers=headers)
        r = conn.getresponse()
        r.read()
        latencies.append((time.perf_counter_ns() - t0) / 1e6)
        statuses[r.status] += 1
    conn.close()
    return latencies, statuses


def noisy(
    port: int, headers: dict[str, str], todo_id: str, clients: int, polite: bool, stop: Any
) -> tuple[list[threading.Thread], Counter[int]]:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    paths = _paths(todo_id)

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        deadline = time.monotonic() + NOISY_CAP_S
        i = 0
        while not stop.is_set() and time.monotonic() < deadline:
            conn.request("GET", paths[i % 2], headers=headers)
            r = conn.getresponse()
            r.read()
            i += 1
            with lock:
                statuses[r.status] += 1
            if r.status == 429 and polite:
                stop.wait(min(float(r.getheader("Retry-After") or 1), 5.0))
        conn.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    return threads, statuses


def _noisy_process(
    port: int, headers: dict[str, str], todo_id: str, clients: int, polite: bool, stop: Any, out: Any
) -> None:
    """The noisy tenant in a process of its own, so its client threads never hold the quiet client's GIL."""
    threads, statuses = noisy(port, headers, todo_id, clients, polite, stop)
    for t in threads:
        t.join(NOISY_CAP_S + 40)
    out.put(dict(statuses))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet-requests", type=int, default=300)
    parser.add_argument("--quiet-rate", type=float, default=10.0, help="quiet requests per second")
    parser.add_argument("--noisy-clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--behaviours", default="polite,hostile")
    args = parser.parse_args(argv)

    prepare_database("agentmate_bench_fairness")
    env = {
        k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME" and not k.startswith("LIMIT_")
    }
    server = Server("infra.local_app:build_local_app", env, factory=True)
    rows: list[list[object]] = []
    verdicts: dict[str, list[float]] = {}
    try:
        quiet_h, quiet_todo = _seed(server, "quiet")
        quiet(server.port, quiet_h, quiet_todo, 50, args.quiet_rate)  # warm-up
        for behaviour in args.behaviours.split(","):
            noisy_h, noisy_todo = _seed(server, f"noisy-{behaviour}")
            for rnd in range(args.rounds):
                alone, alone_status = quiet(
                    server.port, quiet_h, quiet_todo, args.quiet_requests, args.quiet_rate
                )
                ctx = multiprocessing.get_context("fork")
                stop, out = ctx.Event(), ctx.Queue()
                proc = ctx.Process(
                    target=_noisy_process,
                    args=(
                        server.port,
                        noisy_h,
                        noisy_todo,
                        args.noisy_clients,
                        behaviour == "polite",
                        stop,
                        out,
                    ),
                )
                proc.start()
                time.sleep(2)  # the noisy tenant spends its burst and settles before the quiet one measures
                shared, shared_status = quiet(
                    server.port, quiet_h, quiet_todo, args.quiet_requests, args.quiet_rate
                )
                stop.set()
                noisy_status = out.get(timeout=60)
                proc.join(60)
                a, s = summary(alone), summary(shared)
                verdicts.setdefault(behaviour, []).append(s["p95"] / a["p95"])
                rows.append(
                    [
                        f"{behaviour} #{rnd + 1}",
                        f"{a['p50']:.2f}",
                        f"{a['p95']:.2f}",
                        f"{s['p50']:.2f}",
                        f"{s['p95']:.2f}",
                        f"{s['p95'] / a['p95']:.2f}x",
                        dict(alone_status + shared_status),
                        noisy_status,
                    ]
                )
                time.sleep(2)  # the noisy tenant's rate state drains between rounds
    finally:
        server.stop()
    print_table(
        f"Fairness: quiet tenant ({args.quiet_requests} requests at {args.quiet_rate:g}/s, 1 client) alone vs beside a noisy tenant "
        f"({args.noisy_clients} clients, no think time), default limits",
        [
            "noisy / round",
            "alone p50 ms",
            "alone p95 ms",
            "shared p50 ms",
            "shared p95 ms",
            "p95 shared/alone",
            "quiet statuses",
            "noisy statuses",
        ],
        rows,
        notes=[
            f"Goal: p95 shared/alone <= {GOAL}x. Worst per behaviour: "
            + ", ".join(f"{b} {max(v):.2f}x" for b, v in verdicts.items()),
            f"Machine: {machine()}; load average {os.getloadavg()[0]:.1f}; clients, uvicorn (1 worker) and "
            "Postgres share these CPUs.",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
