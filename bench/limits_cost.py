"""Issue 25 §1: what the per-account request limit costs every request. Warm in-process ``GET /api/todos/{id}``
through the todos Lambda handler with an API key, with the limits on (the defaults: ``limits_admit`` runs inside the
credential's statement, ``auth_api_key_admit``, migration 0102: no round trip of its own) and off
(``LIMIT_REQUESTS_PER_MINUTE=0``: the same statement, admitting nothing), interleaved in blocks in one process so a
noisy neighbour hits both alike; plus the admission statement alone through psycopg (what it cost as a second
statement, before 0102).

    .venv/bin/python bench/limits_cost.py [--calls 2000] [--warmup 200]

Postgres: the bench cluster of ``bench/common.py`` (.local/bench-pg, $AGENTMATE_BENCH_PG_PORT), ``DB_POOL_MAX_SIZE=1``
as in Lambda.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

from common import handler_json, machine, prepare_database, print_table, ratio, seed_tenant, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per variant")
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args(argv)

    db = prepare_database("agentmate_bench_limits")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    os.environ["LIMIT_REQUEST_BURST"] = "100000"  # the bench itself must never be refused
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg

    from agentmate.core.limits.settings import get_limit_settings
    from functions.auth.app import handler as auth_handler
    from functions.todos.app import handler as todos_handler
    from tests.apigw import LambdaContext, http_event

    call = handler_json
    account_id, _, key = seed_tenant(auth_handler, ["todos:r", "todos:rw"])
    todo_id = call(todos_handler, "POST", "/api/todos", headers={"X-Api-Key": key}, json_body={"title": "t"})[
        "id"
    ]
    event = http_event("GET", f"/api/todos/{todo_id}", headers={"X-Api-Key": key})

    def set_rate(per_minute: str) -> None:
        os.environ["LIMIT_REQUESTS_PER_MINUTE"] = per_minute
        get_limit_settings.cache_clear()

    def handler_call() -> None:
        raw = todos_handler(dict(event), LambdaContext())
        if raw["statusCode"] != 200:
            raise RuntimeError(raw)

    conn = psycopg.connect(db.app_url, autocommit=True, prepare_threshold=None)

    def admit_alone() -> None:
        conn.execute("SELECT * FROM limits_admit(%s, 100000, 100000, 0, 120)", (account_id,))

    from agentmate.auth.security import hash_api_key

    key_hash = hash_api_key(key)

    def lookup_alone() -> None:
        conn.execute("SELECT * FROM auth_api_key(%s)", (key_hash,))

    def lookup_then_admit() -> None:  # before migration 0102: two statements
        lookup_alone()
        admit_alone()

    def folded() -> None:  # since 0102: one
        conn.execute("SELECT * FROM auth_api_key_admit(%s, 100000, 100000, 0, 120)", (key_hash,))

    variants = [
        ("handler, limits off", lambda: set_rate("0"), handler_call),
        ("handler, limits on (default rate)", lambda: set_rate("1200"), handler_call),
        ("psycopg: limits_admit alone", lambda: None, admit_alone),
        ("psycopg: auth_api_key alone", lambda: None, lookup_alone),
        ("psycopg: auth_api_key, then limits_admit", lambda: None, lookup_then_admit),
        ("psycopg: auth_api_key_admit (one statement)", lambda: None, folded),
    ]
    for _, setup, fn in variants:
        setup()
        for _ in range(args.warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name, _, _ in variants}
    block = 50
    for _ in range(max(args.calls // block, 1)):
        for name, setup, fn in variants:
            setup()
            out = samples[name]
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                out.append((time.perf_counter_ns() - t0) / 1e6)
    off = summary(samples[variants[0][0]])
    rows = []
    for name, _, _ in variants:
        s = summary(samples[name])
        rows.append([name, s["n"], s["p50"], s["p95"], s["mean"], ratio(s["p50"], off["p50"])])
    print_table(
        "Per-request cost of the account limits",
        ["variant", "n", "p50 ms", "p95 ms", "mean ms", "p50 vs off"],
        rows,
        [f"{machine()}; load average {os.getloadavg()[0]:.1f}"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
