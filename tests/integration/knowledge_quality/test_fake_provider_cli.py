"""The README's local fake provider, run exactly as documented (``python -m tests.fakes.chat_provider``, a real
HTTP server on loopback in its own process), answers a review job as the reviewer: review can be tried locally
without a model (issue 23 item 6). ``python -m tests.fakes.reviewer`` is the same server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID

import pytest

from agentmate import jobs
from agentmate.core.db import get_database
from agentmate.core.principal import Principal
from agentmate.jobs.settings import JobSettings
from agentmate.jobs.worker import Worker
from agentmate.knowledge.quality import review_service
from agentmate.llm.settings import ModelSettings
from tests.integration.knowledge_quality import wikibuilds as wb

ROOT = Path(__file__).resolve().parents[3]
DOCS = {"docs/billing.md": "# Billing\n\nInvoices are sent monthly.\n"}


def _serve(module: str) -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-m", module, "--port", "0"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the banner, printed once the server listens
        match = re.search(r" on (http://127\.0\.0\.1:\d+/v1)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.terminate()
        proc.wait()


@pytest.fixture(params=["tests.fakes.chat_provider", "tests.fakes.reviewer"])
def provider_url(request) -> Iterator[str]:
    yield from _serve(request.param)


def test_the_command_line_fake_answers_a_review_job_as_the_reviewer(account, provider_url):
    # Given a succeeded build with one faithful and one unsupported page, and the README's settings
    actor = wb.actor_of(account)
    source = wb.make_source(actor, "cli-review")
    revision = wb.push(actor, source, DOCS)
    build = wb.make_build(
        actor,
        source,
        revision,
        [
            wb.PageSpec("wiki/index.md", "index", "# Index\n"),
            wb.PageSpec(
                "wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"]
            ),
            wb.PageSpec(
                "wiki/b.md", "concept", "# B\n\nThe company was founded in 1999.\n", cites=["docs/billing.md"]
            ),
        ],
    )
    settings = ModelSettings(
        compiler_base_url=provider_url,
        compiler_model=wb.COMPILER_MODEL,
        reviewer_base_url=provider_url,
        reviewer_model="fake-reviewer",
    )
    principal = Principal(UUID(account.account_id), UUID(account.user_id), "jwt")

    # When a review is requested and its job runs against the command-line fake
    queued = review_service.request_review(get_database(), principal, build, settings=settings)
    jobs.register(
        review_service.KIND,
        lambda ctx: review_service.run(ctx, settings=settings),
        timeout_seconds=60,
        on_change=review_service.mirror_job,
    )
    try:
        worker = Worker(
            get_database(), settings=JobSettings(wiki_worker_heartbeat_seconds=0.05), wake=lambda *a: True
        )
        outcome = worker.run_one(job_id=queued.job_id).outcome
    finally:
        jobs.unregister(review_service.KIND)

    # Then the review succeeds and flags the unsupported claim only
    got = review_service.get_build_review(get_database(), principal, build)
    assert outcome == "succeeded", got.review
    assert (got.review.status, got.review.pages_examined, got.review.pages_total) == ("flagged", 2, 2)
    assert {(f.page_path, f.kind) for f in got.findings} == {("wiki/b.md", "unsupported")}
