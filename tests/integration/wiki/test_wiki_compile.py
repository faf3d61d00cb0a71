"""The compile pipeline against the fake provider: enqueue, compile, pages with citations and typed links, the
platform's index and log, reuse by input identity, retry classes, the check gate, activation and rollback."""

from __future__ import annotations

import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict, NotFound, NotImplementedYet
from agentmate.core.pagination import PageParams
from agentmate.knowledge.wiki import service as wiki
from agentmate.knowledge.wiki.schemas import CompileRequest
from agentmate.llm.settings import ModelSettings as Settings
from tests.integration.wiki.corpus import compile_now, documents, enqueue, make_source, run

ALL = PageParams(limit=100, offset=0)


def _pages(actor, build_id):
    return {p.path: p for p in wiki.list_pages(get_database(), actor, build_id, ALL).items}


def _events(actor, build_id):
    return [e.event_type for e in wiki.events(get_database(), actor, build_id, ALL).items]


def test_a_full_compile_queues_then_writes_cited_linked_pages_and_activates(actor, fake):
    src = make_source(actor, "full", documents(3))
    queued = enqueue(actor, fake, src)
    build = queued.result.build
    assert (queued.queued, build.status, build.check_status, build.mode) == (
        True,
        "queued",
        "pending",
        "full",
    )
    assert not fake.requests, "nothing is compiled in the request"
    assert wiki.REVIEW_WARNING in queued.result.warnings
    assert (build.compiler_version, build.prompt_version, build.model) == (
        "wiki-compiler-2",
        "wiki-prompt-3",
        "fake-compiler",
    )
    assert build.reviewer_independence == "cross_provider"

    assert run(actor, fake, build.id).status == "succeeded"
    done = wiki.get_build(get_database(), actor, build.id)
    assert (done.status, done.check_status, done.is_active, done.attempts) == ("succeeded", "passed", True, 1)
    assert (done.input_tokens, done.output_tokens) == (
        fake.usage[0]["prompt_tokens"],
        fake.usage[0]["completion_tokens"],
    )
    assert (done.cost_micros, done.cost_priced) == (0, False)
    pages = _pages(actor, build.id)
    assert sorted(pages) == [
        "wiki/docs-topic-00.md",
        "wiki/docs-topic-01.md",
        "wiki/docs-topic-02.md",
        "wiki/index.md",
        "wiki/log.md",
        "wiki/overview.md",
    ]
    assert (done.pages_written, done.pages_reused) == (4, 0)

    page = wiki.get_page(get_database(), actor, build.id, "wiki/docs-topic-01.md")
    assert [c.document_path for c in page.citations] == ["docs/topic-01.md"]
    assert page.citations[0].document_id is not None
    assert [(x.path, x.link_type) for x in page.links_out] == [("wiki/docs-topic-02.md", "references")]
    assert sorted(x.path for x in page.links_in) == [
        "wiki/docs-topic-00.md",
        "wiki/index.md",
        "wiki/overview.md",
    ]

    index = wiki.get_page(get_database(), actor, build.id, "wiki/index.md")
    assert sorted(x.path for x in index.links_out) == [
        "wiki/docs-topic-00.md",
        "wiki/docs-topic-01.md",
        "wiki/docs-topic-02.md",
        "wiki/overview.md",
    ]
    log = wiki.get_page(get_database(), actor, build.id, "wiki/log.md")
    assert "page_written wiki/docs-topic-00.md" in log.content and "build_succeeded" in log.content
    kinds = _events(actor, build.id)
    assert kinds[:2] == ["build_queued", "attempt_started"] and kinds[-3:] == [
        "check_passed",
        "build_succeeded",
        "build_activated",
    ]


def test_the_same_input_identity_returns_the_existing_build_unless_forced(actor, fake):
    src = make_source(actor, "reuse", documents(2))
    first = compile_now(actor, fake, src)
    again = enqueue(actor, fake, src)
    assert (again.queued, again.result.build.id) == (False, first.id)
    forced = enqueue(actor, fake, src, force=True)
    assert forced.queued and forced.result.build.id != first.id and forced.result.build.forced
    # a queued build with the same identity is returned too: no second queue entry
    assert enqueue(actor, fake, src).result.build.id in (first.id, forced.result.build.id)


