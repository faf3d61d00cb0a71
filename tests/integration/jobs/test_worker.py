"""The worker against a real Postgres: claim, heartbeat, outcome, retry classification, backoff, yield/refund,
and the tenant boundary a runner works inside (prior-art §4.9, docs/decisions.md "Job queue")."""

from __future__ import annotations

import math
import threading
import uuid

import psycopg
import pytest

from agentmate import jobs
from agentmate.core.db import Database
from agentmate.jobs.settings import JobSettings
from agentmate.jobs.worker import ConfigurationError, Worker, check_fits, sweep


def _wait(event: threading.Event) -> None:
    assert event.wait(10), "timed out waiting for the other thread"


def test_a_job_runs_once_and_its_result_usage_and_status_changes_are_recorded(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a kind whose runner spends tokens and returns a result
    def run(ctx: jobs.RunContext) -> dict:
        ctx.add_usage(input_tokens=100, output_tokens=40, cost_micros=7)
        return {"pages": 3}

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name, payload={"source": "s1"})
    assert (job.status, job.attempts) == ("queued", 0)
    # When a worker runs it
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then it ran once and succeeded, with the result, the usage and one claimed attempt
    assert report.outcome == "succeeded"
    assert [j.id for j in kind.runs] == [job.id]
    assert kind.runs[0].payload == {"source": "s1"}
    row = rows.get(job.id)
    assert (row["status"], row["attempts"], row["result"]) == ("succeeded", 1, {"pages": 3})
    assert (row["input_tokens"], row["output_tokens"], row["cost_micros"]) == (100, 40, 7)
    assert row["lease_owner"] is None and row["finished_at"] is not None
    # And the owning domain saw each change inside the transaction that made it
    assert kind.changes == [("running", 1), ("succeeded", 1)]
    # And a finished job is not claimable again
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "not_claimed"
    assert len(kind.runs) == 1


def test_two_workers_racing_for_one_job_run_it_exactly_once(db, settings, make_kind, enqueue, account):
    # Given a job whose runner holds on until the second worker has tried
    kind = make_kind(lambda ctx: _wait(kind.release))
    job = enqueue(account.account_id, kind.name)
    reports: list[str] = []
    first = threading.Thread(
        target=lambda: reports.append(Worker(db, settings=settings).run_one(job_id=job.id).outcome)
    )
    # When two workers claim it at the same time (the second while the first is running it)
    first.start()
    _wait(kind.started)
    second = Worker(db, settings=settings).run_one(job_id=job.id)
    also_any = Worker(
        db, settings=settings, only_kinds=[kind.name]
    ).run_one()  # one looking for any job of it
    kind.release.set()
    first.join(10)
    # Then exactly one of them ran it
    assert second.outcome == "not_claimed" and also_any.outcome == "not_claimed"
    assert reports == ["succeeded"]
    assert len(kind.runs) == 1


