from __future__ import annotations

from uuid import UUID

import pytest

from agentmate.packages.service import Actor
from tests.fakes.chat_provider import FakeChatProvider


@pytest.fixture
def fake():
    with FakeChatProvider() as provider:
        yield provider


@pytest.fixture
def actor(account) -> Actor:
    return Actor(UUID(account.account_id), UUID(account.user_id))


@pytest.fixture
def other(other_account) -> Actor:
    return Actor(UUID(other_account.account_id), UUID(other_account.user_id))
