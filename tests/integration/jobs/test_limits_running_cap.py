"""Fair queues (issue 25 §1, ``LIMIT_RUNNING_JOBS``): the claim skips a job whose account already runs its cap of
jobs, so another account's job runs first; the capped account's jobs wait (never refused) and run once a slot is
free. Running elsewhere is stood in for by owner-side row surgery: no test sleeps."""

from __future__ import annotations

import uuid

from agentmate.jobs.worker import Worker


def _running_elsewhere(rows, job_id) -> None:
    rows.update(
        job_id, "status = 'running', lease_owner = 'elsewhere', lease_expires_at = now() + interval '5 min'"
    )


def test_an_account_at_its_running_cap_waits_while_another_accounts_job_is_claimed(
    db, settings, make_kind, enqueue, account, other_account, rows
):
    # Given a cap of one running job per account, one of A's jobs running elsewhere and two more queued,
    # then one job of B queued after them
    kind = make_kind()
    running = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    waiting = [enqueue(account.account_id, kind.name, subject_id=uuid.uuid4()) for i in range(2)]
    later = enqueue(other_account.account_id, kind.name, subject_id=uuid.uuid4())
    _running_elsewhere(rows, running.id)
    worker = Worker(db, settings=settings, only_kinds=[kind.name], running_cap=1)

    # When a worker looks for any job, then is woken for one of A's queued jobs by id
    first = worker.run_one()
    by_id = worker.run_one(job_id=waiting[0].id)

    # Then B's job ran although A's were older, A's woken job was not claimed, and A's jobs are still queued
    assert first.outcome == "succeeded" and first.job is not None and first.job.id == later.id
    assert by_id.outcome == "not_claimed"
    assert [rows.get(j.id)["status"] for j in waiting] == ["queued", "queued"]


def test_a_capped_accounts_jobs_run_once_its_running_job_ends(
    db, settings, make_kind, enqueue, account, rows
):
    kind = make_kind()
    running = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    waiting = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    _running_elsewhere(rows, running.id)
    worker = Worker(db, settings=settings, only_kinds=[kind.name], running_cap=1)
    assert worker.run_one(job_id=waiting.id).outcome == "not_claimed"
    # When the running job's lease runs out (its worker died), the slot is free again: the claim takes one of them
    rows.expire_lease(running.id)
    assert worker.run_one().outcome == "succeeded"
    assert worker.run_one().outcome == "succeeded"
    assert {rows.get(j.id)["status"] for j in (running, waiting)} == {"succeeded"}


def test_a_cap_of_zero_claims_in_queue_order_as_before(
    db, settings, make_kind, enqueue, account, other_account, rows
):
    kind = make_kind()
    running = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    waiting = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    enqueue(other_account.account_id, kind.name, subject_id=uuid.uuid4())
    _running_elsewhere(rows, running.id)
    report = Worker(db, settings=settings, only_kinds=[kind.name], running_cap=0).run_one()
    assert report.job is not None and report.job.id == waiting.id


def test_the_default_cap_comes_from_the_limit_settings(db, settings):
    assert Worker(db, settings=settings).running_cap == 2


def test_when_a_capped_accounts_job_ends_its_next_due_job_is_woken(
    db, settings, make_kind, enqueue, account, rows, wakes
):
    # Given a cap of one and two jobs of one account; the second's wake-up was turned away while the first ran
    kind = make_kind()
    first = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    second = enqueue(account.account_id, kind.name, subject_id=uuid.uuid4())
    wakes.sent.clear()
    # When the first runs to its end
    assert Worker(db, settings=settings, running_cap=1).run_one(job_id=first.id).outcome == "succeeded"
    # Then the second is woken at once (not left to the sweep)
    assert (second.id, 0) in wakes.sent
