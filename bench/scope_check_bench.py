"""What the new-scope check (issue 10: a write that opens a near twin of an existing scope is warned) costs an
event append, at the statement level, on the app role under row-level security.

Three variants of the same ``INSERT INTO memory_events ... RETURNING`` run interleaved on one connection, each in
its own transaction with the tenant set, as the service runs them (no server-side prepared statements):

- baseline: ``RETURNING`` the event columns only (before the check);
- inline:   plus the two ``NOT EXISTS`` probes written into the statement (planned on every execution);
- function: plus ``memory_scope_is_new(...)`` (migration 0083, PL/pgSQL: its probes are planned once per
  connection) — what the service runs.

    PYTHONPATH=shared .venv/bin/python bench/scope_check_bench.py --inserts 3000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "shared"), str(REPO)]

from bench.common import prepare_database  # noqa: E402

COLUMNS = "id, scope_type, scope_key, session_id, event_type, payload, occurred_at, created_at"
INSERT = (
    """INSERT INTO memory_events (account_id, user_id, scope_type, scope_key, session_id, event_type, payload,
                                       idempotency_key, content_hash)
            VALUES (%(a)s, %(a)s, 'repository', 'acme/app', 's', 'note', '{"n": 1}', %(key)s, %(key)s)
            RETURNING """
    + COLUMNS
)
VARIANTS = {
    "baseline": INSERT,
    "inline": INSERT
    + """, (NOT EXISTS (SELECT 1 FROM memory_events WHERE account_id = %(a)s
                             AND scope_type = 'repository' AND scope_key = 'acme/app')
                         AND NOT EXISTS (SELECT 1 FROM memory_entries WHERE account_id = %(a)s
                             AND scope_type = 'repository' AND scope_key = 'acme/app')) AS new_scope""",
    "function": INSERT + ", memory_scope_is_new(%(a)s, 'repository', 'acme/app') AS new_scope",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inserts", type=int, default=3000, help="measured inserts per variant")
    args = parser.parse_args()

    import psycopg

    db = prepare_database("bench_scope_check")
    with psycopg.connect(db.app_url, autocommit=True, prepare_threshold=None) as conn:
        account = conn.execute(
            "SELECT account_id FROM auth_register(%s, 'x')", (f"bench-{uuid.uuid4().hex}@example.com",)
        ).fetchone()[0]
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for i in range(args.inserts + 100):  # the first 100 rounds warm up
            for name, sql in VARIANTS.items():
                started = time.perf_counter()
                with conn.transaction():
                    conn.execute("SELECT set_config('app.account_id', %s, true)", (str(account),))
                    conn.execute(sql, {"a": account, "key": f"{name}-{i}"}).fetchone()
                if i >= 100:
                    times[name].append((time.perf_counter() - started) * 1000)
    base = statistics.median(times["baseline"])
    print(f"{args.inserts} inserts per variant, interleaved (ms per transaction: tenant setting + insert)")
    print("| variant | p50 ms | p95 ms | p50 vs baseline |")
    print("|---|---:|---:|---:|")
    for name, values in times.items():
        values.sort()
        p50, p95 = statistics.median(values), values[int(len(values) * 0.95)]
        print(f"| {name} | {p50:.3f} | {p95:.3f} | {p50 / base:.2f}x |")


if __name__ == "__main__":
    main()
