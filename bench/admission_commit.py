"""Issue 26 (session 14): what the admission's relaxed commit saves on a durable Postgres (migration 0104).

    PYTHONPATH=shared:. .venv/bin/python bench/admission_commit.py [--calls 600] [--block 50]

Every request runs one admitting statement before its tenant transaction, and an admitted request writes (the
account's rate bucket). ``limits_admit`` sets ``synchronous_commit`` off for its own transaction, so that commit does
not wait for the WAL to reach disk. Here the same ``limits_admit`` call runs as served (autocommit, one statement:
relaxed) and forced durable (``SET LOCAL synchronous_commit = on`` after it in the same transaction, one simple query:
one round trip either way), interleaved in blocks, on a cluster of its own started durable (fsync, synchronous commit
and full-page writes on, as the local runtime runs): .local/bench-durable-pg, port $AGENTMATE_DURABLE_BENCH_PG_PORT
(default 26442). Absolute times depend on this machine's disk; the ratio is within one run.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

from common import ROOT, machine, prepare_database, print_table, ratio, seed_tenant, summary

PG_DIR = ROOT / ".local" / "bench-durable-pg"
PG_PORT = int(os.environ.get("AGENTMATE_DURABLE_BENCH_PG_PORT", "26442"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600, help="measured calls per variant")
    parser.add_argument("--block", type=int, default=50)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", "No application metrics")

    from infra import localpg

    started = localpg.start(PG_DIR, PG_PORT, durable=True)
    try:
        return _run(args.calls, args.block)
    finally:
        if started:
            localpg.stop(PG_DIR)


def _run(calls: int, block: int) -> int:
    import psycopg

    db = prepare_database("agentmate_bench_admission", pg_dir=PG_DIR, pg_port=PG_PORT)
    from functions.auth.app import handler as auth_handler

    account_id, _, _ = seed_tenant(auth_handler, ["todos:r"])
    admit = f"SELECT * FROM limits_admit('{account_id}'::uuid, 6000000, 1000000, 0, 30)"
    variants = {
        "relaxed (as served: autocommit, limits_admit sets it off)": admit,
        "durable (SET LOCAL synchronous_commit = on after it)": (
            f"BEGIN; {admit}; SET LOCAL synchronous_commit = on; COMMIT"
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    with psycopg.connect(db.app_url, autocommit=True) as conn:
        settings = conn.execute(
            "SELECT current_setting('fsync'), current_setting('synchronous_commit')"
        ).fetchone()
        for sql in variants.values():  # warm-up
            for _ in range(block):
                conn.execute(sql)  # type: ignore[arg-type]
        done = 0
        while done < calls:
            for name, sql in variants.items():
                for _ in range(block):
                    t0 = time.perf_counter_ns()
                    conn.execute(sql)  # type: ignore[arg-type]
                    times[name].append((time.perf_counter_ns() - t0) / 1e6)
            done += block
    base = summary(times[list(variants)[1]])
    rows = []
    for name in variants:
        s = summary(times[name])
        rows.append([name, s["n"], s["p50"], s["p95"], ratio(s["p50"], base["p50"])])
    print_table(
        "Issue 26: the admitting statement's commit, relaxed vs durable",
        ["variant", "calls", "p50 ms", "p95 ms", "p50 vs durable"],
        rows,
        notes=[
            f"Command: `PYTHONPATH=shared:. .venv/bin/python bench/admission_commit.py --calls {calls} --block {block}`. "
            f"Machine: {machine()}. Cluster: fsync={settings[0]}, synchronous_commit={settings[1]} (server default)."
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
