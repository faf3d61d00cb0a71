"""A hostile OpenAI-compatible provider against the wiki compile job, end to end through the worker (issue 20):
whatever the provider answers (a Retry-After of 1e300, inf, -5, an HTTP date or garbage; token counts of 10^30,
negative, a string, a float; a 150 MB reply), the attempt ends with the job out of ``running``: requeued within
the backoff cap, or failed, with the problem recorded on the job and the build."""

from __future__ import annotations

import email.utils
import time

import pytest

from agentmate import jobs
from agentmate.core.db import get_database
from agentmate.jobs.worker import Worker
from agentmate.knowledge.wiki import compiler
from agentmate.knowledge.wiki import jobs as wiki_jobs
from agentmate.knowledge.wiki import service as wiki
from agentmate.llm.client import MAX_TOKENS_PER_CALL
from tests.integration.wiki.corpus import client, documents, enqueue, make_source

CAP = 600  # the default backoff cap (WIKI_WORKER_MAX_RETRY_BACKOFF_SECONDS)


@pytest.fixture
def worker(fake, monkeypatch):
    assert jobs.kinds()[wiki.JOB_KIND].runner is wiki_jobs.run  # imported: the kind is registered
    monkeypatch.setattr(compiler, "_client_for", lambda model: client(fake, model))
    return Worker(get_database(), only_kinds=[wiki.JOB_KIND], wake=lambda *a: True)


def _build(actor, fake, name):
    build = enqueue(actor, fake, make_source(actor, name, documents(2))).result.build
    assert build.job_id is not None
    return build


def _job(actor, build) -> jobs.Job:
    return jobs.get_job(get_database(), actor.account_id, build.job_id)


@pytest.mark.parametrize(
    "retry_after", ["1e300", "inf", "-5", "garbage", "9" * 40, "in-the-future", "http-date"]
)
def test_a_hostile_retry_after_requeues_the_job_within_the_backoff_cap(actor, fake, worker, retry_after):
    build = _build(actor, fake, f"hostile-ra-{abs(hash(retry_after)) % 10**6}")
    if retry_after == "http-date":
        retry_after = email.utils.formatdate(time.time() + 120, usegmt=True)
    fake.push({"kind": "status", "code": 429, "retry_after": retry_after})
    report = worker.run_one(job_id=build.job_id)
    assert report.outcome == "retry"
    job = _job(actor, build)
    assert (job.status, job.lease_owner) == ("queued", None) and "429" in (job.last_error or "")
    assert report.retry_in_seconds is not None and 30 <= report.retry_in_seconds <= CAP
    assert (job.next_attempt_at - job.updated_at).total_seconds() <= CAP + 1
    assert wiki.get_build(get_database(), actor, build.id).status == "queued"


@pytest.mark.parametrize(
    ("reported", "stored"), [(10**30, MAX_TOKENS_PER_CALL), (-5, 0), ("12", 0), (12.5, 0)]
)
def test_hostile_token_counts_are_clamped_on_the_job_and_the_build(actor, fake, worker, reported, stored):
    build = _build(actor, fake, f"hostile-usage-{abs(hash(str(reported))) % 10**6}")
    fake.push({"kind": "compile", "usage": {"completion_tokens": reported}})
    report = worker.run_one(job_id=build.job_id)
    # A clamped 10^8 tokens still breaks the profile's token budget: the check gate fails the build, with the
    # clamped count recorded; a count that counts 0 lets the build succeed
    status = "failed" if stored else "succeeded"
    assert report.outcome == status
    job = _job(actor, build)
    assert (job.status, job.lease_owner, job.output_tokens) == (status, None, stored)
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.output_tokens) == (status, stored)
    if stored:
        assert "token_budget" in (job.last_error or "")


def test_a_150_mb_reply_fails_the_job_with_the_cap_recorded(actor, fake, worker):
    build = _build(actor, fake, "hostile-huge")
    fake.push({"kind": "huge", "bytes": 150 * 1024 * 1024, "chunked": True})
    report = worker.run_one(job_id=build.job_id)
    assert report.outcome == "failed"
    job = _job(actor, build)
    assert (job.status, job.lease_owner) == ("failed", None)
    assert "cap" in (job.last_error or "") and "max_tokens" in (job.last_error or "")
    done = wiki.get_build(get_database(), actor, build.id)
    assert done.status == "failed" and "cap" in (done.error or "")
    assert fake.huge_sent and fake.huge_sent[0] < 40 * 1024 * 1024


def test_an_error_body_with_nul_characters_still_requeues_the_job(actor, fake, worker):
    build = _build(actor, fake, "hostile-nul")
    fake.push({"kind": "status", "code": 502, "body": "bad\u0000gateway"})
    assert worker.run_one(job_id=build.job_id).outcome == "retry"
    job = _job(actor, build)
    assert job.status == "queued" and "\x00" not in (job.last_error or "")
