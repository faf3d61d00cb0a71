"""Build review (spec/001 K3.8) as a job on the compile queue, with the loopback fake provider as the reviewer:
findings of each kind judged against the raw source text, clean, capped (partial), failures, a same-model
reviewer refused, and the verdict mirrored on the build."""

from __future__ import annotations

import os
from collections.abc import Iterator
from uuid import UUID

import pytest

from agentmate import jobs
from agentmate.core.db import Database, get_database
from agentmate.core.errors import Conflict, NotFound, NotImplementedYet
from agentmate.core.principal import Principal
from agentmate.jobs.settings import JobSettings
from agentmate.jobs.worker import Worker
from agentmate.knowledge.quality import review_service
from agentmate.knowledge.quality.settings import ReviewSettings
from agentmate.llm.settings import ModelSettings as Settings
from tests.fakes.reviewer import REVIEW_MARKER, FakeReviewer
from tests.integration.knowledge_quality.wikibuilds import (
    COMPILER_MODEL,
    PageSpec,
    actor_of,
    make_build,
    make_source,
    push,
)

DOCS = {
    "docs/refunds.md": "# Refunds\n\nRefunds are usually processed within 30 days.\n",
    "docs/billing.md": "# Billing\n\nInvoices are sent monthly.\n",
    "docs/shipping.md": "# Shipping\n\nParcels ship from Berlin.\n",
}
INDEX = PageSpec("wiki/index.md", "index", "# Index\n")


@pytest.fixture
def reviewer() -> Iterator[FakeReviewer]:
    with FakeReviewer() as fake:
        yield fake


def settings_for(fake: FakeReviewer, *, reviewer_model: str = "fake-reviewer") -> Settings:
    # The compiler's endpoint is another host than the reviewer's: cross_provider.
    return Settings(
        compiler_base_url="http://localhost:9/v1",
        compiler_model=COMPILER_MODEL,
        reviewer_base_url=fake.base_url,
        reviewer_model=reviewer_model,
    )


@pytest.fixture
def principal(account) -> Principal:
    return Principal(UUID(account.account_id), UUID(account.user_id), "jwt")


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database(os.environ["DATABASE_URL"], max_size=4)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def run_review(db, reviewer):
    """Run a review job on a worker of our own, the provider being the fake reviewer."""
    registered: list[str] = []

    def go(job_id: UUID, settings: Settings, review_settings: ReviewSettings | None = None) -> str:
        jobs.register(
            review_service.KIND,
            lambda ctx: review_service.run(ctx, settings=settings, review_settings=review_settings),
            timeout_seconds=60,
            on_change=review_service.mirror_job,
        )
        registered.append(review_service.KIND)
        job_settings = JobSettings(wiki_worker_heartbeat_seconds=0.05, jobs_min_lease_seconds=120)
        return Worker(db, settings=job_settings, wake=lambda *a: True).run_one(job_id=job_id).outcome

    yield go
    for kind in registered:
        jobs.unregister(kind)


def _corpus(account, name: str, pages: list[PageSpec]) -> UUID:
    actor = actor_of(account)
    source = make_source(actor, name)
    revision = push(actor, source, DOCS)
    return make_build(actor, source, revision, [INDEX, *pages])


