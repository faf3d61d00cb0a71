"""Property tests over what a provider controls (issue 20): any body and any Retry-After header value parse to a
reply or a clean ``ChatError``, never another exception, and every number that comes out is bounded."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentmate.llm import ChatError, ChatReply, Prices, parse_reply, parse_retry_after, token_count
from agentmate.llm.client import MAX_RETRY_AFTER_S, MAX_TOKENS_PER_CALL
from agentmate.llm.cost import MAX_COST_MICROS

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_count = (
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40) | st.floats() | st.text()
)
_completion = st.fixed_dictionaries(
    {
        "choices": st.lists(
            st.fixed_dictionaries(
                {
                    "finish_reason": st.none()
                    | st.sampled_from(["stop", "length", "tool_calls"])
                    | st.text(max_size=300),
                    "message": st.fixed_dictionaries({"content": st.none() | st.text() | _json}) | _json,
                }
            ),
            max_size=2,
        )
        | _json,
        "usage": st.fixed_dictionaries({"prompt_tokens": _count, "completion_tokens": _count}) | _json,
        "model": st.text(max_size=400) | _json,
    }
)


def _check(raw: bytes) -> None:
    try:
        reply = parse_reply(raw, model="configured", max_tokens=100)
    except ChatError as exc:
        usage = exc.usage
        assert isinstance(exc.reason, str) and exc.reason
    else:
        assert isinstance(reply, ChatReply) and isinstance(reply.text, str)
        assert reply.model and len(reply.model) <= 200 and "\x00" not in reply.model
        usage = reply.usage
    for n in (usage.prompt_tokens, usage.completion_tokens):
        assert type(n) is int and 0 <= n <= MAX_TOKENS_PER_CALL
    assert 0 <= usage.cost_micros(Prices(10**12, 10**12)) <= MAX_COST_MICROS


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_completion)
def test_any_completion_shaped_json_is_a_reply_or_a_chat_error(body):
    _check(json.dumps(body).encode())


@settings(max_examples=300)
@given(_json)
def test_any_json_value_is_a_reply_or_a_chat_error(body):
    _check(json.dumps(body).encode())


@settings(max_examples=300)
@given(st.binary(max_size=2000))
def test_any_bytes_are_a_reply_or_a_chat_error(raw):
    _check(raw)


def test_pathological_json_is_a_chat_error_not_a_crash():
    for raw in (
        b"[" * 100_000 + b"]" * 100_000,  # nesting past the recursion limit
        b'{"usage": {"prompt_tokens": ' + b"9" * 5000 + b"}}",  # an integer past int's digit limit
        '{"choices": "\udcff"}'.encode("utf-8", "surrogatepass"),
        b'{"usage": {"prompt_tokens": 1e999}, "choices": []}',
    ):
        _check(raw)


@settings(max_examples=500)
@given(
    st.text(max_size=200)
    | st.from_regex(r"\s*-?[0-9]{1,30}(\.[0-9]+)?([eE][+-]?[0-9]{1,4})?\s*", fullmatch=True)
)
def test_any_retry_after_header_is_ignored_or_a_bounded_delay(value):
    delay = parse_retry_after(value)
    assert delay is None or (math.isfinite(delay) and 0.0 <= delay <= MAX_RETRY_AFTER_S)


@settings(max_examples=200)
@given(st.integers(min_value=-(2**40), max_value=2**40))
def test_any_http_date_is_a_bounded_delay(offset):
    import email.utils
    import time

    now = time.time()
    try:
        header = email.utils.formatdate(now + offset, usegmt=True)
    except (OverflowError, ValueError, OSError):
        return
    delay = parse_retry_after(header, now=now)
    assert delay is not None and 0.0 <= delay <= MAX_RETRY_AFTER_S


@given(_count)
def test_a_token_count_is_a_bounded_non_negative_int(value):
    n = token_count(value)
    assert type(n) is int and 0 <= n <= MAX_TOKENS_PER_CALL