def test_a_killed_worker_s_job_is_finished_by_another_after_its_lease_expires(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a worker that claimed a job and then stopped making progress (killed, partitioned)
    def run(ctx: jobs.RunContext) -> dict:
        if len(kind.runs) == 1:
            _wait(kind.release)  # the "dead" first worker
            return {"by": "first"}
        return {"by": "second"}

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    dead = Worker(db, settings=JobSettings(wiki_worker_heartbeat_seconds=30))  # no heartbeat within the test
    first: list[str] = []
    thread = threading.Thread(target=lambda: first.append(dead.run_one(job_id=job.id).outcome))
    thread.start()
    _wait(kind.started)
    # When its lease expires, another worker claims and finishes the job
    rows.expire_lease(job.id)
    second = Worker(db, settings=settings).run_one(job_id=job.id)
    assert second.outcome == "succeeded"
    # And when the first worker comes back, its outcome is discarded
    kind.release.set()
    thread.join(10)
    assert first == ["lease_lost"]
    row = rows.get(job.id)
    # Then the second worker's result stands, and both claims were counted
    assert (row["status"], row["result"], row["attempts"]) == ("succeeded", {"by": "second"}, 2)


def test_the_heartbeat_extends_the_lease_while_the_runner_works(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a runner that watches its own row until the heartbeat has moved the lease on twice
    seen: list = []

    def run(ctx: jobs.RunContext) -> None:
        for _ in range(400):
            with ctx.tenant() as conn:
                row = conn.execute(
                    "SELECT lease_expires_at, heartbeat_at FROM jobs WHERE id = %s", (ctx.job.id,)
                ).fetchone()
            if not seen or row["heartbeat_at"] != seen[-1]["heartbeat_at"]:
                seen.append(row)
            if len(seen) >= 3:
                return
            ctx.lease_lost.wait(0.02)
        raise AssertionError("the heartbeat never moved the lease")

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    # When it runs
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then each heartbeat pushed the expiry further out, and the run still succeeded
    assert report.outcome == "succeeded"
    expiries = [r["lease_expires_at"] for r in seen]
    assert expiries == sorted(expiries) and expiries[0] < expiries[-1]
    assert expiries[0] > kind.runs[0].heartbeat_at  # a lease of 2 x the kind's timeout, not zero


@pytest.mark.parametrize("takeover", ["another_owner", "cancelled"])
def test_the_heartbeat_sets_lease_lost_when_the_job_is_no_longer_this_worker_s(
    db, settings, make_kind, enqueue, account, rows, takeover
):
    # Given a runner that works until told its lease is lost
    def run(ctx: jobs.RunContext) -> dict:
        ctx.add_usage(output_tokens=5)
        assert ctx.lease_lost.wait(10)
        return {"written": True}

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    done: list = []
    thread = threading.Thread(
        target=lambda: done.append(Worker(db, settings=settings).run_one(job_id=job.id))
    )
    thread.start()
    _wait(kind.started)
    # When another worker takes the row over (or the tenant cancels the job)
    if takeover == "another_owner":
        rows.update(job.id, "lease_owner = 'someone-else', lease_expires_at = now() + interval '1 hour'")
    else:
        with db.tenant(account.account_id) as conn:
            assert jobs.cancel(conn, account_id=uuid.UUID(account.account_id), job_id=job.id) is not None
    thread.join(10)
    # Then the runner was stopped and its outcome discarded, but what it spent is still counted
    assert done[0].outcome == "lease_lost"
    row = rows.get(job.id)
    assert row["result"] is None and row["output_tokens"] == 5
    assert row["status"] == ("running" if takeover == "another_owner" else "cancelled")


def test_retryable_failures_back_off_exponentially_then_give_up(
    db, settings, make_kind, enqueue, account, rows, wakes
):
    # Given a runner that always fails in a retryable way
    def run(ctx: jobs.RunContext) -> None:
        ctx.add_usage(input_tokens=10)
        raise jobs.Retryable("HTTP 503 from the provider")

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name, max_attempts=3)
    worker = Worker(db, settings=settings)
    delays = []
    for attempt in (1, 2):
        # When an attempt fails
        report = worker.run_one(job_id=job.id)
        # Then the job is queued again after 30 s x 2^(attempt-1), with a delayed wake-up for that moment
        assert report.outcome == "retry"
        row = rows.get(job.id)
        assert (row["status"], row["attempts"], row["last_error"]) == (
            "queued",
            attempt,
            "HTTP 503 from the provider",
        )
        assert row["lease_owner"] is None
        expected = 30 * 2 ** (attempt - 1)
        assert expected - 5 < row["due_in"].total_seconds() <= expected
        assert row["woken_in"].total_seconds() > expected - 5  # the sweep leaves it to the delayed message
        delays.append(wakes.sent[-1])
        # And it is not claimable while backing off
        assert worker.run_one(job_id=job.id).outcome == "not_claimed"
        rows.backoff_over(job.id)
    assert delays == [(job.id, 31), (job.id, 61)]
    # When the last attempt fails too
    report = worker.run_one(job_id=job.id)
    # Then the job failed, saying why, and every attempt's usage was accumulated
    assert report.outcome == "failed"
    row = rows.get(job.id)
    assert row["status"] == "failed" and row["attempts"] == 3
    assert row["last_error"] == "gave up after 3 attempts: HTTP 503 from the provider"
    assert row["input_tokens"] == 30
    assert kind.changes[-1] == ("failed", 3)


def test_the_backoff_is_30s_doubling_capped_at_600s():
    s = JobSettings()
    assert [s.backoff_seconds(n) for n in range(1, 8)] == [30, 60, 120, 240, 480, 600, 600]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (jobs.Permanent("HTTP 400: model not found"), "HTTP 400: model not found"),
        (ValueError("secret internals"), "unexpected error (ValueError)"),
    ],
)
def test_permanent_and_unknown_errors_fail_at_once_without_leaking_internals(
    db, settings, make_kind, enqueue, account, rows, error, message
):
    def run(ctx: jobs.RunContext) -> None:
        raise error

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name, max_attempts=3)
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "failed"
    row = rows.get(job.id)
    assert (row["status"], row["attempts"], row["last_error"]) == ("failed", 1, message)


