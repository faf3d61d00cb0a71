"""Validation signals (spec/001 K3.9, prior-art §4.10) against real logged searches: every attribution rule with a
signal made for it, idempotent reports, validation of every reference, summary, skill patterns and the sweep."""

from __future__ import annotations

from uuid import UUID

import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict, NotFound, ValidationFailed
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import validation_service as svc
from agentmate.knowledge.quality.schemas import SignalReport, SweepRequest
from agentmate.retrieval.service import record_query
from tests.integration.knowledge_quality.wikibuilds import PageSpec, actor_of, make_build, make_source, push

PAGE = "wiki/refunds.md"


@pytest.fixture
def principal(account) -> Principal:
    return Principal(UUID(account.account_id), UUID(account.user_id), "jwt")


@pytest.fixture
def kb(account):
    """A source with an active build holding one page."""
    actor = actor_of(account)
    source = make_source(actor, "signals-kb")
    revision = push(actor, source, {"docs/refunds.md": "# Refunds\n\nRefunds take 30 days.\n"})
    build = make_build(actor, source, revision, [PageSpec(PAGE, "summary", cites=["docs/refunds.md"])])
    return source, build


def search(principal: Principal, namespace: str, query: str, hits: int, source: UUID | None = None) -> UUID:
    """Log a search the way the knowledge and wiki searches do (retrieval_queries)."""
    refs = [{"rank": i + 1, "source_id": str(source) if source else None} for i in range(hits)]
    with get_database().tenant(principal.account_id) as conn:
        return record_query(
            conn,
            principal.account_id,
            user_id=principal.user_id,
            key_id=None,
            namespace=namespace,
            query=query,
            filters={},
            top_k=5,
            hits=refs,
            degraded=[],
        )


def report(principal, source, **kw):
    return svc.report(get_database(), principal, SignalReport(source_id=source, **kw))


def test_every_attribution_rule_fires_on_a_signal_made_for_it(principal, kb):
    source, build = kb
    # Searches of one question in both layers: nothing anywhere (a source gap) ...
    gap_wiki = search(principal, "knowledge_wiki", "Do you ship to Mars?", 0)
    search(principal, "knowledge", "  do you ship to MARS? ", 0)
    # ... the raw documents had it but the wiki returned nothing (a retrieval miss) ...
    miss_wiki = search(principal, "knowledge_wiki", "refund window", 0)
    search(principal, "knowledge", "refund window", 3, source)
    # ... the wiki returned a page; and a question only the raw layer was asked
    hit_wiki = search(principal, "knowledge_wiki", "how long do refunds take", 2, source)
    raw_only = search(principal, "knowledge", "refund fees", 0)

    cases = [
        ({"signal": "answer_adopted", "query_id": hit_wiki, "page_path": PAGE}, "unattributed", "positive"),
        ({"signal": "citation_verified"}, "unattributed", "positive"),
        ({"signal": "citation_abandoned", "page_path": PAGE}, "wiki_synthesis", "abandoned"),
        ({"signal": "citation_abandoned"}, "unattributed", "without a page_path"),
        ({"signal": "question_repeated", "page_path": PAGE}, "unattributed", "no query_id"),
        ({"signal": "query_rephrased", "query_id": gap_wiki}, "source_gap", "neither"),
        (
            {"signal": "answer_rewritten", "query_id": miss_wiki},
            "retrieval_miss",
            "raw documents had candidates",
        ),
        (
            {"signal": "question_repeated", "query_id": hit_wiki, "page_path": PAGE},
            "wiki_synthesis",
            "names it",
        ),
        ({"signal": "query_rephrased", "query_id": hit_wiki}, "unattributed", "does not name it"),
        (
            {"signal": "answer_rewritten", "query_id": raw_only, "page_path": PAGE},
            "unattributed",
            "wiki was not searched",
        ),
    ]
    for body, cause, basis in cases:
        got = report(principal, source, **body).value
        assert (got.cause, basis in got.attribution_basis) == (cause, True), (body, got)
        assert (got.origin, got.build_id) == ("reported", build)
    listed = svc.list_signals(get_database(), principal, PageParams(limit=100), source_id=source)
    assert listed.total == len(cases)
    assert {s.cause for s in listed.items} == {
        "unattributed",
        "wiki_synthesis",
        "source_gap",
        "retrieval_miss",
    }
    assert svc.list_signals(get_database(), principal, PageParams(limit=100), cause="source_gap").total == 1


