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
from typing import Any
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


def _readme_settings(provider_url: str) -> ModelSettings:
    """The README's local settings: the one fake server as compiler and as reviewer."""
    return ModelSettings(
        compiler_base_url=provider_url,
        compiler_model=wb.COMPILER_MODEL,
        reviewer_base_url=provider_url,
        reviewer_model="fake-reviewer",
    )


def _principal(account) -> Principal:
    return Principal(UUID(account.account_id), UUID(account.user_id), "jwt")


def _build(account, name: str, docs: dict[str, str], pages: list[wb.PageSpec]) -> UUID:
    """A succeeded, active build of ``pages`` over ``docs`` pushed to a fresh source."""
    actor = wb.actor_of(account)
    source = wb.make_source(actor, name)
    return wb.make_build(actor, source, wb.push(actor, source, docs), pages)


def _run_review(principal: Principal, build: UUID, settings: ModelSettings) -> tuple[str, Any]:
    """Request a review of ``build`` and run its job with a real worker: (job outcome, the review read)."""
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
    return outcome, review_service.get_build_review(get_database(), principal, build)


@pytest.fixture(params=["tests.fakes.chat_provider", "tests.fakes.reviewer"])
def provider_url(request) -> Iterator[str]:
    yield from _serve(request.param)


def test_the_command_line_fake_answers_a_review_job_as_the_reviewer(account, provider_url):
    # Given a succeeded build with one faithful and one unsupported page, and the README's settings
    build = _build(
        account,
        "cli-review",
        DOCS,
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
    settings, principal = _readme_settings(provider_url), _principal(account)

    # When a review is requested and its job runs against the command-line fake
    outcome, got = _run_review(principal, build, settings)

    # Then the review succeeds and flags the unsupported claim only
    assert outcome == "succeeded", got.review
    assert (got.review.status, got.review.pages_examined, got.review.pages_total) == ("flagged", 2, 2)
    assert {(f.page_path, f.kind) for f in got.findings} == {("wiki/b.md", "unsupported")}


# The guide's knowledge collection (§4.6) plus a second document: headings inside a document, as real docs have.
README_DOCS = {
    "docs/refunds.md": "# Refunds\n\n## Card payments\n\nRefunds go back to the original card within 5 business days.\n",
    "docs/billing.md": "# Billing\n\n## Invoices\n\nInvoices are sent monthly.\n\n## Late fees\n\nNone.\n",
}


def test_the_fake_compilers_own_wiki_reviews_clean_against_the_command_line_fake(account, provider_url):
    # Given the wiki the fake compiler writes for the README's local flow (a summary page per document, quoting
    # it, and the generated overview "This wiki has 2 topic pages.")
    from tests.fakes.chat_provider import compile_prompt

    prompt = "".join(f'<<<DOCUMENT path="{p}">>>\n{t}<<<END DOCUMENT>>>\n' for p, t in README_DOCS.items())
    compiled = compile_prompt(prompt)["pages"]
    assert {p["path"] for p in compiled} == {
        "wiki/docs-refunds.md",
        "wiki/docs-billing.md",
        "wiki/overview.md",
    }
    pages = [
        wb.PageSpec(p["path"], p["kind"], p["content"], cites=[c["path"] for c in p["citations"]])
        for p in compiled
    ]
    build = _build(
        account, "cli-clean", README_DOCS, [wb.PageSpec("wiki/index.md", "index", "# Index\n"), *pages]
    )
    settings, principal = _readme_settings(provider_url), _principal(account)

    # When its review runs against the command-line fake, exactly as the README starts it
    outcome, got = _run_review(principal, build, settings)

    # Then every claim is found in a cited source (a sentence under a sub-heading too) and the review is clean
    assert outcome == "succeeded", got.review
    assert got.findings == [] and (got.review.status, got.review.pages_examined) == ("clean", 3)


def test_while_a_new_review_waits_the_read_shows_the_previous_verdict_next_to_it(account, provider_url):
    # Given a build reviewed once (flagged) through the command-line fake
    build = _build(
        account,
        "cli-rereview",
        DOCS,
        [wb.PageSpec("wiki/b.md", "concept", "# B\n\nFounded in 1999.\n", cites=["docs/billing.md"])],
    )
    settings, principal = _readme_settings(provider_url), _principal(account)
    _, first = _run_review(principal, build, settings)
    assert (first.review_status, len(first.findings)) == ("flagged", 1)

    # When a second review is requested and has not run yet
    again = review_service.request_review(get_database(), principal, build, settings=settings)
    got = review_service.get_build_review(get_database(), principal, build)

    # Then (as docs/knowledge-wiki.md says) the read shows the new review and its warning next to the previous
    # verdict and findings
    assert got.review is not None and (got.review.id, got.review.status) == (again.id, "queued")
    assert got.warning.endswith("Review is queued: nothing has been reviewed yet.")
    assert (got.review_status, [f.claim for f in got.findings]) == ("flagged", ["Founded in 1999."])