def test_a_retry_later_than_an_sqs_delay_is_left_to_the_sweep(
    db, settings, make_kind, enqueue, account, rows, wakes
):
    # Given a runner told by the provider to come back in 20 minutes
    def run(ctx: jobs.RunContext) -> None:
        raise jobs.Retryable("HTTP 429", retry_after=1200)

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    rows.wake_lost(job.id)
    # When the attempt fails on a deployment whose backoff cap allows that long (a Retry-After is clamped to it)
    settings = settings.model_copy(update={"wiki_worker_max_retry_backoff_seconds": 3600})
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then no delayed message was sent (SQS delays stop at 15 minutes) and the sweep skips it while it backs off
    assert report.outcome == "retry" and report.retry_in_seconds == 1200
    assert wakes.sent == []
    assert job.id not in _swept(db, settings)
    # And once the backoff is over, the sweep wakes it
    rows.backoff_over(job.id)
    assert job.id in _swept(db, settings)


def _swept(db: Database, settings: JobSettings) -> list[uuid.UUID]:
    sent: list[uuid.UUID] = []
    sweep(db, settings=settings, wake=lambda job_id, delay: sent.append(job_id) or True)
    return sent


def test_the_sweep_re_sends_lost_wake_ups_and_expired_leases_once_per_grace_period(
    db, settings, make_kind, enqueue, account, rows
):
    kind = make_kind()
    lost = enqueue(account.account_id, kind.name)
    fresh = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    stalled = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    rows.wake_lost(lost.id)
    rows.update(
        stalled.id,
        "status = 'running', attempts = 1, lease_owner = 'dead', "
        "lease_expires_at = now() - interval '1 second', woken_at = now() - interval '1 hour'",
    )
    # When the sweep runs
    sent = _swept(db, settings)
    # Then the job whose wake-up was lost and the one whose worker died are woken; the fresh one is left alone
    assert lost.id in sent and stalled.id in sent and fresh.id not in sent
    # And a second sweep within the grace period does not send them again
    again = _swept(db, settings)
    assert lost.id not in again and stalled.id not in again


def test_a_job_whose_attempts_are_used_up_is_failed_at_claim(db, settings, make_kind, enqueue, account, rows):
    # Given a job whose every worker died (attempt counts claims)
    kind = make_kind()
    job = enqueue(account.account_id, kind.name, max_attempts=2)
    rows.update(
        job.id,
        "status = 'running', attempts = 2, last_error = 'HTTP 502', lease_owner = 'dead', "
        "lease_expires_at = now() - interval '1 second'",
    )
    # When a worker claims it
    report = Worker(db, settings=settings).run_one(job_id=job.id)
    # Then it is retired instead of run again, and the owning domain is told
    assert report.outcome == "gave_up" and kind.runs == []
    row = rows.get(job.id)
    assert (row["status"], row["last_error"]) == ("failed", "gave up after 2 attempts: last error: HTTP 502")
    assert kind.changes == [("failed", 2)]


def test_a_job_the_remaining_time_cannot_cover_is_yielded_with_its_attempt_refunded(
    db, settings, make_kind, enqueue, account, rows, wakes
):
    # Given an invocation with 100 s left and a kind that may take 780 s (+ the 60 s finish margin)
    kind = make_kind(timeout_seconds=780)
    job = enqueue(account.account_id, kind.name)
    # When the worker claims it
    report = Worker(db, settings=settings).run_one(job_id=job.id, remaining_seconds=lambda: 100.0)
    # Then it did not start the run: the job is back, due now, attempt refunded, and woken again at once
    assert report.outcome == "yielded" and kind.runs == []
    row = rows.get(job.id)
    assert (row["status"], row["attempts"], row["lease_owner"]) == ("queued", 0, None)
    assert row["due_in"].total_seconds() <= 0
    assert wakes.sent == [(job.id, 0)]
    assert kind.changes == [("running", 1), ("queued", 0)]
    # And a worker with enough time runs it
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "succeeded"
    assert rows.get(job.id)["attempts"] == 1


