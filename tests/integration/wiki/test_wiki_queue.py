"""Wiki builds on the job queue: enqueue writes the job in the same transaction, the worker runs the build through
the ``wiki_compile`` runner, retry/no-retry per class with the build's status mirrored, two workers racing for one
build compile it once, and a superseded attempt writes nothing."""

from __future__ import annotations

import threading

import pytest

from agentmate import jobs
from agentmate.core.db import get_database
from agentmate.core.pagination import PageParams
from agentmate.jobs.worker import Worker
from agentmate.knowledge.wiki import compiler
from agentmate.knowledge.wiki import jobs as wiki_jobs
from agentmate.knowledge.wiki import service as wiki
from tests.integration.wiki.corpus import client, documents, enqueue, make_source, run

ALL = PageParams(limit=100, offset=0)


@pytest.fixture
def worker(fake, monkeypatch):
    """A worker whose wiki runner talks to the fake provider (the runner builds its client from settings)."""
    assert jobs.kinds()[wiki.JOB_KIND].runner is wiki_jobs.run
    monkeypatch.setattr(compiler, "_client_for", lambda model: client(fake, model))
    return Worker(get_database(), wake=lambda *a: True)


def _job(actor, build):
    return jobs.get_job(get_database(), actor.account_id, build.job_id)


def test_enqueue_writes_the_job_and_the_worker_compiles_the_build(actor, fake, worker):
    src = make_source(actor, "queue-ok", documents(3))
    build = enqueue(actor, fake, src).result.build
    assert build.job_id is not None
    job = _job(actor, build)
    assert (job.kind, job.subject_id, job.status, job.max_attempts) == ("wiki_compile", build.id, "queued", 3)
    report = worker.run_one(job_id=build.job_id)
    assert report.outcome == "succeeded"
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.is_active, done.attempts) == ("succeeded", True, 1)
    job = _job(actor, build)
    assert (job.status, job.attempts, job.output_tokens) == ("succeeded", 1, done.output_tokens)


def test_a_retryable_failure_backs_off_on_the_queue_and_the_build_waits_queued(actor, fake, worker):
    src = make_source(actor, "queue-retry", documents(2))
    build = enqueue(actor, fake, src).result.build
    fake.push({"kind": "status", "code": 429, "retry_after": 90})
    assert worker.run_one(job_id=build.job_id).outcome == "retry"
    job = _job(actor, build)
    assert job.status == "queued" and "429" in (job.last_error or "")
    assert (job.next_attempt_at - job.updated_at).total_seconds() >= 89, "the provider's Retry-After is kept"
    mid = wiki.get_build(get_database(), actor, build.id)
    assert (mid.status, mid.attempts, [u.outcome for u in mid.attempt_usage]) == ("queued", 1, ["retry"])


def test_a_non_retryable_failure_fails_job_and_build_at_once(actor, fake, worker):
    src = make_source(actor, "queue-perm", documents(2))
    build = enqueue(actor, fake, src).result.build
    fake.push("truncate")
    assert worker.run_one(job_id=build.job_id).outcome == "failed"
    assert _job(actor, build).status == "failed"
    done = wiki.get_build(get_database(), actor, build.id)
    assert done.status == "failed" and "truncated" in done.error


def test_a_job_failing_outside_the_runner_fails_the_build(actor, fake, worker, monkeypatch):
    src = make_source(actor, "queue-boom", documents(1))
    build = enqueue(actor, fake, src).result.build

    def boom(*a, **kw):
        raise RuntimeError("unexpected")

    monkeypatch.setattr(wiki_jobs, "compile_build", boom)
    assert worker.run_one(job_id=build.job_id).outcome == "failed"
    done = wiki.get_build(get_database(), actor, build.id)
    assert done.status == "failed" and "job_failed" in [
        e.event_type for e in wiki.events(get_database(), actor, build.id, ALL).items
    ]


def test_two_workers_racing_for_one_build_compile_it_once(actor, fake, worker):
    src = make_source(actor, "queue-race", documents(2))
    build = enqueue(actor, fake, src).result.build
    fake.push({"kind": "slow", "seconds": 1.0})
    other = Worker(get_database(), wake=lambda *a: True)
    outcomes: list[str] = []
    threads = [
        threading.Thread(target=lambda w=w: outcomes.append(w.run_one(job_id=build.job_id).outcome))
        for w in (worker, other)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(outcomes) == ["not_claimed", "succeeded"]
    assert len(fake.requests) == 1
    assert wiki.list_pages(get_database(), actor, build.id, ALL).total == 5


def test_a_superseded_attempt_writes_nothing_and_the_newer_one_wins(actor, fake):
    src = make_source(actor, "queue-superseded", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push({"kind": "slow", "seconds": 1.5})
    first: list[str] = []
    slow = threading.Thread(target=lambda: first.append(run(actor, fake, build_id).status))
    slow.start()
    while not fake.requests:  # the first attempt is waiting on the model
        threading.Event().wait(0.02)
    assert run(actor, fake, build_id).status == "succeeded"  # a second claim (the first one's lease expired)
    slow.join(30)
    assert first == ["lease_lost"]
    done = wiki.get_build(get_database(), actor, build_id)
    assert (done.status, done.attempts) == ("succeeded", 2)
    assert wiki.list_pages(get_database(), actor, build_id, ALL).total == 5, "no duplicate pages"
