"""Issue 26 §3: a SnapStart-style figure — the restore path's time to first response, in-process, for a function
against a hello-world FastAPI + Mangum + psycopg handler, as a ratio inside one run.

    .venv/bin/python bench/snapstart_restore.py [--runs 9]

No Lambda here, so the snapshot is simulated in a fresh interpreter per run: the function's module is imported
(Lambda's init: the app and the Mangum handler built), the before-snapshot hooks run (``core.snapstart``: the
warm-up request, then every pool, secret and client closed), and from there the clock runs as it would in a
restored environment: the after-restore hooks (random reseeded, secret cache emptied) and the first request,
``GET /api/todos/{id}`` through the todos function with an API key through the handler (an API Gateway v2 event: Mangum, the API key
lookup, the scope check, a fresh pool's first connection, the tenant transaction). What a real restore adds
(Lambda loading the snapshot's memory pages) is the same for both sides and not measured.

A third side runs the todos function's hooks without the warm-up request, to show what warming before the
snapshot saves the first request. The baseline goes through the same steps: its module imported, ``random.seed()`` as its only after-restore work,
then its first request through Mangum, which opens a psycopg connection and runs the same tenant transaction
(``set_config('app.account_id')`` + the todo's SELECT) without auth or middleware. The init column is what
SnapStart skips: the import that a cold start without a snapshot pays before the same first request.

Postgres: the bench cluster (.local/bench-pg, port $AGENTMATE_BENCH_PG_PORT, default 26435), a fresh database,
the application role (RLS applies), ``DB_POOL_MAX_SIZE=1`` as in Lambda. Runs are interleaved, one discarded
warm-up run per side first (bytecode caches written), medians of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from common import (
    ROOT,
    handler_json,
    import_environment,
    machine,
    prepare_database,
    print_table,
    ratio,
    seed_tenant,
)

BASELINE = """
import os, random
import psycopg
from fastapi import FastAPI, HTTPException
from mangum import Mangum
from psycopg.rows import dict_row

app = FastAPI()
_conn = []


@app.get("/todos/{todo_id}")
def get_todo(todo_id: str) -> dict:
    if not _conn:  # opened on the first request, as a restored environment must
        _conn.append(psycopg.connect(os.environ["DATABASE_URL"], row_factory=dict_row, prepare_threshold=None))
    conn, account = _conn[0], os.environ["BENCH_ACCOUNT_ID"]
    with conn.transaction():
        conn.execute("SELECT set_config('app.account_id', %s, true)", (account,))
        row = conn.execute("SELECT * FROM todos WHERE account_id = %s AND id = %s", (account, todo_id)).fetchone()
    if row is None:
        raise HTTPException(404)
    return {"id": str(row["id"]), "title": row["title"]}


handler = Mangum(app, lifespan="off")


def restore() -> None:
    random.seed()
"""

PROBE = r"""
import importlib, json, os, sys, time, types, warnings
warnings.filterwarnings("ignore", "No application metrics")
side, module_name, path, key = sys.argv[1:5]
c0, t0 = time.process_time(), time.perf_counter()
if side == "baseline":
    module = types.ModuleType("baseline_restore")
    exec(compile(os.environ["BENCH_BASELINE_SOURCE"], "baseline_restore", "exec"), module.__dict__)
    before, restore = (lambda: []), module.restore
else:
    module = importlib.import_module(module_name)
    from agentmate.core import snapstart
    if side == "function-no-warm-up":
        snapstart._warm.clear()
    before, restore = snapstart.run_before_snapshot, snapstart.run_after_restore
init_ms, init_cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
from tests.apigw import LambdaContext, http_event
event = http_event("GET", path, headers={"X-Api-Key": key} if key else {})
assert before() == []  # the snapshot
c1, t1 = time.process_time(), time.perf_counter()
failed = restore()
t2 = time.perf_counter()
response = module.handler(event, LambdaContext())
t3, c3 = time.perf_counter(), time.process_time()
assert not failed and response["statusCode"] == 200, (failed, response)
print(json.dumps({
    "init_ms": init_ms, "init_cpu_ms": init_cpu_ms, "hooks_ms": (t2 - t1) * 1000,
    "first_request_ms": (t3 - t2) * 1000, "restore_ms": (t3 - t1) * 1000, "restore_cpu_ms": (c3 - c1) * 1000,
}))
"""


def run_once(side: str, module: str, path: str, key: str, env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, side, module, path, key],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{side} {module} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="fresh interpreters per side (median; >= 5)")
    args = parser.parse_args(argv)
    runs = max(args.runs, 5)

    prepare_database("agentmate_bench_snapstart")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    import warnings

    warnings.filterwarnings("ignore", "No application metrics")
    from functions.auth.app import handler as auth_handler
    from functions.todos.app import handler as todos_handler

    account_id, _token, key = seed_tenant(auth_handler, ["todos:rw"])
    todo = handler_json(
        todos_handler, "POST", "/api/todos", headers={"X-Api-Key": key}, json_body={"title": "restored"}
    )
    env = {
        **import_environment(),
        "BENCH_ACCOUNT_ID": account_id,
        "BENCH_BASELINE_SOURCE": BASELINE,
        "DB_POOL_MAX_SIZE": "1",
    }
    sides = [
        ("baseline", "hello-world FastAPI+Mangum+psycopg", "-", f"/todos/{todo['id']}", ""),
        (
            "function",
            "todos function (SnapStart hooks)",
            "functions.todos.app",
            f"/api/todos/{todo['id']}",
            key,
        ),
        (
            "function-no-warm-up",
            "todos function, hooks without the warm-up request",
            "functions.todos.app",
            f"/api/todos/{todo['id']}",
            key,
        ),
    ]
    samples: dict[str, list[dict[str, float]]] = {side: [] for side, *_ in sides}
    for side, _, module, path, credential in sides:  # warm-up: .pyc written, discarded
        run_once(side, module, path, credential, env)
    started = time.perf_counter()
    for _ in range(runs):
        for side, _, module, path, credential in sides:
            samples[side].append(run_once(side, module, path, credential, env))

    def med(side: str, field: str) -> float:
        return statistics.median(s[field] for s in samples[side])

    rows = []
    for side, label, *_ in sides:
        rows.append(
            [
                label,
                f"{med(side, 'hooks_ms'):.2f}",
                f"{med(side, 'first_request_ms'):.1f}",
                f"{med(side, 'restore_ms'):.1f}",
                ratio(med(side, "restore_ms"), med("baseline", "restore_ms")),
                f"{med(side, 'restore_cpu_ms'):.1f}",
                ratio(med(side, "restore_cpu_ms"), med("baseline", "restore_cpu_ms")),
                f"{med(side, 'init_ms'):.0f}",
            ]
        )
    print_table(
        f"SnapStart-style restore path, median of {runs} fresh interpreters per side ({time.perf_counter() - started:.0f} s)",
        [
            "side",
            "after-restore hooks ms",
            "first request ms",
            "restore → first response ms",
            "vs baseline",
            "restore CPU ms",
            "CPU vs baseline",
            "init skipped by SnapStart ms",
        ],
        rows,
        notes=[
            f"Machine: {machine()}.",
            "restore → first response: the after-restore hooks plus the first request through the handler, "
            "after the module was imported and the before-snapshot hooks ran (the snapshot). init: the import "
            "(app and handler built) that a restore skips.",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