def test_shutdown_yields_a_running_job_and_refunds_its_attempt(
    db, settings, make_kind, enqueue, account, rows, wakes
):
    # Given a runner that stops when the process shuts down
    def run(ctx: jobs.RunContext) -> None:
        assert ctx.shutdown.wait(10)
        ctx.add_usage(input_tokens=3)
        raise jobs.Yield("shutting down")

    kind = make_kind(run)
    job = enqueue(account.account_id, kind.name)
    worker = Worker(db, settings=settings)
    done: list = []
    thread = threading.Thread(target=lambda: done.append(worker.run_one(job_id=job.id)))
    thread.start()
    _wait(kind.started)
    # When the host shuts down
    worker.shutdown.set()
    thread.join(10)
    # Then the job is back in the queue, due now, with the attempt refunded and the usage kept
    assert done[0].outcome == "yielded"
    row = rows.get(job.id)
    assert (row["status"], row["attempts"], row["input_tokens"]) == ("queued", 0, 3)
    assert wakes.sent == [(job.id, 0)]


def test_finish_commits_the_runner_s_writes_with_the_success_and_nothing_when_the_lease_is_gone(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a runner that writes its result inside the lease-guarded outcome transaction
    def run(ctx: jobs.RunContext) -> None:
        if ctx.job.payload.get("steal"):
            rows.update(ctx.job.id, "lease_owner = 'thief'")
        with ctx.finish({"n": 1}) as conn:
            conn.execute("UPDATE jobs SET payload = '{\"wrote\": true}' WHERE id = %s", (ctx.job.id,))

    kind = make_kind(run)
    kept = enqueue(account.account_id, kind.name)
    stolen = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4(), payload={"steal": True})
    worker = Worker(db, settings=settings)
    # When both run
    assert worker.run_one(job_id=kept.id).outcome == "succeeded"
    assert worker.run_one(job_id=stolen.id).outcome == "lease_lost"
    # Then the first committed its write with its success; the second wrote nothing
    assert (rows.get(kept.id)["status"], rows.get(kept.id)["payload"]) == ("succeeded", {"wrote": True})
    assert (rows.get(stolen.id)["status"], rows.get(stolen.id)["payload"]) == ("running", {"steal": True})


def test_a_runner_works_inside_its_job_s_account_only(
    db, settings, make_kind, enqueue, account, other_account, rows
):
    # Given jobs of two accounts
    seen: dict = {}

    def run(ctx: jobs.RunContext) -> None:
        with ctx.tenant() as conn:
            seen["jobs"] = {r["account_id"] for r in conn.execute("SELECT account_id FROM jobs").fetchall()}
            seen["updated"] = conn.execute(
                "UPDATE jobs SET last_error = 'x' WHERE id = %s", (seen["foreign"],)
            ).rowcount
            with pytest.raises(psycopg.errors.InsufficientPrivilege), conn.transaction():
                conn.execute(
                    "INSERT INTO jobs (account_id, kind) VALUES (%s, 'test_x')", (other_account.account_id,)
                )

    kind = make_kind(run)
    foreign = enqueue(other_account.account_id, kind.name, subject_id=uuid.uuid4())
    seen["foreign"] = foreign.id
    job = enqueue(account.account_id, kind.name)
    # When a worker (which claims across accounts) runs the first account's job
    assert Worker(db, settings=settings).run_one(job_id=job.id).outcome == "succeeded"
    # Then inside the runner only that account's rows exist: the other's can be neither seen, changed nor added to
    assert seen["jobs"] == {uuid.UUID(account.account_id)}
    assert seen["updated"] == 0
    assert rows.get(foreign.id)["last_error"] is None


def test_the_claim_functions_are_the_only_cross_account_access(db, enqueue, make_kind, account):
    # A transaction without a tenant sees no jobs at all: only jobs_claim / jobs_due_for_wakeup reach across
    kind = make_kind()
    enqueue(account.account_id, kind.name)
    with db.transaction() as conn:
        assert conn.execute("SELECT count(*) AS n FROM jobs").fetchone()["n"] == 0


def test_an_unfinished_job_of_the_same_kind_and_subject_is_handed_back_instead_of_a_second(
    enqueue, make_kind, account
):
    kind = make_kind()
    subject = uuid.uuid4()
    first = enqueue(account.account_id, kind.name, subject_id=subject)
    assert enqueue(account.account_id, kind.name, subject_id=subject).id == first.id
    assert enqueue(account.account_id, kind.name, subject_id=uuid.uuid4()).id != first.id


