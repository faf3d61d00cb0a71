"""Issue 25 §4: peak memory of the account export and import jobs for a big account.

    PYTHONPATH=shared:. .venv/bin/python bench/account_archive_rss.py [--notes 20000] [--note-bytes 4096]
        [--code DIR]   # run the jobs with the agentmate package under DIR/shared (e.g. an older checkout)

Seeds one account straight in SQL (``--notes`` notes of ``--note-bytes`` of hex text each, and as many working
items), then runs the export job and the import job of its archive into an empty account, each in a child process
of its own, and prints each child's peak RSS (``ru_maxrss``) beside the archive's size and the rows it holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from common import ROOT, machine, prepare_database

CHILD = """
import sys, resource
from agentmate.core.db import Database
from agentmate.jobs import wakeup
from agentmate.jobs.worker import Worker
import agentmate.portability.jobs
wakeup.set_waker(lambda job_id, delay: None)
db = Database(sys.argv[1], max_size=2)
outcome = Worker(db).run_one(job_id=sys.argv[2]).outcome
print(outcome, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _seed(owner_url: str, notes: int, note_bytes: int) -> str:
    import psycopg

    account = str(uuid.uuid4())
    reps = max(1, note_bytes // 32)
    with psycopg.connect(owner_url) as conn:
        conn.execute("INSERT INTO accounts (id) VALUES (%s)", (account,))
        conn.execute(
            """INSERT INTO notes (account_id, title, content)
            SELECT %(a)s, 'note ' || g, (SELECT string_agg(md5(g::text || '-' || r), '') FROM generate_series(1, %(reps)s) r)
            FROM generate_series(1, %(n)s) g""",
            {"a": account, "reps": reps, "n": notes},
        )
        session = conn.execute(
            "INSERT INTO working_sessions (account_id, title) VALUES (%s, 'big') RETURNING id", (account,)
        ).fetchone()
        assert session is not None
        conn.execute(
            """INSERT INTO working_items (account_id, session_id, seq, item_type, content, idempotency_key,
                content_hash, size_bytes)
            SELECT %(a)s, %(s)s, g, 'draft', repeat(md5(g::text), %(reps)s), 'k' || g, repeat('0', 64), 32 * %(reps)s
            FROM generate_series(1, %(n)s) g""",
            {"a": account, "s": session[0], "reps": reps, "n": notes},
        )
    return account


def _job(app_url: str, account: str, kind: str, table: str, key: str) -> str:
    import psycopg

    transfer = str(uuid.uuid4())
    with psycopg.connect(app_url) as conn:
        conn.execute(
            "SELECT set_config('app.account_id', %s, true)", (account,)
        )  # the tenant, as core.db sets it
        conn.execute(
            f"INSERT INTO {table} (id, account_id, object_key) VALUES (%s, %s, %s)",  # type: ignore[arg-type]
            (transfer, account, key.format(account=account, id=transfer)),
        )
        job = conn.execute(
            "INSERT INTO jobs (account_id, kind, subject_id) VALUES (%s, %s, %s) RETURNING id",
            (account, kind, transfer),
        ).fetchone()
        assert job is not None
        conn.execute(f"UPDATE {table} SET job_id = %s WHERE id = %s", (job[0], transfer))  # type: ignore[arg-type]
    return str(job[0])


def _run_child(code: Path, app_url: str, job_id: str) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{code / 'shared'}:{code}"}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, app_url, job_id], env=env, capture_output=True, text=True, check=True
    )
    outcome, peak_kib = out.stdout.strip().splitlines()[-1].split()
    return outcome, int(peak_kib) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--notes", type=int, default=20000)
    parser.add_argument("--note-bytes", type=int, default=4096)
    parser.add_argument("--code", type=Path, default=ROOT)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="archive-rss-"))
    os.environ["ACCOUNT_ARCHIVE_DIR"] = str(folder)
    bench = prepare_database("archive_rss")
    source = _seed(bench.owner_url, args.notes, args.note_bytes)
    export_job = _job(
        bench.app_url, source, "account_export", "account_exports", "exports/{account}/{id}.zip"
    )
    outcome, export_mb = _run_child(args.code, bench.app_url, export_job)
    archive = next(folder.glob("exports/*/*.zip"))
    target = _seed(bench.owner_url, 0, 32)
    import psycopg

    with psycopg.connect(bench.owner_url) as conn:  # the seed's empty session is not an empty account
        conn.execute("DELETE FROM working_sessions WHERE account_id = %s", (target,))
    import_job = _job(
        bench.app_url, target, "account_import", "account_imports", "imports/{account}/{id}.zip"
    )
    with psycopg.connect(bench.owner_url) as conn:
        row = conn.execute(
            "SELECT object_key FROM account_imports WHERE job_id = %s", (import_job,)
        ).fetchone()
    assert row is not None
    (folder / row[0]).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(archive, folder / row[0])
    import_outcome, import_mb = _run_child(args.code, bench.app_url, import_job)
    print(machine())
    print(f"code: {args.code}")
    print(f"rows: {args.notes} notes + {args.notes} working items of ~{args.note_bytes} B")
    print(f"archive: {archive.stat().st_size / 1e6:.1f} MB")
    print(f"export job: {outcome}, peak RSS {export_mb:.0f} MiB")
    print(f"import job: {import_outcome}, peak RSS {import_mb:.0f} MiB")
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
