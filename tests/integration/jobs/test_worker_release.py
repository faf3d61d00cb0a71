"""No outcome leaves a job ``running`` past its attempt (issue 20): what a runner reports (a provider's Retry-After,
token counts, error text, a result) is clamped and cleaned before it is written, and when writing the outcome
fails all the same, the worker releases the job with a last-resort minimal update in a fresh transaction
(requeued after the backoff, or failed). Only a database that cannot be written at all leaves the lease to run
out, and the queue's stalled view then shows the job."""

from __future__ import annotations

import math
import os
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from agentmate import jobs
from agentmate.core.db import Database
from agentmate.jobs.worker import MAX_USAGE_PER_WRITE, Worker
from tests.fakes.tcp_proxy import CuttableProxy

CAP = 600  # the default backoff cap (WIKI_WORKER_MAX_RETRY_BACKOFF_SECONDS)


def _due_in(row) -> float:
    return row["due_in"].total_seconds()


@pytest.mark.parametrize("retry_after", [math.inf, -math.inf, math.nan, 1e300, 10**30, -5, "soon", True])
def test_a_hostile_retry_after_is_clamped_to_the_backoff_cap_and_the_job_is_requeued(
    db, settings, make_kind, enqueue, account, rows, wakes, retry_after
):
    def run(ctx: jobs.RunContext) -> None:
        raise jobs.Retryable("HTTP 429", retry_after=retry_after)

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    assert report.outcome == "retry"
    row = rows.get(job.id)
    assert (row["status"], row["lease_owner"], row["last_error"]) == ("queued", None, "HTTP 429")
    assert report.retry_in_seconds is not None and 30 <= report.retry_in_seconds <= CAP
    assert _due_in(row) <= CAP
    assert kind.changes == [("running", 1), ("queued", 1)]


def test_huge_and_negative_usage_is_clamped_before_it_is_stored(
    db, settings, make_kind, enqueue, account, rows
):
    def run(ctx: jobs.RunContext) -> dict:
        ctx.add_usage(input_tokens=10**30, output_tokens=-5, cost_micros=10**40)
        return {"ok": True}

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "succeeded"
    row = rows.get(job.id)
    assert row["status"] == "succeeded"
    assert (row["input_tokens"], row["output_tokens"], row["cost_micros"]) == (
        MAX_USAGE_PER_WRITE,
        0,
        MAX_USAGE_PER_WRITE,
    )


def test_running_totals_saturate_instead_of_overflowing_the_bigint_columns(
    db, settings, make_kind, enqueue, account, rows
):
    def run(ctx: jobs.RunContext) -> None:
        ctx.add_usage(input_tokens=10**15, output_tokens=1, cost_micros=1)
        raise jobs.Retryable("HTTP 503")

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    rows.update(job.id, "input_tokens = 9223372036854775000")  # as if earlier attempts had spent nearly all
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "retry"
    row = rows.get(job.id)
    assert (row["status"], row["input_tokens"], row["output_tokens"]) == ("queued", 2**63 - 1, 1)


def test_an_error_text_with_nul_characters_is_stored_without_them(
    db, settings, make_kind, enqueue, account, rows
):
    def run(ctx: jobs.RunContext) -> None:
        raise jobs.Retryable("HTTP 500: \x00\x00boom" + "x" * 5000)

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "retry"
    row = rows.get(job.id)
    assert row["status"] == "queued" and row["last_error"].startswith("HTTP 500: boom")
    assert len(row["last_error"]) <= 2000