def test_a_retried_report_is_recorded_once_and_a_reused_key_with_another_body_is_refused(principal, kb):
    source, _ = kb
    first = report(
        principal, source, signal="answer_adopted", page_path=PAGE, idempotency_key="task-1:adopted"
    )
    again = report(
        principal, source, signal="answer_adopted", page_path=PAGE, idempotency_key="task-1:adopted"
    )
    assert (first.replay, again.replay, again.value.id) == (False, True, first.value.id)
    with pytest.raises(Conflict, match="different signal"):
        report(principal, source, signal="answer_rewritten", page_path=PAGE, idempotency_key="task-1:adopted")
    assert svc.list_signals(get_database(), principal, PageParams(limit=10), source_id=source).total == 1


def test_every_reference_in_a_report_is_checked_and_all_bad_fields_are_named(principal, kb, other_account):
    source, build = kb
    foreign = Principal(UUID(other_account.account_id), UUID(other_account.user_id), "jwt")
    foreign_query = search(foreign, "knowledge", "refund window", 1)
    memory_query = search(principal, "memory", "refund window", 1)
    with pytest.raises(ValidationFailed) as err:
        report(
            principal,
            source,
            signal="question_repeated",
            query_id=foreign_query,
            page_path="wiki/nope.md",
            skill_version_id=UUID(int=3),
        )
    assert {e.field for e in err.value.errors} == {"query_id", "page_path", "skill_version_id"}
    with pytest.raises(ValidationFailed) as err:
        report(principal, source, signal="question_repeated", query_id=memory_query)
    assert [e.field for e in err.value.errors] == ["query_id"]
    other_source = make_source(actor_of(other_account), "foreign-kb")
    with pytest.raises(NotFound):
        report(principal, other_source, signal="answer_adopted")
    own_other = make_source(actor_of_principal(principal), "second-kb")
    with pytest.raises(ValidationFailed) as err:
        report(principal, own_other, signal="answer_adopted", build_id=build)
    assert [e.field for e in err.value.errors] == ["build_id"]
    assert svc.list_signals(get_database(), principal, PageParams(limit=10)).total == 0


def actor_of_principal(principal: Principal):
    from agentmate.packages.service import Actor

    return Actor(principal.account_id, principal.user_id)


def test_the_summary_counts_by_page_cause_and_signal_and_splits_reported_from_derived(principal, kb):
    source, _ = kb
    report(principal, source, signal="answer_adopted", page_path=PAGE)
    report(principal, source, signal="citation_abandoned", page_path=PAGE)
    report(principal, source, signal="question_repeated")
    s = svc.summary(get_database(), principal, source)
    assert (s.total, s.positive, s.negative, s.reported, s.derived) == (3, 1, 2, 3, 0)
    assert [(c.key, c.positive, c.negative) for c in s.by_page] == [(PAGE, 1, 1)]
    assert [(c.key, c.negative) for c in s.by_cause] == [("unattributed", 1), ("wiki_synthesis", 1)]
    assert {c.key for c in s.by_signal} == {"answer_adopted", "citation_abandoned", "question_repeated"}
    assert "never a verdict" in s.note
    assert svc.summary(get_database(), principal, None).total == 3
    with pytest.raises(NotFound):
        svc.summary(get_database(), principal, UUID(int=9))


