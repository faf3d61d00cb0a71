"""Issue 2 (b), issue 8: warm in-process latency of ``GET /api/todos/{id}`` through the todos Lambda handler with
an API key and with a JWT, against the same SELECT through psycopg alone, in the same run.

    .venv/bin/python bench/warm_invoke.py [--calls 1000] [--warmup 100]

Postgres: a cluster of its own in .local/bench-pg (port $AGENTMATE_BENCH_PG_PORT, default 26435), a fresh
database migrated as the owner, the application connecting as ``agentmate_app`` (RLS applies) with
``DB_POOL_MAX_SIZE=1`` as in Lambda. The handler is invoked with an API Gateway HTTP API v2 event carrying an
API key (``X-Api-Key``) and a fake Lambda context — Mangum, the Powertools logger/metrics decorators, API key
resolution, the scope check, the tenant transaction and the response model all run, exactly as in Lambda
after a warm start. The JWT variant is the same request with ``Authorization: Bearer <jwt>``: signature check
plus the database check of issue 8 (the user is in the token's account at the token's credentials epoch, one
statement like the API-key lookup). Baseline: one psycopg connection running the handler's tenant transaction
(``set_config('app.account_id')`` + the todos SELECT) per call. Goal: handler p50 <= 3x baseline p50.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from common import handler_json, machine, prepare_database, print_table, ratio, seed_tenant, summary

GOAL = 3.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per variant (>= 500)")
    parser.add_argument("--warmup", type=int, default=100)
    args = parser.parse_args(argv)
    calls = max(args.calls, 500)

    db = prepare_database("agentmate_bench_warm")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    os.environ["LIMIT_REQUEST_BURST"] = "100000"  # measured with the rate check, never refused by it
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg
    from psycopg.rows import dict_row

    from agentmate.todos.repository import COLUMNS
    from functions.auth.app import handler as auth_handler
    from functions.todos.app import handler as todos_handler
    from tests.apigw import LambdaContext, http_event

    call = handler_json
    # Seed one tenant through the handlers: user, API key, a todo (and some neighbours so the index matters).
    account_id, token, key = seed_tenant(auth_handler, ["todos:r", "todos:rw"])
    todo_id = ""
    for i in range(50):
        todo_id = call(
            todos_handler,
            "POST",
            "/api/todos",
            headers={"X-Api-Key": key},
            json_body={"title": f"bench todo {i}", "tags": ["bench"]},
        )["id"]

    path = f"/api/todos/{todo_id}"
    headers = {"X-Api-Key": key}
    jwt_headers = {"Authorization": f"Bearer {token}"}

    def handler_call() -> None:
        raw = todos_handler(http_event("GET", path, headers=headers), LambdaContext())
        if raw["statusCode"] != 200:
            raise RuntimeError(raw)

    def handler_jwt_call() -> None:
        raw = todos_handler(http_event("GET", path, headers=jwt_headers), LambdaContext())
        if raw["statusCode"] != 200:
            raise RuntimeError(raw)

    conn = psycopg.connect(db.app_url, row_factory=dict_row, prepare_threshold=None)
    select = f"SELECT {COLUMNS} FROM todos WHERE account_id = %s AND id = %s"

    def baseline_call() -> None:
        with conn.transaction():
            conn.execute("SELECT set_config('app.account_id', %s, true)", (account_id,))
            if conn.execute(select, (account_id, todo_id)).fetchone() is None:
                raise RuntimeError("baseline row missing")

    from agentmate.auth.security import hash_api_key

    key_hash = hash_api_key(key)

    def baseline_with_key_lookup() -> None:
        with conn.transaction():
            conn.execute(
                "SELECT key_id, account_id, user_id, scopes, role, expired, stale FROM auth_api_key(%s)",
                (key_hash,),
            )
        baseline_call()

    user_id = call(auth_handler, "GET", "/api/auth/me", headers=jwt_headers)["user_id"]

    def baseline_with_jwt_lookup() -> None:
        with conn.transaction():
            conn.execute("SELECT role, credentials_epoch FROM auth_jwt_user(%s, %s)", (user_id, account_id))
        baseline_call()

    variants = [
        ("psycopg: tenant SELECT (baseline)", baseline_call),
        ("psycopg: API key lookup + tenant SELECT", baseline_with_key_lookup),
        ("psycopg: JWT user lookup + tenant SELECT", baseline_with_jwt_lookup),
        ("todos Lambda handler, API key (API GW v2 event)", handler_call),
        ("todos Lambda handler, JWT (API GW v2 event)", handler_jwt_call),
    ]
    for _, fn in variants:
        for _ in range(args.warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    # Interleave in blocks so a noisy neighbour hits every variant alike.
    block = 50
    for _ in range(calls // block):
        for name, fn in variants:
            out = samples[name]
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                out.append((time.perf_counter_ns() - t0) / 1e6)
    conn.close()

    base = summary(samples[variants[0][0]])
    rows = []
    for name, _ in variants:
        s = summary(samples[name])
        rows.append(
            [
                name,
                s["n"],
                f"{s['p50']:.3f}",
                ratio(s["p50"], base["p50"]),
                f"{s['p95']:.3f}",
                ratio(s["p95"], base["p95"]),
                f"{s['p99']:.3f}",
                f"{s['mean']:.3f}",
            ]
        )
    notes = []
    for name, _ in variants[-2:]:
        handler_p50 = summary(samples[name])["p50"]
        verdict = "met" if handler_p50 <= GOAL * base["p50"] else "NOT met"
        notes.append(
            f"Goal handler p50 ≤ {GOAL}x baseline p50, {name.split(',')[1].split('(')[0].strip()}: "
            f"{verdict} ({handler_p50 / base['p50']:.2f}x)."
        )
    key_p50, jwt_p50 = (summary(samples[name])["p50"] for name, _ in variants[-2:])
    notes.append(f"JWT vs API key through the handler: p50 {jwt_p50 / key_p50:.2f}x.")
    notes.append(f"Machine: {machine()}. Postgres on 127.0.0.1 (same host), DB_POOL_MAX_SIZE=1.")
    print_table(
        "Warm invoke: GET /api/todos/{id} with an API key and with a JWT",
        ["variant", "calls", "p50 ms", "p50 vs baseline", "p95 ms", "p95 vs baseline", "p99 ms", "mean ms"],
        rows,
        notes=notes,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