def test_a_review_finds_each_kind_against_the_raw_source_text_and_flags_the_build(
    account, principal, reviewer, run_review
):
    # Given a build whose pages carry one unfaithful claim of each kind, and one faithful page
    build = _corpus(
        account,
        "review-kinds",
        [
            PageSpec(
                "wiki/refunds.md",
                "summary",
                "# Refunds\n\nRefunds are always processed within 30 days.\n",
                cites=[("docs/refunds.md", "refund window")],
            ),
            PageSpec(
                "wiki/billing.md",
                "summary",
                "# Billing\n\nInvoices are sent monthly because the ledger closes on the first.\n",
                cites=["docs/billing.md"],
            ),
            PageSpec(
                "wiki/logistics.md",
                "synthesis",
                "# Logistics\n\nParcels ship from Berlin and invoices are sent monthly.\n",
                cites=["docs/shipping.md", "docs/billing.md"],
            ),
            PageSpec(
                "wiki/history.md",
                "concept",
                "# History\n\nThe company was founded in 1999.\n",
                cites=["docs/billing.md"],
            ),
            PageSpec(
                "wiki/invoices.md",
                "concept",
                "# Invoices\n\nInvoices are sent monthly.\n",
                cites=["docs/billing.md"],
            ),
        ],
    )
    settings = settings_for(reviewer)
    db = get_database()

    # When a review is requested (queued, nothing reviewed yet) and its job runs
    queued = review_service.request_review(db, principal, build, settings=settings)
    assert (queued.status, queued.requested_by, queued.reviewer_independence) == (
        "queued",
        "request",
        "cross_provider",
    )
    pending = review_service.get_build_review(db, principal, build)
    assert pending.review.status == "queued" and "nothing has been reviewed yet" in pending.warning
    assert reviewer.requests == []
    assert run_review(queued.job_id, settings) == "succeeded"

    # Then every unfaithful claim is found under its kind, the faithful page is not
    got = review_service.get_build_review(db, principal, build)
    assert {(f.page_path, f.kind) for f in got.findings} == {
        ("wiki/refunds.md", "overstated"),
        ("wiki/billing.md", "fabricated_causality"),
        ("wiki/logistics.md", "conflated"),
        ("wiki/history.md", "unsupported"),
    }
    r = got.review
    assert (r.status, r.pages_examined, r.pages_total, r.findings_total) == ("flagged", 5, 5, 4)
    assert (r.reviewer_model, got.review_status, got.reviewer_independence) == (
        "fake-reviewer",
        "flagged",
        "cross_provider",
    )
    assert r.input_tokens > 0 and r.output_tokens > 0
    assert "examined 5 of 5" in got.warning and "check is the only gate" in got.warning
    assert "independence cross_provider" in got.warning
    # And the reviewer read the documents' own text, never the compiler's excerpts, one call per content page
    prompts = [req["body"]["messages"][-1]["content"] for req in reviewer.requests]
    assert len(prompts) == 5
    assert all("compiler's own excerpt" not in p for p in prompts)
    assert any("Refunds are usually processed within 30 days." in p for p in prompts)
    assert all(req["body"]["model"] == "fake-reviewer" for req in reviewer.requests)


def test_a_capped_review_is_partial_and_reviews_the_most_cited_pages(
    account, principal, reviewer, run_review
):
    build = _corpus(
        account,
        "review-capped",
        [
            PageSpec(
                "wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"]
            ),
            PageSpec(
                "wiki/b.md",
                "concept",
                "# B\n\nInvoices are sent monthly.\n",
                cites=["docs/billing.md", "docs/shipping.md"],
            ),
            PageSpec(
                "wiki/c.md", "concept", "# C\n\nParcels ship from Berlin.\n", cites=["docs/shipping.md"]
            ),
        ],
    )
    settings, capped = settings_for(reviewer), ReviewSettings(wiki_review_max_pages=2)
    db = get_database()
    queued = review_service.request_review(db, principal, build, settings=settings, review_settings=capped)
    assert queued.page_limit == 2
    assert run_review(queued.job_id, settings, capped) == "succeeded"
    got = review_service.get_build_review(db, principal, build)
    r = got.review
    assert (r.status, r.pages_examined, r.pages_total, got.findings) == ("partial", 2, 3, [])
    assert "capped at 2" in r.note and "carry no verdict" in r.note
    assert "1 page(s) were not reviewed" in got.warning
    reviewed = [
        req["body"]["messages"][-1]["content"].split("path: ", 1)[1].split("\n", 1)[0]
        for req in reviewer.requests
    ]
    assert reviewed == ["wiki/b.md", "wiki/a.md"]  # most citations first, then path


