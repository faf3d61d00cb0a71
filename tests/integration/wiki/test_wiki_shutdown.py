"""Graceful shutdown of a wiki compile (spec/001: "graceful shutdown yields its builds and refunds the attempt"),
end to end through the queue's worker with the fake provider as a real loopback server that holds its reply: the
model call in flight is abandoned (the provider sees its connection closed), the build and the job go back to
queued with the attempt refunded, and what the attempts spent stays recorded. Events, never sleeps."""

from __future__ import annotations

import json
import threading

import psycopg
import pytest

from agentmate import jobs
from agentmate.core.db import get_database
from agentmate.core.pagination import PageParams
from agentmate.jobs.worker import RunReport, Worker
from agentmate.knowledge.wiki import compiler
from agentmate.knowledge.wiki import jobs as wiki_jobs  # registers the wiki kinds
from agentmate.knowledge.wiki import service as wiki
from agentmate.llm import ChatClient, ChatConfig, Prices
from tests.integration.wiki.corpus import documents, enqueue, make_source

ALL = PageParams(limit=100, offset=0)
PRICES = Prices(input_micros_per_1k=1000, output_micros_per_1k=2000)


def _client(fake, model: str) -> ChatClient:
    return ChatClient(
        ChatConfig(base_url=fake.base_url, api_key="k", model=model, timeout_s=30, prices=PRICES)
    )


@pytest.fixture
def priced(fake, monkeypatch):
    """The runner's chat client talks to the fake provider, at known prices."""
    monkeypatch.setattr(compiler, "_client_for", lambda model: _client(fake, model))


def _job(actor, build):
    return jobs.get_job(get_database(), actor.account_id, build.job_id)


def _due_now(owner_url: str, job_id) -> None:
    """As if the retry's backoff were over (time passing, not a sleep)."""
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE jobs SET next_attempt_at = now() - interval '1 second' WHERE id = %s", (job_id,))


def _in_thread(worker: Worker, job_id) -> tuple[threading.Thread, list[RunReport]]:
    reports: list[RunReport] = []
    thread = threading.Thread(target=lambda: reports.append(worker.run_one(job_id=job_id)))
    thread.start()
    return thread, reports


def test_a_shutdown_during_the_model_call_abandons_it_and_yields_the_build_with_its_attempt_refunded(
    actor, fake, priced, owner_url
):
    # Given a build whose first attempt spent tokens on a retryable reply (usage, no choices)
    src = make_source(actor, "shutdown-inflight", documents(2))
    build = enqueue(actor, fake, src).result.build
    no_choices = json.dumps({"usage": {"prompt_tokens": 120, "completion_tokens": 7}})
    fake.push({"kind": "status", "code": 200, "body": no_choices})
    assert Worker(get_database(), wake=lambda *a: True).run_one(job_id=build.job_id).outcome == "retry"
    _due_now(owner_url, build.job_id)
    # And a second attempt whose model call is in flight (the provider holds its reply)
    fake.push("hold")
    worker = Worker(get_database(), wake=lambda *a: True)
    thread, reports = _in_thread(worker, build.job_id)
    assert fake.held.wait(30), "the model call reached the provider"
    mid = wiki.get_build(get_database(), actor, build.id)
    assert (mid.status, mid.attempts) == ("running", 2)

    # When the worker's host shuts down
    worker.shutdown.set()
    thread.join(30)

    # Then the call was abandoned: the provider saw the connection closed, with its reply never sent
    assert not thread.is_alive() and reports[0].outcome == "yielded"
    assert fake.hung_up.wait(30)
    # And the build waits again with the attempt refunded, the first attempt's cost still recorded
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.attempts, done.is_active) == ("queued", 1, False)
    assert [(u.attempt, u.outcome) for u in done.attempt_usage] == [(1, "retry"), (2, "yielded")]
    assert (done.input_tokens, done.output_tokens, done.cost_micros, done.cost_priced) == (120, 7, 134, True)
    events = [e.event_type for e in wiki.events(get_database(), actor, build.id, ALL).items]
    assert events.count("attempt_yielded") == 1 and "build_failed" not in events
    # And so does the job: queued, due now, its attempt refunded, the tokens kept
    job = _job(actor, build)
    assert (job.status, job.attempts, job.input_tokens, job.output_tokens) == ("queued", 1, 120, 7)

    # When a worker that is not shutting down takes it up again
    assert Worker(get_database(), wake=lambda *a: True).run_one(job_id=build.job_id).outcome == "succeeded"
    # Then the build succeeds on its second attempt, all three calls accounted for
    final = wiki.get_build(get_database(), actor, build.id)
    assert (final.status, final.attempts, final.is_active) == ("succeeded", 2, True)
    assert [(u.attempt, u.outcome) for u in final.attempt_usage] == [
        (1, "retry"),
        (2, "yielded"),
        (2, "succeeded"),
    ]
    assert final.input_tokens == 120 + fake.usage[-1]["prompt_tokens"]
    assert (_job(actor, build).status, _job(actor, build).attempts) == ("succeeded", 2)
    assert len(fake.requests) == 3


def test_a_shutdown_before_the_model_call_yields_without_calling_the_model(
    actor, fake, owner_url, monkeypatch
):
    # Given a worker whose host shuts down after it claimed the build, before the model is called
    src = make_source(actor, "shutdown-before", documents(2))
    build = enqueue(actor, fake, src).result.build
    worker = Worker(get_database(), wake=lambda *a: True)

    def shut_then_client(model: str) -> ChatClient:
        worker.shutdown.set()
        return _client(fake, model)

    monkeypatch.setattr(compiler, "_client_for", shut_then_client)
    # When it runs the build
    report = worker.run_one(job_id=build.job_id)
    # Then the compile kind yields: no call was made, build and job are queued with no attempt spent
    assert report.outcome == "yielded" and fake.requests == []
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.attempts, [u.outcome for u in done.attempt_usage]) == ("queued", 0, ["yielded"])
    job = _job(actor, build)
    assert (job.status, job.attempts) == ("queued", 0)


def test_a_shutdown_before_the_claimed_compile_starts_yields_it_untouched(actor, fake, monkeypatch):
    # Given the compile kind's runner, reached by a worker whose host is already shutting down
    src = make_source(actor, "shutdown-start", documents(1))
    build = enqueue(actor, fake, src).result.build
    worker = Worker(get_database(), wake=lambda *a: True)
    kind = jobs.kinds()[wiki.JOB_KIND]
    assert kind.runner is wiki_jobs.run

    def shut_then_run(ctx: jobs.RunContext):
        worker.shutdown.set()
        return wiki_jobs.run(ctx)

    jobs.register(
        wiki.JOB_KIND, shut_then_run, timeout_seconds=kind.timeout_seconds, on_change=kind.on_change
    )
    try:
        report = worker.run_one(job_id=build.job_id)
    finally:
        jobs.register(
            wiki.JOB_KIND, kind.runner, timeout_seconds=kind.timeout_seconds, on_change=kind.on_change
        )
    # Then the job is yielded before the build was started: nothing called, nothing spent
    assert report.outcome == "yielded" and fake.requests == []
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.attempts, done.attempt_usage) == ("queued", 0, [])
    assert (_job(actor, build).status, _job(actor, build).attempts) == ("queued", 0)
