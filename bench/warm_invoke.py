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

``--framework`` (issue 26 §5) sets the handler against the framework itself instead: the baseline is a minimal
FastAPI + Mangum handler (one sync route, no middleware, no dependencies, no response model) that does the same
API-key lookup (``auth_api_key``) and the same tenant transaction and SELECT over the same pool (``get_database()``),
returning the row as JSON; its JWT twin verifies the token with PyJWT and looks the user up (``auth_jwt_user``).
Goal: the todos handler p50 <= 1.25x the minimal one, API key. A second, instrumented pass then prints where the
todos handler's time goes, per step (``framework_breakdown``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from common import (
    Stopwatch,
    handler_json,
    machine,
    prepare_database,
    print_table,
    ratio,
    seed_tenant,
    summary,
)

GOAL = 3.0
FRAMEWORK_GOAL = 1.25


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="measured calls per variant (>= 500)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument(
        "--framework", action="store_true", help="baseline: a minimal FastAPI + Mangum handler (issue 26 §5)"
    )
    args = parser.parse_args(argv)
    calls = max(args.calls, 500)
    if args.framework:
        return framework(calls, args.warmup)

    db = prepare_database("agentmate_bench_warm")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    os.environ["LIMIT_REQUEST_BURST"] = "100000"  # measured with the rate check, never refused by it
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg
    from psycopg.rows import dict_row

    from agentmate.todos.repository import COLUMNS
    from functions.auth.app import handler as auth_handler
    from functions.todos.app import handler as todos_handler

    call = handler_json
    account_id, token, key, path = _seed(auth_handler, todos_handler)
    todo_id = path.rsplit("/", 1)[-1]
    handler_call = _invoke(todos_handler, path, {"X-Api-Key": key})
    jwt_headers = {"Authorization": f"Bearer {token}"}
    handler_jwt_call = _invoke(todos_handler, path, jwt_headers)

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
    samples = _measure(variants, calls, args.warmup)
    conn.close()

    base = summary(samples[variants[0][0]])
    rows = _rows(samples)
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


Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


def _seed(auth_handler: Handler, todos_handler: Handler) -> tuple[str, str, str, str]:
    """One tenant through the handlers (user, API key) and 50 todos so the index matters: (account_id, its JWT,
    the key, the path of the last todo)."""
    account_id, token, key = seed_tenant(auth_handler, ["todos:r", "todos:rw"])
    todos = [{"title": f"bench todo {i}", "tags": ["bench"]} for i in range(50)]
    ids = [
        handler_json(todos_handler, "POST", "/api/todos", headers={"X-Api-Key": key}, json_body=t)
        for t in todos
    ]
    return account_id, token, key, f"/api/todos/{ids[-1]['id']}"


def _invoke(handler: Handler, path: str, headers: dict[str, str]) -> Callable[[], None]:
    """A warm ``GET path`` through ``handler`` with an API Gateway v2 event; anything but a 200 raises."""
    from tests.apigw import LambdaContext, http_event

    def call() -> None:
        raw = handler(http_event("GET", path, headers=headers), LambdaContext())
        if raw["statusCode"] != 200:
            raise RuntimeError(raw)

    return call