def test_a_worker_refuses_a_pool_without_room_for_the_heartbeat():
    with pytest.raises(ConfigurationError, match="at least 2"):
        Worker(Database("postgresql://nobody@127.0.0.1:1/none", max_size=1))


def test_a_kind_whose_timeout_cannot_fit_the_function_is_refused_at_start(make_kind):
    name = make_kind(timeout_seconds=900).name
    kind = jobs.kinds()[name]
    with pytest.raises(
        ConfigurationError,
        match=r"timeout 900 s plus JOBS_FINISH_MARGIN_SECONDS=60 s does not fit "
        r"the worker function's timeout of 900 s",
    ):
        check_fits(900, JobSettings(), only=[kind])


def test_780_seconds_fit_a_900_second_function(make_kind):
    name = make_kind(timeout_seconds=780).name
    kind = jobs.kinds()[name]
    check_fits(900, JobSettings(), only=[kind])
    assert math.isclose(JobSettings().lease_seconds(780), 1560)


def test_a_job_of_a_kind_nobody_runs_is_retired_with_a_reason_instead_of_re_sent_forever(
    db, settings, make_kind, enqueue, account, rows
):
    # Given a job of a kind that no worker here registered (a typo, a removed kind, a newer API than the workers)
    known = make_kind()
    orphan = enqueue(account.account_id, f"gone_{uuid.uuid4().hex[:8]}")
    known_job = enqueue(account.account_id, known.name)
    rows.wake_lost(orphan.id)
    rows.wake_lost(known_job.id)
    # When the sweep runs while the orphan is still young (a rolling deploy may be bringing its worker)
    sent = _swept(db, settings)
    # Then its wake-up is not re-sent (nobody here could claim it) and it keeps waiting; the known kind is woken
    assert orphan.id not in sent and known_job.id in sent
    assert rows.get(orphan.id)["status"] == "queued"
    # And a wake-up for it is acknowledged without a claim
    assert Worker(db, settings=settings).run_one(job_id=orphan.id).outcome == "not_claimed"
    # When it has waited longer than JOBS_UNREGISTERED_AFTER_SECONDS
    rows.update(orphan.id, "queued_at = now() - interval '16 minutes'")
    rows.update(known_job.id, "queued_at = now() - interval '16 minutes'")
    _swept(db, settings)
    # Then the sweep fails it permanently, naming the kind, and leaves jobs of registered kinds alone
    row = rows.get(orphan.id)
    assert row["status"] == "failed" and row["finished_at"] is not None and row["attempts"] == 0
    assert row["last_error"].startswith(f"no worker runs jobs of kind {orphan.kind} in this deployment")
    assert rows.get(known_job.id)["status"] == "queued"
    # And the owner reads the reason on the job
    assert jobs.read_job(db, uuid.UUID(account.account_id), orphan.id).status == "failed"


def test_the_local_poller_retires_jobs_of_unregistered_kinds_too(
    db, settings, enqueue, account, rows, make_kind
):
    from agentmate.jobs.poller import Poller

    make_kind()
    orphan = enqueue(account.account_id, f"gone_{uuid.uuid4().hex[:8]}")
    rows.update(orphan.id, "queued_at = now() - interval '1 hour'")
    poller = Poller(db, settings=settings, concurrency=1)
    poller.start()
    try:
        for _ in range(200):
            if rows.get(orphan.id)["status"] == "failed":
                break
            threading.Event().wait(0.05)
    finally:
        poller.stop()
    assert rows.get(orphan.id)["status"] == "failed"


def test_a_process_that_registered_no_kinds_retires_nothing(
    db, settings, enqueue, account, rows, monkeypatch
):
    import agentmate.jobs.worker as worker_module
    from agentmate.jobs.worker import retire_unregistered

    orphan = enqueue(account.account_id, f"gone_{uuid.uuid4().hex[:8]}")
    rows.update(orphan.id, "queued_at = now() - interval '1 hour'")
    monkeypatch.setattr(worker_module, "kinds", dict)  # a misconfigured worker: no runners at all
    assert retire_unregistered(db, settings=settings) == 0
    assert rows.get(orphan.id)["status"] == "queued"
