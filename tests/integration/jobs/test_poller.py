"""The local runtime's poller: the same claim code as the Lambda handler, woken by a poke after enqueue, and a
shutdown that hands running jobs back with their attempt refunded."""

from __future__ import annotations

import threading
import uuid

from starlette.testclient import TestClient

from agentmate import jobs
from agentmate.jobs.poller import Poller
from agentmate.jobs.settings import JobSettings


def test_a_poke_after_enqueue_runs_the_job_and_stop_yields_a_running_one(db, make_kind, account, rows):
    # Given a running poller (polling rarely, so only the poke can explain a prompt run)
    done = threading.Event()
    kind = make_kind(lambda ctx: done.set() if ctx.job.payload.get("quick") else _until_shutdown(ctx))
    poller = Poller(
        db,
        settings=JobSettings(wiki_worker_poll_seconds=300, wiki_worker_heartbeat_seconds=0.05),
        concurrency=2,
        only_kinds=[kind.name],
    )
    poller.start()
    try:
        # When a job is enqueued and woken
        quick = _enqueue(db, account.account_id, kind.name, {"quick": True})
        assert jobs.wake(quick.id)
        # Then a poller thread runs it
        assert done.wait(10)
        slow = _enqueue(db, account.account_id, kind.name, {})
        jobs.wake(slow.id)
        assert _started(kind, slow.id)
    finally:
        # When the server stops while a job is still running
        poller.stop()
    # Then that job was handed back, due now, with its attempt refunded
    assert _status(rows, quick.id) == ("succeeded", 1)
    assert _status(rows, slow.id) == ("queued", 0)


def test_the_dev_server_runs_the_poller_for_its_lifetime(make_kind, account, rows):
    from agentmate.core.db import get_database
    from infra.local_app import build_local_app

    ran = threading.Event()
    kind = make_kind(lambda ctx: ran.set())

    async def no_mcp(scope, receive, send) -> None:  # the session's client already runs the one MCP app
        return None

    with TestClient(build_local_app({"/mcp": no_mcp}, job_poller=True)):
        job = _enqueue(get_database(), account.account_id, kind.name, {})
        jobs.wake(job.id)
        assert ran.wait(10)
    assert _status(rows, job.id)[0] == "succeeded"
    assert jobs.wake(uuid.uuid4()) is False  # the poller's waker is gone with the server


def _until_shutdown(ctx: jobs.RunContext) -> None:
    assert ctx.shutdown.wait(10)
    raise jobs.Yield("server stopping")


def _started(kind, job_id) -> bool:
    for _ in range(500):
        if any(j.id == job_id for j in kind.runs):
            return True
        threading.Event().wait(0.02)
    return False


def _enqueue(db, account_id: str, kind: str, payload: dict) -> jobs.Job:
    with db.tenant(account_id) as conn:
        return jobs.enqueue(conn, account_id=uuid.UUID(account_id), kind=kind, payload=payload)


def _status(rows, job_id) -> tuple[str, int]:
    row = rows.get(job_id)
    return row["status"], row["attempts"]