def test_a_result_postgres_refuses_fails_the_job_instead_of_leaving_it_running(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a runner whose result cannot be stored (jsonb takes no NUL character)
    kind = make_kind(lambda ctx: ctx.add_usage(input_tokens=7) or {"text": "a\x00b"})
    job = enqueue(account.account_id, kind.name)
    # When the worker records its success
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then the write failed, and the last resort failed the job (an unrecorded success is an unknown error)
    assert report.outcome == "released"
    row = rows.get(job.id)
    assert (row["status"], row["lease_owner"], row["result"]) == ("failed", None, None)
    assert row["last_error"].startswith("the outcome of attempt 1 could not be recorded (")
    assert row["finished_at"] is not None
    # And the owner heard of the failure, and the attempt's tokens were still counted
    assert kind.changes[-1] == ("failed", 1)
    assert row["input_tokens"] == 7


@pytest.mark.parametrize(
    ("behaviour", "status"),
    [("retry", "queued"), ("yield", "queued"), ("permanent", "failed"), ("unknown", "failed")],
)
def test_an_owner_hook_failing_on_the_outcome_still_releases_the_job(
    db, settings, make_kind, enqueue, account, rows, wakes, behaviour, status
):
    # Given a kind whose owner hook (on_change) breaks on every transition after the claim
    def run(ctx: jobs.RunContext) -> None:
        raise {
            "retry": jobs.Retryable("HTTP 503"),
            "yield": jobs.Yield("stopping"),
            "permanent": jobs.Permanent("HTTP 400"),
            "unknown": KeyError("internal"),
        }[behaviour]

    kind = make_kind(run)
    original = kind.on_change

    def on_change(conn, job: jobs.Job) -> None:
        original(conn, job)
        if job.status != "running":
            raise RuntimeError("the owner's table is broken")

    jobs.register(kind.name, kind.runner, timeout_seconds=60, on_change=on_change)
    job = enqueue(account.account_id, kind.name, max_attempts=3)
    # When the attempt ends
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then the job is released all the same (without the hook): not running, not leased, saying why
    assert report.outcome == "released"
    row = rows.get(job.id)
    assert (row["status"], row["lease_owner"], row["attempts"]) == (status, None, 1)
    assert "could not be recorded (RuntimeError)" in row["last_error"]
    if status == "queued":
        assert 0 < _due_in(row) <= 30  # the first backoff
        assert wakes.sent == [(job.id, 31)]
    # And the hook was tried with the outcome, then with the release, then skipped
    assert [s for s, _ in kind.changes] == ["running", status, status]


def test_the_last_attempt_s_unrecordable_retry_fails_the_job(db, settings, make_kind, enqueue, account, rows):
    def run(ctx: jobs.RunContext) -> None:
        raise jobs.Retryable("HTTP 503")

    kind = make_kind(run)

    def on_change(conn, job: jobs.Job) -> None:
        if job.status == "failed" and job.last_error and job.last_error.startswith("gave up"):
            raise RuntimeError("broken")

    jobs.register(kind.name, kind.runner, timeout_seconds=60, on_change=on_change)
    job = enqueue(account.account_id, kind.name, max_attempts=1)
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "released"
    row = rows.get(job.id)
    assert (row["status"], row["lease_owner"]) == ("failed", None)


def test_when_the_database_is_gone_the_lease_runs_out_and_the_stalled_view_shows_the_job(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a worker reaching Postgres through a link that breaks while its runner works
    parts = urlsplit(os.environ["DATABASE_URL"])
    with CuttableProxy(parts.port or 5432) as proxy:
        cut_db = Database(
            urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}")),
            max_size=2,
            connect_timeout_s=0.5,
        )

        def run(ctx: jobs.RunContext) -> None:
            proxy.cut()
            raise jobs.Retryable("HTTP 503")

        kind = make_kind(run)
        job = enqueue(account.account_id, kind.name)
        # When the attempt ends and neither the outcome nor the last resort can be written
        with pytest.raises(Exception) as caught:
            Worker(cut_db, settings=settings).run_one(job_id=job.id)
        cut_db.close()
    # Then the error surfaces (SQS redelivers the wake-up), and the job is still leased by the dead attempt
    assert "jobs" not in type(caught.value).__module__
    assert rows.get(job.id)["status"] == "running"
    stats = jobs.queue_stats(db, uuid.UUID(account.account_id))
    assert (stats.running, stats.stalled) == (1, 0)
    # When its lease runs out, the queue's stalled view shows it, and another worker takes it over
    rows.expire_lease(job.id)
    stats = jobs.queue_stats(db, uuid.UUID(account.account_id))
    assert (stats.running, stats.stalled) == (0, 1)
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "retry"
    assert rows.get(job.id)["status"] == "queued"
