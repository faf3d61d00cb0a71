"""Wiki lint runs (spec/001 K3.7) over real builds: a corpus and builds made so that every rule fires, a sync
that makes citations stale, stored runs listed and read back, and nothing blocked."""

from __future__ import annotations

from uuid import UUID

import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict, NotFound
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import lint_service
from tests.integration.knowledge_quality.wikibuilds import PageSpec, actor_of, make_build, make_source, push

DOCS = {
    "docs/refunds.md": "# Refunds\n\nRefunds are usually processed within 30 days.\n",
    "docs/billing.md": "# Billing\n\nInvoices are sent monthly.\n",
    "docs/shipping.md": "# Shipping\n\nParcels ship from Berlin.\n",
    "docs/ignored.md": "# Ignored\n\nNobody wrote about this.\n",
}
INDEX = "wiki/index.md"


def pages() -> list[PageSpec]:
    topics = [
        "wiki/overview.md",
        "wiki/refunds.md",
        "wiki/refund-faq.md",
        "wiki/billing.md",
        "wiki/old-billing.md",
        "wiki/shipping.md",
        "wiki/orphan.md",
        "wiki/acme.md",
    ]
    return [
        PageSpec(INDEX, "index", "# Index\n", links=[(t, "references") for t in topics]),
        PageSpec(
            "wiki/overview.md",
            "overview",
            "# Overview\n",
            cites=["docs/billing.md"],
            links=[
                ("wiki/refunds.md", "references"),
                ("wiki/billing.md", "references"),
                ("wiki/shipping.md", "references"),
            ],
        ),
        # refunds.md cites the document the next sync rewrites; refund-faq.md rests on it (stale cascade)
        PageSpec(
            "wiki/refunds.md",
            "summary",
            "# Refunds\n",
            cites=["docs/refunds.md"],
            links=[("wiki/billing.md", "contradicts"), ("wiki/acme.md", "mentions_entity")],
        ),
        PageSpec(
            "wiki/refund-faq.md",
            "synthesis",
            "# Refund FAQ\n",
            cites=["docs/billing.md"],
            links=[("wiki/refunds.md", "elaborates")],
        ),
        PageSpec(
            "wiki/billing.md",
            "summary",
            "# Billing\n",
            cites=["docs/billing.md"],
            links=[("wiki/old-billing.md", "supersedes"), ("wiki/refund-faq.md", "references")],
        ),
        PageSpec(
            "wiki/old-billing.md",
            "summary",
            "---\nsuperseded_by: ''\n---\n# Old billing\n",
            cites=["docs/billing.md"],
            links=[("wiki/billing.md", "mentions_entity")],
        ),
        # shipping.md cites the document the next sync removes
        PageSpec(
            "wiki/shipping.md",
            "summary",
            "# Shipping\n",
            cites=["docs/shipping.md"],
            links=[("wiki/overview.md", "references")],
        ),
        PageSpec("wiki/orphan.md", "concept", "# Orphan\n", cites=["docs/billing.md"]),
        PageSpec("wiki/acme.md", "entity", "# ACME\n", cites=["docs/billing.md"]),
    ]


@pytest.fixture
def principal(account) -> Principal:
    return Principal(UUID(account.account_id), UUID(account.user_id), "jwt")


def test_every_lint_rule_fires_on_the_build_made_for_it_and_the_run_is_stored(account, principal):
    # Given a build of the corpus, then a sync that rewrites one cited document and removes another
    actor = actor_of(account)
    source = make_source(actor)
    first = push(actor, source, DOCS)
    build = make_build(actor, source, first, pages())
    second = {**DOCS, "docs/refunds.md": "# Refunds\n\nRefunds take 60 days now.\n"}
    del second["docs/shipping.md"]
    current = push(actor, source, second)

    # When the active wiki is linted
    db = get_database()
    detail = lint_service.lint_active_wiki(db, principal, source)

    # Then each rule reports what it was built to catch, and nothing else
    got = {(f.rule, f.page_path, f.related_path) for f in detail.findings}
    assert got == {
        ("orphan_page", "wiki/orphan.md", None),
        ("stale_citation", "wiki/refunds.md", "docs/refunds.md"),
        ("stale_citation", "wiki/shipping.md", "docs/shipping.md"),
        ("stale_cascade", "wiki/overview.md", None),
        ("stale_cascade", "wiki/refund-faq.md", None),
        ("stale_cascade", "wiki/billing.md", None),
        ("recorded_contradiction", "wiki/refunds.md", "wiki/billing.md"),
        ("unlabelled_supersede", "wiki/old-billing.md", "wiki/billing.md"),
        ("entity_link_kind", "wiki/old-billing.md", "wiki/billing.md"),
        ("uncovered_document", None, "docs/ignored.md"),
    }
    stale = {f.related_path: f.detail for f in detail.findings if f.rule == "stale_citation"}
    assert "rewritten" in stale["docs/refunds.md"] and "removed" in stale["docs/shipping.md"]
    cascade = {f.page_path: f.detail for f in detail.findings if f.rule == "stale_cascade"}
    assert cascade == {
        "wiki/overview.md": "1 hop(s) from a page with stale citations",
        "wiki/refund-faq.md": "1 hop(s) from a page with stale citations",
        "wiki/billing.md": "2 hop(s) from a page with stale citations",
    }
    run = detail.run
    assert (run.build_id, run.revision_id, run.pages_examined, run.documents_examined) == (
        build,
        current,
        9,
        3,
    )
    assert (run.findings_total, run.findings_warning, run.findings_info) == (10, 5, 5)
    assert "blocks nothing" in detail.note

    # And the run is stored: listed newest first and read back with the same findings
    listed = lint_service.list_runs(db, principal, PageParams(limit=10), source)
    assert (listed.total, [r.id for r in listed.items]) == (1, [run.id])
    again = lint_service.get_run(db, principal, run.id)
    assert again.run == run
    assert {(f.rule, f.page_path, f.related_path) for f in again.findings} == got

    # And lint changed nothing: the build is still active
    with db.tenant(principal.account_id) as conn:
        active = conn.execute(
            "SELECT active_build_id FROM knowledge_sources WHERE id = %s", (source,)
        ).fetchone()
    assert active["active_build_id"] == build