def _measure(
    variants: list[tuple[str, Callable[[], None]]], calls: int, warmup: int
) -> dict[str, list[float]]:
    """Warm every variant, then time them interleaved in blocks so a noisy neighbour hits every variant alike."""
    for _, fn in variants:
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    block = 50
    for _ in range(max(calls // block, 1)):
        for name, fn in variants:
            out = samples[name]
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                out.append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def _rows(samples: dict[str, list[float]]) -> list[list[Any]]:
    """One table row per variant (in order): calls, p50 and p95 with their ratio to the first variant's, p99,
    mean."""
    base = summary(next(iter(samples.values())))
    rows: list[list[Any]] = []
    for name, values in samples.items():
        s = summary(values)
        p50, p95 = ratio(s["p50"], base["p50"]), ratio(s["p95"], base["p95"])
        rows.append(
            [
                name,
                s["n"],
                f"{s['p50']:.3f}",
                p50,
                f"{s['p95']:.3f}",
                p95,
                f"{s['p99']:.3f}",
                f"{s['mean']:.3f}",
            ]
        )
    return rows


def minimal_handler(select: str) -> Handler:
    """The framework's own floor: FastAPI + Mangum, one sync route doing what the todos route must (find the
    caller by API key or JWT, one tenant transaction with the SELECT) over the same ``Database`` pool, the row
    returned as FastAPI returns a dict (``jsonable_encoder`` + ``JSONResponse``)."""
    from fastapi import FastAPI, Header
    from fastapi.responses import JSONResponse
    from mangum import Mangum

    from agentmate.auth.security import decode_jwt, hash_api_key
    from agentmate.auth.settings import get_auth_settings
    from agentmate.core.db import get_database

    app = FastAPI()

    @app.get("/api/todos/{todo_id}")
    def get_todo(
        todo_id: str, x_api_key: str | None = Header(None), authorization: str | None = Header(None)
    ) -> Any:
        db = get_database()
        with db.single_statement() as conn:
            if x_api_key:
                found = conn.execute(
                    "SELECT account_id FROM auth_api_key(%(h)s)", {"h": hash_api_key(x_api_key)}
                ).fetchone()
                account = found["account_id"] if found else None
            else:
                claims = decode_jwt((authorization or "")[7:], get_auth_settings().resolved_jwt_secret())
                account = claims["account_id"]
                found = conn.execute(
                    "SELECT role FROM auth_jwt_user(%(u)s, %(a)s)", {"u": claims["sub"], "a": account}
                ).fetchone()
        if found is None or account is None:
            return JSONResponse({"detail": "unauthorized"}, status_code=401)
        with db.tenant(account) as conn:
            return conn.execute(select, {"a": account, "id": todo_id}).fetchone()

    return Mangum(app, lifespan="off", api_gateway_base_path="/")  # type: ignore[return-value]


def _timed_tenant(watch: Stopwatch) -> Callable[[], None]:
    """Time ``Database.tenant`` over its whole block (BEGIN + tenant setting, the statements, COMMIT)."""
    from agentmate.core.db import Database

    original = Database.tenant

    @contextmanager
    def tenant(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        t0 = time.perf_counter_ns()
        try:
            with original(self, *args, **kwargs) as conn:
                yield conn
        finally:
            watch.add("tenant", (time.perf_counter_ns() - t0) / 1e6)

    Database.tenant = tenant  # type: ignore[method-assign]

    def restore() -> None:
        Database.tenant = original  # type: ignore[method-assign]

    return restore


def framework_breakdown(fn: Callable[[], None], calls: int) -> list[tuple[str, float]]:
    """Mean ms per call of each step of the todos handler, from timing wrappers (so a second pass, never the
    measured one): each step is a wrapped function's time less the wrapped steps inside it."""
    import fastapi.routing
    import starlette.applications
    import starlette.responses
    import starlette.routing

    from agentmate.api import deps
    from agentmate.auth import credentials
    from agentmate.core.limits import service as limits
    from agentmate.todos import service as todos

    watch = Stopwatch()
    for owner, attr, label in [
        (credentials, "authenticate", "auth"),
        (credentials, "authenticate_admitted", "auth"),
        (limits, "admit", "limits"),
        (todos, "get", "service"),
        (fastapi.routing, "solve_dependencies", "dependencies"),
        (fastapi.routing, "run_endpoint_function", "endpoint"),
        (fastapi.routing, "serialize_response", "serialize"),
        (starlette.responses.JSONResponse, "render", "render"),
        (starlette.routing.Router, "__call__", "router"),
        (starlette.applications.Starlette, "__call__", "app"),
    ]:
        if hasattr(owner, attr):
            watch.wrap(owner, attr, label)
    restore_tenant = _timed_tenant(watch)
    _ = deps  # the dependencies look credentials and limits up at call time: the wrappers see every request
    t0 = time.perf_counter_ns()
    try:
        for _ in range(calls):
            fn()
    finally:
        total = (time.perf_counter_ns() - t0) / 1e6
        restore_tenant()
        watch.restore()
    t = {label: ms / calls for (_, label), ms in watch.totals.items()}

    def get(label: str) -> float:
        return t.get(label, 0.0)

    serialization = get("serialize") + get("render")
    return [
        ("auth: credential statement" + (" (+ rate check)" if "limits" not in t else ""), get("auth")),
        ("limits: limits_admit statement", get("limits")),
        (
            "other dependencies (scopes, settings, FastAPI's solver)",
            get("dependencies") - get("auth") - get("limits"),
        ),
        ("tenant transaction (BEGIN+tenant, SELECT, COMMIT)", get("tenant")),
        (
            "handler: endpoint + service less its transaction (on the loop in Lambda)",
            get("endpoint") - get("tenant"),
        ),
        ("serialization: response model + JSON", serialization),
        ("routing, request parsing", get("router") - get("dependencies") - get("endpoint") - serialization),
        ("middleware (ours + Starlette's error layers)", get("app") - get("router")),
        ("Mangum + Powertools (event in, response out)", total / calls - get("app")),
    ]


def framework(calls: int, warmup: int) -> int:
    """Issue 26 §5: the todos handler against a minimal FastAPI + Mangum handler, in one run."""
    prepare_database("agentmate_bench_warm")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    os.environ["LIMIT_REQUEST_BURST"] = "100000"  # measured with the rate check, never refused by it
    warnings.filterwarnings("ignore", "No application metrics")

    from common import count_round_trips

    from agentmate.core.db import get_database
    from agentmate.todos.repository import COLUMNS
    from functions.auth.app import handler as auth_handler
    from functions.todos.app import handler as todos_handler

    _, token, key, path = _seed(auth_handler, todos_handler)
    minimal = minimal_handler(f"SELECT {COLUMNS} FROM todos WHERE account_id = %(a)s AND id = %(id)s")
    api_key, jwt = {"X-Api-Key": key}, {"Authorization": f"Bearer {token}"}
    variants = [
        ("minimal FastAPI + Mangum, API key (baseline)", _invoke(minimal, path, api_key)),
        ("minimal FastAPI + Mangum, JWT", _invoke(minimal, path, jwt)),
        ("todos Lambda handler, API key", _invoke(todos_handler, path, api_key)),
        ("todos Lambda handler, JWT", _invoke(todos_handler, path, jwt)),
    ]
    samples = _measure(variants, calls, warmup)
    base = summary(samples[variants[0][0]])
    rows = _rows(samples)
    key_p50 = summary(samples[variants[2][0]])["p50"]
    jwt_p50, jwt_base = summary(samples[variants[3][0]])["p50"], summary(samples[variants[1][0]])["p50"]
    verdict = "met" if key_p50 <= FRAMEWORK_GOAL * base["p50"] else "NOT met"
    trips = [count_round_trips(get_database(), fn)[0] for _, fn in variants]
    notes = [
        f"Goal todos handler p50 ≤ {FRAMEWORK_GOAL}x the minimal handler's, API key: {verdict} "
        f"({key_p50 / base['p50']:.2f}x); JWT against the minimal JWT handler: {jwt_p50 / jwt_base:.2f}x.",
        "Round trips to Postgres per request (libpq trace): "
        + ", ".join(f"{n}" for n in trips)
        + " (rows in order).",
        f"Machine: {machine()}. Postgres on 127.0.0.1 (same host), DB_POOL_MAX_SIZE=1.",
    ]
    print_table(
        "Warm invoke against the framework: GET /api/todos/{id}",
        ["variant", "calls", "p50 ms", "p50 vs minimal", "p95 ms", "p95 vs minimal", "p99 ms", "mean ms"],
        rows,
        notes=notes,
    )
    steps = framework_breakdown(variants[2][1], max(calls // 2, 200))
    base_mean = base["mean"]
    print_table(
        "Where the todos handler's time goes (API key; mean ms per call, instrumented pass)",
        ["step", "mean ms", "vs minimal handler's mean"],
        [[name, f"{ms:.3f}", f"{ms / base_mean:.2f}x"] for name, ms in steps]
        + [
            [
                "total (sum)",
                f"{sum(ms for _, ms in steps):.3f}",
                f"{sum(ms for _, ms in steps) / base_mean:.2f}x",
            ]
        ],
        notes=[
            "Timing wrappers add a little to each step; the ratios above come from the uninstrumented pass."
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
