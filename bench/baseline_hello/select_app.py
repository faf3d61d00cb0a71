"""Baseline for the HTTP throughput benchmark: plain FastAPI + a psycopg pool running the same tenant-scoped
SELECT as ``GET /api/todos/{id}`` (set app.account_id, select the row), with no auth, no error mapping, no
middleware. Configured by DATABASE_URL and BENCH_ACCOUNT_ID (the tenant whose todo is read)."""

import os
from uuid import UUID

from fastapi import FastAPI, HTTPException
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

COLUMNS = "id, title, description, status, priority, due_date, tags, created_at, updated_at"

pool = ConnectionPool(
    os.environ["DATABASE_URL"],
    min_size=1,
    max_size=int(os.environ.get("DB_POOL_MAX_SIZE", "8")),
    kwargs={"row_factory": dict_row, "prepare_threshold": None},
    open=True,
)
ACCOUNT_ID = os.environ["BENCH_ACCOUNT_ID"]

app = FastAPI()


@app.get("/hello")
def hello() -> dict[str, str]:
    return {"hello": "world"}


@app.get("/todos/{todo_id}")
def get_todo(todo_id: UUID) -> dict:
    with pool.connection() as conn:
        conn.execute("SELECT set_config('app.account_id', %s, true)", (ACCOUNT_ID,))
        row = conn.execute(
            f"SELECT {COLUMNS} FROM todos WHERE account_id = %s AND id = %s", (ACCOUNT_ID, todo_id)
        ).fetchone()
    if row is None:
        raise HTTPException(404)
    return row