def test_no_compiler_model_is_501_and_a_source_without_revision_is_409(actor, fake):
    src = make_source(actor, "nocompiler", documents(1))
    with pytest.raises(NotImplementedYet):
        wiki.compile_source(
            get_database(), actor, CompileRequest(source_id=src), settings=Settings(jwt_secret="x" * 40)
        )
    from agentmate.knowledge.sources import service as knowledge
    from agentmate.packages.schemas import SourceInput

    empty = knowledge.register_source(
        get_database(), actor, SourceInput(type="local", repository_url="file:///kb", package_path="kb/empty")
    ).source
    with pytest.raises(Conflict) as err:
        enqueue(actor, fake, empty.id)
    assert err.value.extra["reason"] == "no_active_revision"


@pytest.mark.parametrize(
    "behaviour",
    [
        {"kind": "status", "code": 429},
        {"kind": "status", "code": 503},
        {"kind": "status", "code": 408},
        "drop",
        "garbage",
    ],
)
def test_retryable_failures_requeue_the_build_and_record_each_attempt(actor, fake, behaviour):
    src = make_source(actor, "retry", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push(behaviour)
    assert run(actor, fake, build_id).status == "retry"
    mid = wiki.get_build(get_database(), actor, build_id)
    assert (mid.status, mid.attempts, len(mid.attempt_usage)) == ("queued", 1, 1)
    assert mid.attempt_usage[0].outcome == "retry" and mid.error
    assert run(actor, fake, build_id).status == "succeeded"
    done = wiki.get_build(get_database(), actor, build_id)
    assert (done.status, done.attempts, [u.outcome for u in done.attempt_usage]) == (
        "succeeded",
        2,
        ["retry", "succeeded"],
    )


def test_retryable_failures_give_up_after_max_attempts(actor, fake):
    src = make_source(actor, "giveup", documents(1))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push(*[{"kind": "status", "code": 500}] * 3)
    assert [run(actor, fake, build_id).status for _ in range(3)] == ["retry", "retry", "failed"]
    done = wiki.get_build(get_database(), actor, build_id)
    assert done.status == "failed" and done.error.startswith("gave up after 3 attempts")
    assert len(done.attempt_usage) == 3
    assert run(actor, fake, build_id).status == "skipped"
    assert len(fake.requests) == 3


@pytest.mark.parametrize(
    "behaviour,needle",
    [
        ({"kind": "status", "code": 400}, "HTTP 400"),
        ({"kind": "status", "code": 401}, "HTTP 401"),
        ("truncate", "truncated by max_tokens"),
        ("invalid_json", "not valid JSON"),
        ("no_pages", "no pages"),
    ],
)
def test_non_retryable_failures_fail_the_build_at_once_and_write_no_pages(actor, fake, behaviour, needle):
    src = make_source(actor, "noretry", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push(behaviour)
    assert run(actor, fake, build_id).status == "failed"
    done = wiki.get_build(get_database(), actor, build_id)
    assert (done.status, done.attempts, done.is_active) == ("failed", 1, False)
    assert needle in done.error
    assert _pages(actor, build_id) == {}
    if behaviour == "truncate":
        assert done.output_tokens == fake.usage[-1]["completion_tokens"] > 0, (
            "a truncated reply's tokens are spent"
        )


@pytest.mark.parametrize(
    "behaviour,rule",
    [
        ("missing_citation", "citation_resolvable"),
        ("outside_link", "link_closed"),
        ("collide", "path_unique"),
        ("bad_kind", "page_kind_allowed"),
        ("bad_link_type", "link_type_allowed"),
        ("empty_page", "content_non_empty"),
        ("uncited", "citation_required"),
        ({"kind": "oversize", "chars": 20_001}, "page_size"),
    ],
)
def test_each_check_rule_the_model_can_break_fails_the_build_with_no_pages(actor, fake, behaviour, rule):
    src = make_source(actor, "check", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push(behaviour)
    outcome = run(actor, fake, build_id)
    assert outcome.status == "failed"
    done = wiki.get_build(get_database(), actor, build_id)
    assert (done.status, done.check_status, done.is_active) == ("failed", "failed", False)
    assert rule in [f.rule for f in done.check_failures]
    assert _pages(actor, build_id) == {}
    assert "check_failed" in _events(actor, build_id)
    assert len(fake.requests) == 1, "a check failure is not retried"


def test_a_model_page_on_a_reserved_path_is_dropped_and_recorded(actor, fake):
    src = make_source(actor, "reserved", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    fake.push("reserved_path")
    assert run(actor, fake, build_id).status == "succeeded"
    index = wiki.get_page(get_database(), actor, build_id, "wiki/index.md")
    assert "My index" not in index.content and index.title == "Index"
    events = wiki.events(get_database(), actor, build_id, ALL).items
    assert [(e.event_type, e.page_path) for e in events if e.event_type == "page_rejected"] == [
        ("page_rejected", "wiki/index.md")
    ]


def test_a_build_shrinking_the_wiki_implausibly_fails_page_count_drift(actor, fake):
    src = make_source(actor, "drift", documents(6))
    compile_now(actor, fake, src)
    build_id = enqueue(actor, fake, src, force=True).result.build.id
    fake.push({"kind": "few_pages", "keep": 1})
    assert run(actor, fake, build_id).status == "failed"
    done = wiki.get_build(get_database(), actor, build_id)
    assert [f.rule for f in done.check_failures][:1] == ["page_count_drift"]


def test_activate_rolls_back_and_returns_the_previous_build(actor, fake):
    src = make_source(actor, "rollback", documents(2))
    first = compile_now(actor, fake, src)
    second = compile_now(actor, fake, src, force=True)
    assert wiki.get_build(get_database(), actor, second.id).is_active
    back = wiki.activate(get_database(), actor, first.id)
    assert (back.active_build_id, back.previous_build_id) == (first.id, second.id)
    assert wiki.get_build(get_database(), actor, first.id).is_active
    undo = wiki.activate(get_database(), actor, second.id)
    assert undo.previous_build_id == first.id


def test_a_failed_build_cannot_be_activated(actor, fake):
    src = make_source(actor, "noactivate", documents(2))
    build_id = enqueue(actor, fake, src).result.build.id
    with pytest.raises(Conflict):
        wiki.activate(get_database(), actor, build_id)  # still queued
    fake.push("outside_link")
    run(actor, fake, build_id)
    with pytest.raises(Conflict) as err:
        wiki.activate(get_database(), actor, build_id)
    assert err.value.extra["reason"] == "not_activatable"


def test_activate_false_keeps_the_serving_build(actor, fake):
    src = make_source(actor, "noauto", documents(2))
    first = compile_now(actor, fake, src)
    second = compile_now(actor, fake, src, force=True, activate=False)
    assert second.status == "succeeded" and not second.is_active
    assert wiki.get_build(get_database(), actor, first.id).is_active


def test_diff_compares_by_path_and_content_hash_against_the_previous_succeeded_build(actor, fake):
    src = make_source(actor, "diff", documents(3))
    first = compile_now(actor, fake, src)
    from tests.integration.wiki.corpus import push

    push(
        actor,
        src,
        documents(
            3, changed={"docs/topic-01.md": "# Topic 01\n\nRewritten rules.\n"}, drop=("docs/topic-02.md",)
        )
        | {"docs/new.md": "# New\n\nA new page.\n"},
    )
    second = compile_now(actor, fake, src)
    d = wiki.diff(get_database(), actor, second.id, None)
    assert d.from_build_id == first.id
    assert [e.path for e in d.added] == ["wiki/docs-new.md"]
    assert [e.path for e in d.removed] == ["wiki/docs-topic-02.md"]
    assert "wiki/docs-topic-01.md" in [e.path for e in d.changed]
    assert wiki.diff(get_database(), actor, first.id, None).from_build_id is None


def test_builds_list_newest_first_and_reads_are_tenant_scoped(actor, other, fake):
    src = make_source(actor, "tenant", documents(1))
    first = compile_now(actor, fake, src)
    second = compile_now(actor, fake, src, force=True)
    listed = wiki.list_builds(get_database(), actor, src, ALL)
    assert [b.id for b in listed.items] == [second.id, first.id] and listed.total == 2
    db = get_database()
    for call in (
        lambda: wiki.get_build(db, other, first.id),
        lambda: wiki.list_pages(db, other, first.id, ALL),
        lambda: wiki.get_page(db, other, first.id, "wiki/index.md"),
        lambda: wiki.events(db, other, first.id, ALL),
        lambda: wiki.diff(db, other, first.id, None),
        lambda: wiki.activate(db, other, first.id),
        lambda: wiki.list_builds(db, other, src, ALL),
        lambda: enqueue(other, fake, src),
    ):
        with pytest.raises(NotFound):
            call()
    assert wiki.list_builds(db, other, None, ALL).total == 0
