"""A worker killed while the model call runs (prior-art §4.9, issue 13): a real worker process claims the build and
calls the loopback fake provider, which holds the reply; the process is killed (SIGKILL: no yield, no outcome), its
lease stops being renewed and expires for real, the sweep re-sends the build, and another worker claims and
finishes it. Exactly one set of pages, no duplicate pages or events, and the build's attempts and events say
what happened."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psycopg
import pytest
from psycopg.rows import dict_row

import agentmate.knowledge.wiki.jobs  # noqa: F401  (registers wiki_compile here too, as the worker's runners do)
from agentmate.core.db import get_database
from agentmate.jobs.settings import JobSettings
from agentmate.jobs.worker import Worker, sweep
from agentmate.knowledge.wiki import compiler
from agentmate.knowledge.wiki import service as wiki
from tests.integration.wiki.corpus import client, documents, enqueue, make_source

ROOT = Path(__file__).resolve().parents[3]
LEASE_S = (
    10  # the killed worker's lease: 2 x COMPILER_TIMEOUT_SECONDS, JOBS_MIN_LEASE_SECONDS lowered to allow it
)


def _wait(what: str, done, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _row(owner_url: str, sql: str, *params):
    with psycopg.connect(owner_url, row_factory=dict_row) as conn:
        return conn.execute(sql, params).fetchall()


@pytest.fixture
def worker_env(fake) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
            "COMPILER_BASE_URL": fake.base_url,
            "COMPILER_MODEL": "fake-compiler",
            "COMPILER_API_KEY": "k",
            "COMPILER_TIMEOUT_SECONDS": str(LEASE_S / 2),
            "JOBS_MIN_LEASE_SECONDS": "1",
            "WIKI_WORKER_HEARTBEAT_SECONDS": "0.25",
            "JOBS_QUEUE_URL": "",
        }
    )
    return env


def test_a_worker_killed_mid_compile_is_replaced_after_its_lease_expires(
    actor, fake, owner_url, worker_env, monkeypatch
):
    src = make_source(actor, "killed-worker", documents(3))
    build = enqueue(actor, fake, src).result.build
    job_id = build.job_id
    # Given a provider that holds its reply, and a worker process that claims the build and calls it
    fake.push({"kind": "slow", "seconds": 20})
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.wiki.worker_process", str(job_id)],
        cwd=ROOT,
        env=worker_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        _wait("the worker's model call", lambda: len(fake.requests) == 1 or proc.poll() is not None)
        assert proc.poll() is None, proc.communicate()
        # When the worker is killed while the model call runs
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    (job,) = _row(owner_url, "SELECT * FROM jobs WHERE id = %s", job_id)
    assert (job["status"], job["attempts"]) == ("running", 1)
    assert job["lease_owner"].split("/")[1] == str(proc.pid)  # the dead process holds the lease
    assert wiki.get_build(get_database(), actor, build.id).status == "running"
    # Then nobody renews its lease and it expires (for real: no row surgery)
    _wait(
        "the lease to expire",
        lambda: _row(owner_url, "SELECT lease_expires_at <= now() AS gone FROM jobs WHERE id = %s", job_id)[
            0
        ]["gone"],
        timeout_s=3 * LEASE_S,
    )
    # And the sweep re-sends the stranded build
    # (this worker's test database holds other tests' stranded jobs too: sweep batches until it reaches this one)
    sent: list = []
    for _ in range(20):
        if (
            not sweep(
                get_database(),
                settings=JobSettings(jobs_sweep_grace_seconds=1, jobs_sweep_batch=1000),
                wake=lambda jid, delay: sent.append(jid) or True,
            )
            or job_id in sent
        ):
            break
    assert job_id in sent
    # And another worker claims it and finishes the compile
    monkeypatch.setattr(compiler, "_client_for", lambda model: client(fake, model))
    report = Worker(get_database(), only_kinds=["wiki_compile"], wake=lambda *a: True).run_one(job_id=job_id)
    assert report.outcome == "succeeded"

    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.check_status, done.attempts, done.is_active) == ("succeeded", "passed", 2, True)
    (job,) = _row(owner_url, "SELECT * FROM jobs WHERE id = %s", job_id)
    assert (job["status"], job["attempts"], job["lease_owner"]) == ("succeeded", 2, None)
    # Exactly one set of pages: each path once, in this build only, written once
    pages = _row(owner_url, "SELECT path FROM knowledge_pages WHERE build_id = %s", build.id)
    paths = [p["path"] for p in pages]
    assert len(paths) == len(set(paths)) == 6  # 3 summaries + overview + index + log
    events = [
        (e["event_type"], e["page_path"])
        for e in _row(
            owner_url,
            "SELECT event_type, page_path FROM knowledge_build_events WHERE build_id = %s "
            "ORDER BY sequence_no",
            build.id,
        )
    ]
    counts = Counter(t for t, _ in events)
    written = [p for t, p in events if t == "page_written"]
    assert (
        len(written) == len(set(written)) == 4
    )  # the model's pages (index.md and log.md are the platform's)
    assert (counts["build_succeeded"], counts["check_passed"], counts["build_activated"]) == (1, 1, 1)
    # And the log tells the story: attempt 1 started, was abandoned when its lease expired, attempt 2 finished
    story = [
        t
        for t, _ in events
        if t in ("build_queued", "attempt_started", "attempt_abandoned", "build_succeeded")
    ]
    assert story == [
        "build_queued",
        "attempt_started",
        "attempt_abandoned",
        "attempt_started",
        "build_succeeded",
    ]
    # The killed attempt's call was never answered, so only the finishing attempt's usage is recorded
    assert [u.outcome for u in done.attempt_usage] == ["succeeded"]
    assert len(fake.requests) == 2
