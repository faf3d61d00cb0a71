"""Incremental compiles are refused, not downgraded, when the parent build came from a different prompt, compiler
or profile (spec/001): carrying its pages forward would stamp this build's provenance on text that configuration
never produced. (A different model: test_wiki_incremental.py.) Each case is a deployment that moved on since the
parent was compiled: a new prompt or compiler version, or new platform rules for the profile."""

from __future__ import annotations

import pytest

from agentmate.core.errors import Conflict
from agentmate.knowledge.wiki import profiles
from agentmate.knowledge.wiki import service as wiki
from agentmate.knowledge.wiki.profiles import DEFAULT_PROFILE, ProfileSettings
from tests.integration.wiki.corpus import compile_now, documents, enqueue, make_source, push

CHANGED = {"docs/topic-01.md": "# Topic 01\n\nTopic 01 now says something else.\n"}


def _refused(actor, fake, src) -> Conflict:
    with pytest.raises(Conflict) as err:
        enqueue(actor, fake, src, mode="incremental")
    return err.value


@pytest.mark.parametrize(
    ("constant", "field", "value"),
    [
        ("PROMPT_VERSION", "prompt_version", "wiki-prompt-next"),
        ("COMPILER_VERSION", "compiler_version", "wiki-compiler-next"),
    ],
)
def test_incremental_over_a_parent_from_another_prompt_or_compiler_is_refused(
    actor, fake, monkeypatch, constant, field, value
):
    # Given a parent build, then changed sources and a deployment with a new prompt (or compiler) version
    src = make_source(actor, f"inc-{field}", documents(3))
    parent = compile_now(actor, fake, src)
    push(actor, src, documents(3, changed=CHANGED))
    monkeypatch.setattr(wiki, constant, value)
    # When an incremental compile is requested
    err = _refused(actor, fake, src)
    # Then it is refused naming what differs and the way out, and nothing was queued
    assert (err.extra["reason"], err.extra["differs"], err.extra["parent_build_id"]) == (
        "provenance_differs",
        [field],
        str(parent.id),
    )
    assert "mode=full" in err.detail and field in err.detail
    assert len(fake.requests) == 1
    # And a full compile under the new version is accepted
    assert enqueue(actor, fake, src, mode="full").queued


def test_incremental_over_a_parent_checked_under_other_profile_rules_is_refused(actor, fake, monkeypatch):
    # Given a parent build, then changed sources and new platform rules for its profile (a new profile version)
    src = make_source(actor, "inc-profile", documents(3))
    parent = compile_now(actor, fake, src)
    push(actor, src, documents(3, changed=CHANGED))
    monkeypatch.setitem(profiles.PLATFORM_PROFILES, DEFAULT_PROFILE, ProfileSettings(max_pages=150))
    # When an incremental compile is requested, then it is refused naming the profile version
    err = _refused(actor, fake, src)
    assert (err.extra["reason"], err.extra["differs"], err.extra["parent_build_id"]) == (
        "provenance_differs",
        ["profile_version"],
        str(parent.id),
    )
    # And the full compile records the new profile version
    build = enqueue(actor, fake, src, mode="full").result.build
    assert (build.profile.name, build.profile.version) == (DEFAULT_PROFILE, parent.profile.version + 1)