def test_a_faithful_wiki_is_clean_only_when_every_page_was_read(account, principal, reviewer, run_review):
    build = _corpus(
        account,
        "review-clean",
        [
            PageSpec(
                "wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"]
            ),
            PageSpec(
                "wiki/c.md", "concept", "# C\n\nParcels ship from Berlin.\n", cites=["docs/shipping.md"]
            ),
        ],
    )
    settings = settings_for(reviewer)
    queued = review_service.request_review(get_database(), principal, build, settings=settings)
    assert run_review(queued.job_id, settings) == "succeeded"
    got = review_service.get_build_review(get_database(), principal, build)
    assert (got.review.status, got.review.pages_examined, got.review.pages_total) == ("clean", 2, 2)
    assert got.review_status == "clean"


def test_a_same_model_reviewer_is_refused_and_nothing_is_queued(account, principal, reviewer, owner_url):
    build = _corpus(
        account,
        "review-same-model",
        [PageSpec("wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"])],
    )
    same = settings_for(reviewer, reviewer_model=COMPILER_MODEL.upper())
    db = get_database()
    with pytest.raises(Conflict, match="self-review is refused"):
        review_service.request_review(db, principal, build, settings=same)
    # After activation the refusal is recorded as a skipped review that says why, and no job is queued
    with db.tenant(principal.account_id) as conn:
        assert (
            review_service.enqueue_after_activation(
                conn, account_id=principal.account_id, build_id=build, settings=same
            )
            is None
        )
    got = review_service.get_build_review(db, principal, build)
    assert (got.review.status, got.review.job_id, got.review_status, got.reviewer_independence) == (
        "skipped",
        None,
        "skipped",
        "same_model",
    )
    assert "compiled this build" in got.review.note and "Nothing was reviewed" in got.warning
    assert reviewer.requests == []


def test_review_needs_a_reviewer_a_succeeded_build_and_a_known_build(account, principal, reviewer):
    actor = actor_of(account)
    source = make_source(actor, "review-failed")
    failed = make_build(actor, source, push(actor, source, DOCS), [], status="failed", activate=False)
    db = get_database()
    with pytest.raises(Conflict, match="only a succeeded build"):
        review_service.request_review(db, principal, failed, settings=settings_for(reviewer))
    build = _corpus(account, "review-unconfigured", [PageSpec("wiki/a.md", cites=["docs/billing.md"])])
    unconfigured = Settings(
        compiler_base_url="http://localhost:9/v1",
        compiler_model=COMPILER_MODEL,
        reviewer_base_url="",
        embedding_base_url="",
        reviewer_model="",
    )
    with pytest.raises(NotImplementedYet, match="no reviewer"):
        review_service.request_review(db, principal, build, settings=unconfigured)
    with pytest.raises(NotFound):
        review_service.request_review(db, principal, UUID(int=5), settings=settings_for(reviewer))
    with pytest.raises(NotFound):
        review_service.get_build_review(db, principal, UUID(int=5))


def test_a_second_request_while_one_waits_hands_back_the_waiting_review(account, principal, reviewer):
    build = _corpus(account, "review-twice", [PageSpec("wiki/a.md", cites=["docs/billing.md"])])
    db = get_database()
    first = review_service.request_review(db, principal, build, settings=settings_for(reviewer))
    second = review_service.request_review(db, principal, build, settings=settings_for(reviewer))
    assert (second.id, second.job_id) == (first.id, first.job_id)