def test_a_clean_wiki_has_no_findings_and_a_second_run_is_a_second_record(account, principal):
    actor = actor_of(account)
    source = make_source(actor, "clean-kb")
    rev = push(actor, source, {"docs/a.md": "# A\n\nAlpha.\n"})
    make_build(
        actor,
        source,
        rev,
        [
            PageSpec(INDEX, "index", links=[("wiki/a.md", "references"), ("wiki/b.md", "references")]),
            PageSpec("wiki/a.md", "summary", cites=["docs/a.md"], links=[("wiki/b.md", "references")]),
            PageSpec("wiki/b.md", "concept", cites=["docs/a.md"], links=[("wiki/a.md", "references")]),
        ],
    )
    db = get_database()
    runs = [lint_service.lint_active_wiki(db, principal, source) for _ in range(2)]
    assert [r.findings for r in runs] == [[], []]
    assert runs[0].run.id != runs[1].run.id
    listed = lint_service.list_runs(db, principal, PageParams(limit=10), source)
    assert listed.total == 2
    # A run finishes no earlier than it starts (issue 23: finished_at was the transaction's start), as stored,
    # listed and read back
    assert [r.run.started_at <= r.run.finished_at for r in runs] == [True, True]
    assert [r.started_at <= r.finished_at for r in listed.items] == [True, True]
    again = lint_service.get_run(db, principal, runs[0].run.id).run
    assert (again.started_at, again.finished_at) == (runs[0].run.started_at, runs[0].run.finished_at)


def test_lint_needs_an_active_build_and_a_known_source(account, principal):
    actor = actor_of(account)
    source = make_source(actor, "no-build-kb")
    push(actor, source, {"docs/a.md": "# A\n"})
    db = get_database()
    with pytest.raises(Conflict, match="no active wiki build"):
        lint_service.lint_active_wiki(db, principal, source)
    with pytest.raises(NotFound):
        lint_service.lint_active_wiki(db, principal, UUID(int=7))
    with pytest.raises(NotFound):
        lint_service.get_run(db, principal, UUID(int=7))


def test_a_page_whose_frontmatter_the_loader_refuses_is_a_stored_finding_and_the_run_completes(
    account, principal
):
    # Issue 20: a model wrote `superseded_by: 2024-13-45`; reading it raised ValueError and broke every lint run
    actor = actor_of(account)
    source = make_source(actor, "hostile-front-kb")
    rev = push(actor, source, {"docs/a.md": "# A\n\nAlpha.\n"})
    make_build(
        actor,
        source,
        rev,
        [
            PageSpec(INDEX, "index", links=[("wiki/a.md", "references"), ("wiki/b.md", "references")]),
            PageSpec(
                "wiki/a.md",
                "summary",
                "---\nsuperseded_by: 2024-13-45\n---\n# A\n",
                cites=["docs/a.md"],
                links=[("wiki/b.md", "references")],
            ),
            PageSpec("wiki/b.md", "concept", cites=["docs/a.md"], links=[("wiki/a.md", "references")]),
        ],
    )
    db = get_database()
    detail = lint_service.lint_active_wiki(db, principal, source)
    assert [(f.rule, f.severity, f.page_path) for f in detail.findings] == [
        ("unreadable_frontmatter", "warning", "wiki/a.md")
    ]
    assert "superseded_by: is not a valid YAML timestamp (line 2)" in detail.findings[0].detail
    assert lint_service.get_run(db, principal, detail.run.id).findings == detail.findings
