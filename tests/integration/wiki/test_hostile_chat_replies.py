"""The chat client (agentmate.llm) against a hostile OpenAI-compatible provider on loopback (issue 20): every reply is data. A
Retry-After is honoured only as RFC 9110 spells it and clamped; token counts are clamped non-negative integers
(and the cost is computed from the clamped counts); a reply larger than the cap derived from max_tokens is
abandoned near the cap instead of being read whole."""

from __future__ import annotations

import email.utils
import time

import pytest

from agentmate.llm import (
    MAX_COST_MICROS,
    ChatClient,
    ChatConfig,
    HttpStatusError,
    Prices,
    ReplyTooLarge,
    reply_cap_bytes,
)
from agentmate.llm.client import MAX_RETRY_AFTER_S, MAX_TOKENS_PER_CALL

MESSAGES = [
    {
        "role": "user",
        "content": 'mode: full\nDOCUMENTS\n<<<DOCUMENT path="docs/a.md">>>\n# A\nAlpha.\n<<<END DOCUMENT>>>',
    }
]
MAX_TOKENS = 100


@pytest.fixture
def client(fake):
    c = ChatClient(
        ChatConfig(
            base_url=fake.base_url,
            api_key="sk-k",
            model="fake-compiler",
            max_tokens=MAX_TOKENS,
            timeout_s=20,
            prices=Prices(1000, 2000),
        )
    )
    yield c
    c.close()


def _http_date(seconds_from_now: float) -> str:
    return email.utils.formatdate(time.time() + seconds_from_now, usegmt=True)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("1e300", None),
        ("inf", None),
        ("-inf", None),
        ("nan", None),
        ("-5", None),
        ("1.5", None),
        ("soon, please", None),
        ("", None),
        ("\u00b2", None),  # "²" is a Unicode digit, not delay-seconds
        ("120", 120.0),
        ("0", 0.0),
        ("9" * 400, MAX_RETRY_AFTER_S),  # huge digits: clamped, not an overflow
        ("Thu, 01 Jan 1970 00:00:00 GMT", 0.0),  # a date in the past: now
    ],
)
def test_retry_after_is_delay_seconds_or_an_http_date_and_anything_else_is_ignored(
    client, fake, header, expected
):
    fake.push({"kind": "status", "code": 429, "retry_after": header})
    with pytest.raises(HttpStatusError) as caught:
        client.complete(MESSAGES)
    assert caught.value.retryable and caught.value.retry_after == expected


def test_an_http_date_retry_after_becomes_seconds_from_now_clamped_to_a_day(client, fake):
    fake.push(
        {"kind": "status", "code": 503, "retry_after": _http_date(300)},
        {"kind": "status", "code": 503, "retry_after": _http_date(10 * 86400)},
    )
    with pytest.raises(HttpStatusError) as soon:
        client.complete(MESSAGES)
    with pytest.raises(HttpStatusError) as far:
        client.complete(MESSAGES)
    assert soon.value.retry_after is not None and 200 <= soon.value.retry_after <= 300
    assert far.value.retry_after == MAX_RETRY_AFTER_S


@pytest.mark.parametrize(
    ("reported", "counted"),
    [
        (10**30, MAX_TOKENS_PER_CALL),
        (-7, 0),
        ("12", 0),
        (12.5, 0),
        (12.0, 12),
        (True, 0),
        (None, 0),
        (float("1e300"), MAX_TOKENS_PER_CALL),
    ],
)
def test_token_counts_are_clamped_non_negative_integers_and_cost_follows_the_clamped_count(
    client, fake, reported, counted
):
    fake.push({"kind": "compile", "usage": {"completion_tokens": reported}})
    reply = client.complete(MESSAGES)
    assert reply.usage.completion_tokens == counted
    cost = reply.usage.cost_micros(Prices(1000, 2000))
    assert cost == min(reply.usage.prompt_tokens + 2 * counted, MAX_COST_MICROS)


def test_a_cost_never_exceeds_its_stated_maximum_whatever_the_prices():
    from agentmate.llm import cost_micros

    assert cost_micros(MAX_TOKENS_PER_CALL, MAX_TOKENS_PER_CALL, Prices(10**15, 10**15)) == MAX_COST_MICROS


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_150_mb_reply_is_abandoned_near_the_cap_not_read_whole(client, fake, chunked):
    # Given a provider that ignores max_tokens and streams a 150 MB reply
    size = 150 * 1024 * 1024
    fake.push({"kind": "huge", "bytes": size, "chunked": chunked})
    # When the client asks for a completion
    with pytest.raises(ReplyTooLarge) as caught:
        client.complete(MESSAGES)
    # Then it is a non-retryable provider error naming the cap
    cap = reply_cap_bytes(MAX_TOKENS)
    assert not caught.value.retryable and str(cap) in caught.value.reason
    # And the provider could write little more than the cap before the client hung up (what the loopback socket
    # buffers hold besides), nowhere near the whole reply
    deadline = time.monotonic() + 10
    while not fake.huge_sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fake.huge_sent and fake.huge_sent[0] < cap + 32 * 1024 * 1024 < size // 4


def test_a_reply_within_the_cap_is_read_whole(fake):
    # A legitimate reply just under the cap is not cut (the cap bounds hostile replies only)
    c = ChatClient(
        ChatConfig(base_url=fake.base_url, api_key="k", model="m", max_tokens=MAX_TOKENS, timeout_s=20)
    )
    try:
        fake.push({"kind": "oversize", "chars": reply_cap_bytes(MAX_TOKENS) - 64 * 1024})
        reply = c.complete(MESSAGES)
    finally:
        c.close()
    assert len(reply.text) > reply_cap_bytes(MAX_TOKENS) - 64 * 1024


def test_an_error_body_with_nul_characters_gives_a_storable_reason(client, fake):
    fake.push({"kind": "status", "code": 500, "body": "boom\u0000\u0000 internal"})
    with pytest.raises(HttpStatusError) as caught:
        client.complete(MESSAGES)
    assert "\x00" not in caught.value.reason and "boom" in caught.value.reason