def test_skill_patterns_point_at_a_skill_only_when_its_negatives_span_sources(client, account, principal, kb):
    source, _ = kb
    second = make_source(actor_of(account), "signals-kb-2")
    push(actor_of(account), second, {"docs/x.md": "# X\n"})
    versions = []
    for name in ("refund-helper", "shipping-helper"):
        r = client.post(
            "/api/skills/versions",
            json={"skill_name": name, "version": "1.0.0", "content": f"---\nname: {name}\n---\nDo it.\n"},
            headers=account.headers("skills:rw"),
        )
        assert r.status_code == 201, r.text
        versions.append(UUID(r.json()["id"]))
    broad, narrow = versions
    report(principal, source, signal="question_repeated", skill_version_id=broad)
    report(principal, second, signal="answer_rewritten", skill_version_id=broad)
    report(principal, source, signal="query_rephrased", skill_version_id=narrow, page_path=PAGE)
    report(principal, source, signal="answer_adopted", skill_version_id=narrow)
    got = svc.skill_patterns(get_database(), principal, PageParams(limit=10))
    assert [(p.skill_version_id, p.negative, p.positive, p.distinct_sources) for p in got.items] == [
        (broad, 2, 0, 2),
        (narrow, 1, 1, 1),
    ]
    assert "not proof" in got.items[0].interpretation and "too few" in got.items[1].interpretation
    assert got.total == 2 and "not what is wrong" in got.note


def test_the_sweep_derives_never_retrieved_once_a_day_from_searches_and_resolutions(
    client, principal, account
):
    actor = actor_of(account)
    wikis = {}
    for name in ("idle-kb", "searched-kb", "resolved-kb", "fresh-kb"):
        src = make_source(actor, name)
        rev = push(actor, src, {"docs/u.md": "# U\n"})
        # idle and searched have served for 30 days, fresh only since today
        wikis[name] = (
            src,
            make_build(
                actor,
                src,
                rev,
                [PageSpec("wiki/u.md", cites=["docs/u.md"])],
                age_days=0 if name == "fresh-kb" else 30,
            ),
        )
    source, build = wikis["idle-kb"]
    search(principal, "knowledge", "u", 1, wikis["searched-kb"][0])
    resolve(client, account, principal, wikis["resolved-kb"][0])
    first = svc.sweep(get_database(), principal, SweepRequest(idle_days=14))
    assert (first.recorded, first.already_recorded) == (1, 0)
    signal = first.items[0]
    assert (signal.source_id, signal.build_id, signal.signal, signal.origin, signal.cause) == (
        source,
        build,
        "never_retrieved",
        "derived",
        "unattributed",
    )
    again = svc.sweep(get_database(), principal, SweepRequest(idle_days=14))
    assert (again.recorded, again.already_recorded) == (0, 1)
    s = svc.summary(get_database(), principal, source)
    assert (s.total, s.derived, s.reported) == (1, 1, 0)
    assert svc.summary(get_database(), principal, None).total == 1


def resolve(client, account, principal: Principal, source: UUID) -> None:
    """A recorded resolution run that selected ``source`` (knowledge_resolution_runs + selections)."""
    r = client.post(
        "/api/skills/versions",
        json={
            "skill_name": "resolver",
            "version": "1.0.0",
            "content": "---\nname: resolver\n---\nResolve.\n",
        },
        headers=account.headers("skills:rw"),
    )
    assert r.status_code == 201, r.text
    with get_database().tenant(principal.account_id) as conn:
        run = conn.execute(
            """INSERT INTO knowledge_resolution_runs (account_id, skill_version_id, requirement_id,
                   contract_identity, discovery_fingerprint, discovery_status, fingerprint_current, content_hash)
               VALUES (%s, %s, 'req', 'contract', %s, 'matched', true, %s) RETURNING id""",
            (principal.account_id, r.json()["id"], "a" * 64, "b" * 64),
        ).fetchone()
        conn.execute(
            """INSERT INTO knowledge_resolution_selections (run_id, account_id, position, source_id)
                        VALUES (%s, %s, 0, %s)""",
            (run["id"], principal.account_id, source),
        )
