"""Issue 25 §1: what the stored-volume quota checks add to the store paths. The check is one statement in the
creating transaction (``core.limits.repository.count_up_to``); for memories and working items it sums the
account's trigger-kept counters (migration 0098), so its cost should not grow with what the account holds.
Measured at several stored volumes:

- the check alone (memories and working items read the counters of migration 0098; the cap is the default
  quota), inside a tenant transaction;
- ``POST /api/memory/entries`` through the memory Lambda handler with the quota on (default) and off
  (``LIMIT_MAX_MEMORIES=0``), interleaved in blocks.

    .venv/bin/python bench/quota_cost.py [--calls 300] [--sizes 0,10000,100000]

Postgres: the bench cluster of ``bench/common.py`` (.local/bench-pg, $AGENTMATE_BENCH_PG_PORT).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
import warnings
from collections.abc import Callable

from common import handler_json, machine, prepare_database, print_table, ratio, seed_tenant, summary


def _fill(owner_url: str, account_id: str, table: str, total: int) -> None:
    """Raw rows up to ``total`` for the account (only the counts read them)."""
    import psycopg

    with psycopg.connect(owner_url) as conn:
        have = conn.execute(f"SELECT count(*) FROM {table} WHERE account_id = %s", (account_id,)).fetchone()
        missing = total - (have[0] if have else 0)
        if missing <= 0:
            return
        if table == "memory_entries":
            conn.execute(
                """INSERT INTO memory_entries (account_id, memory_type, content, content_hash, status)
                   SELECT %s, 'semantic', 'bench ' || g || ' ' || gen_random_uuid(), md5(g::text), 'archived'
                   FROM generate_series(1, %s) g""",
                (account_id, missing),
            )
        else:
            session = uuid.uuid4()
            conn.execute(
                "INSERT INTO working_sessions (id, account_id) VALUES (%s, %s)", (session, account_id)
            )
            conn.execute(
                """INSERT INTO working_items (account_id, session_id, seq, item_type, role, content,
                                              idempotency_key, content_hash, size_bytes)
                   SELECT %s, %s, g, 'message', 'user', 'x', 'k' || g, md5(g::text) || md5(g::text), 1
                   FROM generate_series(1, %s) g""",
                (account_id, session, missing),
            )
        conn.execute("ANALYZE memory_entries")
        conn.execute("ANALYZE working_items")


def _timed(fn: Callable[[], None], calls: int) -> list[float]:
    out = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300, help="measured calls per variant and size")
    parser.add_argument("--sizes", default="0,10000,100000", help="stored rows per table to measure at")
    args = parser.parse_args(argv)

    db = prepare_database("agentmate_bench_quotas")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    os.environ["LIMIT_REQUESTS_PER_MINUTE"] = "0"  # the bench measures the quotas, not the rate
    warnings.filterwarnings("ignore", "No application metrics")

    from agentmate.core.db import get_database
    from agentmate.core.limits import repository as repo
    from agentmate.core.limits.settings import get_limit_settings
    from functions.auth.app import handler as auth_handler
    from functions.memory.app import handler as memory_handler
    from tests.apigw import LambdaContext, http_event

    account, _, key = seed_tenant(auth_handler, ["memory:rw"])
    account_id = uuid.UUID(account)
    settings = get_limit_settings()
    database = get_database()
    stored = iter(range(10**9))

    def check(quota: str, cap: int) -> Callable[[], None]:
        def run() -> None:
            with database.tenant(account_id) as conn:
                repo.count_up_to(conn, quota, cap, account_id)

        return run

    def store() -> None:
        body = {
            "memory_type": "semantic",
            "content": f"quota bench {next(stored)}",
            "evidence": [{"source_type": "bench", "source_id": "1"}],
        }
        event = http_event("POST", "/api/memory/entries", headers={"X-Api-Key": key}, json_body=body)
        raw = memory_handler(event, LambdaContext())
        if raw["statusCode"] != 201:
            raise RuntimeError(raw)

    def quota(value: str) -> None:
        os.environ["LIMIT_MAX_MEMORIES"] = value
        get_limit_settings.cache_clear()

    handler_json(memory_handler, "GET", "/api/memory/entries", headers={"X-Api-Key": key})  # warm
    rows = []
    for size in (int(s) for s in args.sizes.split(",")):
        # Room left under the quota for the stores this size measures (a full account would refuse them)
        _fill(
            db.owner_url, account, "memory_entries", min(size, settings.max_memories - 3 * args.calls - 100)
        )
        _fill(db.owner_url, account, "working_items", size)
        empty = check("memories", 1)  # a transaction with the cheapest count: the baseline
        for fn in (empty, check("memories", settings.max_memories), store):
            _timed(fn, 20)  # warm-up
        base = summary(_timed(empty, args.calls))
        for name, fn in (
            ("check: memories", check("memories", settings.max_memories)),
            ("check: working_items", check("working_items", settings.max_working_items)),
        ):
            s = summary(_timed(fn, args.calls))
            rows.append([size, name, s["p50"], s["p95"], round(s["p50"] - base["p50"], 3)])
        on: list[float] = []
        off: list[float] = []
        for _ in range(max(args.calls // 25, 1)):
            quota("0")
            off += _timed(store, 25)
            quota(str(settings.max_memories))
            on += _timed(store, 25)
        s_off, s_on = summary(off), summary(on)
        rows.append([size, "store, quota off", s_off["p50"], s_off["p95"], ""])
        rows.append([size, "store, quota on", s_on["p50"], s_on["p95"], ratio(s_on["p50"], s_off["p50"])])
    print_table(
        "Stored-volume quota checks: added cost",
        ["stored rows", "variant", "p50 ms", "p95 ms", "added p50 ms / vs off"],
        rows,
        [f"{machine()}; load average {os.getloadavg()[0]:.1f}"],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