def test_a_provider_failing_every_call_retries_the_review_later_and_unusable_replies_fail_it(
    account, principal, reviewer, run_review
):
    build = _corpus(
        account,
        "review-failures",
        [
            PageSpec(
                "wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"]
            ),
            PageSpec(
                "wiki/b.md", "concept", "# B\n\nParcels ship from Berlin.\n", cites=["docs/shipping.md"]
            ),
        ],
    )
    settings = settings_for(reviewer)
    db = get_database()
    queued = review_service.request_review(db, principal, build, settings=settings)
    # Every call answers 503: the job goes back to the queue and the review waits again
    reviewer.push({"kind": "status", "code": 503}, {"kind": "status", "code": 503})
    assert run_review(queued.job_id, settings) == "retry"
    assert review_service.get_build_review(db, principal, build).review.status == "queued"
    # Replies that do not answer (not JSON, no findings array) are final: failed, no page gets a verdict
    with db.tenant(principal.account_id) as conn:
        conn.execute("UPDATE jobs SET next_attempt_at = now() WHERE id = %s", (queued.job_id,))
    reviewer.push(
        {"kind": "review_reply", "text": "I think it is fine"},
        {"kind": "review_reply", "text": '{"verdict": "ok"}'},
    )
    assert run_review(queued.job_id, settings) == "succeeded"
    got = review_service.get_build_review(db, principal, build)
    assert (got.review.status, got.review.pages_examined, got.review.pages_failed) == ("failed", 0, 2)
    assert "not JSON" in got.review.note
    assert got.review_status == "failed"


def test_one_failed_page_leaves_a_partial_review_that_names_the_cause(
    account, principal, reviewer, run_review
):
    build = _corpus(
        account,
        "review-one-failed",
        [
            PageSpec(
                "wiki/a.md", "concept", "# A\n\nInvoices are sent monthly.\n", cites=["docs/billing.md"]
            ),
            PageSpec(
                "wiki/b.md", "concept", "# B\n\nParcels ship from Berlin.\n", cites=["docs/shipping.md"]
            ),
        ],
    )
    settings = settings_for(reviewer)
    queued = review_service.request_review(get_database(), principal, build, settings=settings)
    reviewer.push({"kind": "status", "code": 400})
    assert run_review(queued.job_id, settings) == "succeeded"
    r = review_service.get_build_review(get_database(), principal, build).review
    assert (r.status, r.pages_examined, r.pages_failed) == ("partial", 1, 1)
    assert "HTTP 400" in r.note


def test_a_compile_that_activates_queues_its_review_which_the_worker_then_runs(
    account, principal, reviewer, run_review, monkeypatch
):
    # Given a reviewer configured for the platform, and a compile (by the fake provider) that activates its build
    from tests.integration.wiki import corpus

    settings = settings_for(reviewer)
    monkeypatch.setattr(review_service, "get_model_settings", lambda: settings)
    actor = actor_of(account)
    source = corpus.make_source(actor, "review-after-activation", corpus.documents(2))
    build = corpus.compile_now(actor, reviewer, source)
    assert (build.status, build.is_active) == ("succeeded", True)

    # Then activation queued its review (a job of its own: nothing was reviewed inside the compile)
    queued = review_service.get_build_review(get_database(), principal, build.id).review
    assert (queued.status, queued.requested_by, queued.job_id is not None) == ("queued", "activation", True)
    assert not any(REVIEW_MARKER in r["body"]["messages"][0]["content"] for r in reviewer.requests)
    # And a second activation (a rollback back to it) does not queue another
    with get_database().tenant(principal.account_id) as conn:
        assert (
            review_service.enqueue_after_activation(
                conn, account_id=principal.account_id, build_id=build.id, settings=settings
            )
            is None
        )

    # When the worker runs it: the topic pages quote their documents and the fake reviewer counts the fake
    # compiler's generated overview as supported, so the fake's own wiki reviews clean (the README's local flow)
    assert run_review(queued.job_id, settings) == "succeeded"
    got = review_service.get_build_review(get_database(), principal, build.id)
    assert (got.review.status, got.review.pages_examined, got.review.pages_total) == ("clean", 3, 3)
    assert got.findings == []
    assert got.review_status == "clean"
