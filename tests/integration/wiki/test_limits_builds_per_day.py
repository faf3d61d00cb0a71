"""The builds-a-day quota (issue 25 §1, ``LIMIT_MAX_BUILDS_PER_DAY``): a compile that would queue a new build past
it is refused naming the quota; a compile answered by an existing build (same input identity) queues nothing and
is never refused."""

from __future__ import annotations

import pytest

from agentmate.core.errors import Conflict
from agentmate.core.limits.settings import get_limit_settings
from tests.integration.wiki.corpus import documents, enqueue, make_source


@pytest.fixture
def one_build_a_day(monkeypatch):
    monkeypatch.setenv("LIMIT_MAX_BUILDS_PER_DAY", "1")
    get_limit_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_limit_settings.cache_clear()


def test_a_new_build_past_the_daily_quota_is_refused_but_a_reused_one_is_returned(
    actor, fake, one_build_a_day
):
    src = make_source(actor, "quota-a", documents(2))
    first = enqueue(actor, fake, src)
    assert first.result.queued
    # The same request again is answered by the queued build: nothing new, never refused
    again = enqueue(actor, fake, src)
    assert not again.result.queued and again.result.build.id == first.result.build.id
    # A forced build would queue a second one today
    with pytest.raises(Conflict) as refused:
        enqueue(actor, fake, src, force=True)
    assert refused.value.extra == {"limit": "max_builds_per_day", "limit_value": 1, "used": 1}
