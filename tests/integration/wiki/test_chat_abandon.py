"""Abandoning a chat call (llm ``complete(..., abandon=...)``) against the fake provider on loopback: the call in
flight is cut off (the provider sees its connection closed), raises ``Abandoned`` (retryable, no usage), and the
same client makes the next call normally. Events, never sleeps."""

from __future__ import annotations

import threading

import pytest

from agentmate.llm import Abandoned, ChatError
from tests.integration.wiki.corpus import client

MESSAGES = [{"role": "user", "content": '<<<DOCUMENT path="docs/a.md">>>\n# A\n\nAlpha.\n<<<END DOCUMENT>>>'}]


def test_an_abandoned_call_closes_its_connection_and_the_client_stays_usable(fake):
    # Given a call the provider holds
    fake.push("hold")
    stop = threading.Event()
    chat = client(fake)
    errors: list[ChatError] = []

    def call() -> None:
        try:
            chat.complete(MESSAGES, abandon=stop.is_set)
        except ChatError as exc:
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    assert fake.held.wait(30)
    # When the caller gives it up
    stop.set()
    thread.join(30)
    # Then the call raised Abandoned (retryable, nothing spent) and the provider saw the connection closed
    assert not thread.is_alive()
    assert [(type(e), e.retryable, e.usage.total_tokens) for e in errors] == [(Abandoned, True, 0)]
    assert fake.hung_up.wait(30)
    # And the next call on the same client is answered
    try:
        assert chat.complete(MESSAGES, abandon=threading.Event().is_set).usage.total_tokens > 0
    finally:
        chat.close()


def test_a_call_abandoned_before_it_starts_never_reaches_the_provider(fake):
    chat = client(fake)
    try:
        with pytest.raises(Abandoned):
            chat.complete(MESSAGES, abandon=lambda: True)
    finally:
        chat.close()
    assert fake.requests == []
