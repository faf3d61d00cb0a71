"""Baseline for the cold-start benchmark: the smallest honest Lambda of this stack (FastAPI + Mangum, psycopg
imported as every real function needs it), with one route. bench/cold_start.py compares each route group's
import + app build against this one."""

import psycopg  # noqa: F401  (a real function always talks to Postgres)
from fastapi import FastAPI
from mangum import Mangum

app = FastAPI()


@app.get("/hello")
def hello() -> dict[str, str]:
    return {"hello": "world"}


handler = Mangum(app, lifespan="off")
