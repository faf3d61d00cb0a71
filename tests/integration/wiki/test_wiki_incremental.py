"""Incremental compilation: refusal without a parent or with different provenance, the unchanged revision, the
impact set from the database, carried-over pages, the two incremental-only check rules, and token savings."""

from __future__ import annotations

import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict
from agentmate.core.pagination import PageParams
from agentmate.knowledge.wiki import service as wiki
from tests.integration.wiki.corpus import compile_now, documents, enqueue, make_source, push, run

ALL = PageParams(limit=100, offset=0)
CHANGED = {
    "docs/topic-03.md": "# Topic 03\n\nTopic 03 now says billing rule three changed. "
    "See [the next topic](topic-04.md).\n"
}


def test_incremental_without_a_parent_is_refused_naming_the_reason(actor, fake):
    src = make_source(actor, "inc-noparent", documents(2))
    with pytest.raises(Conflict) as err:
        enqueue(actor, fake, src, mode="incremental")
    assert err.value.extra["reason"] == "no_parent" and "mode=full" in err.value.detail


def test_incremental_over_a_parent_from_another_model_is_refused(actor, fake):
    src = make_source(actor, "inc-model", documents(2))
    compile_now(actor, fake, src)
    with pytest.raises(Conflict) as err:
        enqueue(actor, fake, src, mode="incremental", model="another-model")
    assert (err.value.extra["reason"], err.value.extra["differs"]) == ("provenance_differs", ["model"])


def test_an_unchanged_revision_returns_the_parent_build(actor, fake):
    src = make_source(actor, "inc-same", documents(2))
    parent = compile_now(actor, fake, src)
    again = enqueue(actor, fake, src, mode="incremental")
    assert (again.queued, again.result.build.id) == (False, parent.id)


def test_one_changed_document_recompiles_its_impact_set_and_carries_the_rest(actor, fake):
    src = make_source(actor, "inc-one", documents(8))
    full = compile_now(actor, fake, src)
    full_output = full.output_tokens
    push(actor, src, documents(8, changed=CHANGED))
    build = compile_now(actor, fake, src, mode="incremental")
    assert (build.status, build.mode, build.parent_build_id, build.is_active) == (
        "succeeded",
        "incremental",
        full.id,
        True,
    )
    assert build.impact == {
        "documents_added": [],
        "documents_changed": ["docs/topic-03.md"],
        "documents_removed": [],
        "pages_citing_changes": ["wiki/docs-topic-03.md"],
        "pages_linking_to_those": ["wiki/docs-topic-02.md", "wiki/overview.md"],
        "scheduled": ["wiki/docs-topic-02.md", "wiki/docs-topic-03.md", "wiki/overview.md"],
    }
    assert (build.pages_written, build.pages_reused) == (3, 6)
    assert build.output_tokens < full_output
    prompt = fake.requests[-1]["body"]["messages"][1]["content"]
    assert 'path="docs/topic-03.md"' in prompt and 'path="docs/topic-05.md"' not in prompt
    pages = {p.path: p for p in wiki.list_pages(get_database(), actor, build.id, ALL).items}
    assert pages["wiki/docs-topic-05.md"].derived_from_build_id == full.id
    assert pages["wiki/docs-topic-03.md"].derived_from_build_id is None
    carried = wiki.get_page(get_database(), actor, build.id, "wiki/docs-topic-05.md")
    assert (
        carried.derived_from_build_id == full.id and carried.citations[0].document_path == "docs/topic-05.md"
    )
    d = wiki.diff(get_database(), actor, build.id, None)
    assert "wiki/docs-topic-03.md" in [e.path for e in d.changed]
    assert "wiki/docs-topic-05.md" not in [e.path for e in d.changed]


def test_a_removed_document_deletes_its_page(actor, fake):
    src = make_source(actor, "inc-remove", documents(4))
    compile_now(actor, fake, src)
    push(actor, src, documents(4, drop=("docs/topic-02.md",)))
    build = compile_now(actor, fake, src, mode="incremental")
    assert build.status == "succeeded", build.check_failures
    pages = {p.path for p in wiki.list_pages(get_database(), actor, build.id, ALL).items}
    assert "wiki/docs-topic-02.md" not in pages and "wiki/docs-topic-03.md" in pages


@pytest.mark.parametrize(
    "behaviour,rule",
    [
        ("skip_rewrite", "incremental_coverage"),
        ("rewrite_extra", "incremental_scope"),
        ("delete_existing", "page_count_drift"),
    ],
)
def test_incremental_check_rules_fail_the_build(actor, fake, behaviour, rule):
    src = make_source(actor, f"inc-{behaviour}", documents(6))
    parent = compile_now(actor, fake, src)
    push(actor, src, documents(6, changed=CHANGED))
    build_id = enqueue(actor, fake, src, mode="incremental").result.build.id
    fake.push(behaviour)
    assert run(actor, fake, build_id).status == "failed"
    build = wiki.get_build(get_database(), actor, build_id)
    assert rule in [f.rule for f in build.check_failures]
    assert wiki.list_pages(get_database(), actor, build_id, ALL).total == 0
    assert wiki.get_build(get_database(), actor, parent.id).is_active
