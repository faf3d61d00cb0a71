"""The chat completions client against the fake provider on loopback: replies, usage, cost, and the retry class
of every failure (spec/001's table)."""

from __future__ import annotations

import pytest

from agentmate.llm import (
    ChatClient,
    ChatConfig,
    HttpStatusError,
    Prices,
    TransportError,
    Truncated,
    config_from_settings,
    independence,
)
from agentmate.llm.settings import ModelSettings as Settings
from tests.fakes.chat_provider import FakeChatProvider

MESSAGES = [
    {
        "role": "user",
        "content": 'mode: full\nDOCUMENTS\n<<<DOCUMENT path="docs/a.md">>>\n# A\nAlpha.\n<<<END DOCUMENT>>>',
    }
]
SECRET = "sk-test-secret-value"


@pytest.fixture
def fake():
    with FakeChatProvider() as provider:
        yield provider


@pytest.fixture
def client(fake):
    c = ChatClient(
        ChatConfig(
            base_url=fake.base_url,
            api_key=SECRET,
            model="fake-compiler",
            max_tokens=100,
            timeout_s=5,
            prices=Prices(1000, 2000),
        )
    )
    yield c
    c.close()


def test_a_reply_carries_text_finish_reason_usage_and_model(client, fake):
    reply = client.complete(MESSAGES)
    assert reply.finish_reason == "stop"
    assert reply.model == "fake-compiler"
    assert '"wiki/docs-a.md"' in reply.text
    assert reply.usage == fake_usage(fake)
    assert (
        reply.usage.cost_micros(Prices(1000, 2000))
        == reply.usage.prompt_tokens + 2 * reply.usage.completion_tokens
    )
    sent = fake.requests[0]
    assert sent["authorization"] == f"Bearer {SECRET}"
    assert sent["body"]["response_format"] == {"type": "json_object"}
    assert (sent["body"]["max_tokens"], sent["body"]["stream"]) == (100, False)


def fake_usage(fake):
    from agentmate.llm import Usage

    u = fake.usage[-1]
    return Usage(u["prompt_tokens"], u["completion_tokens"])


@pytest.mark.parametrize("code", [408, 429, 500, 502, 503])
def test_408_429_and_5xx_are_retryable(client, fake, code):
    fake.push({"kind": "status", "code": code, "retry_after": 7})
    with pytest.raises(HttpStatusError) as err:
        client.complete(MESSAGES)
    assert (err.value.status, err.value.retryable, err.value.retry_after) == (code, True, 7.0)


@pytest.mark.parametrize("code", [400, 401, 403, 404, 422])
def test_other_4xx_are_not_retryable(client, fake, code):
    fake.push({"kind": "status", "code": code})
    with pytest.raises(HttpStatusError) as err:
        client.complete(MESSAGES)
    assert (err.value.status, err.value.retryable) == (code, False)
    assert SECRET not in str(err.value)


def test_a_dropped_connection_is_a_retryable_transport_failure(client, fake):
    fake.push("drop")
    with pytest.raises(TransportError) as err:
        client.complete(MESSAGES)
    assert err.value.retryable


def test_a_cut_body_is_a_retryable_transport_failure(client, fake):
    fake.push("garbage")
    with pytest.raises(TransportError) as err:
        client.complete(MESSAGES)
    assert err.value.retryable and "not JSON" in err.value.reason


def test_a_slow_provider_times_out_as_a_retryable_transport_failure(client, fake):
    fake.push({"kind": "slow", "seconds": 1.0})
    with pytest.raises(TransportError) as err:
        client.complete(MESSAGES, timeout=0.2)
    assert err.value.retryable and "timed out" in err.value.reason


def test_a_reply_truncated_by_max_tokens_is_not_retryable_and_keeps_its_usage(client, fake):
    fake.push("truncate")
    with pytest.raises(Truncated) as err:
        client.complete(MESSAGES)
    assert not err.value.retryable
    assert err.value.usage.completion_tokens == fake.usage[-1]["completion_tokens"] > 0


def test_the_key_never_shows_in_the_client_repr(client):
    assert SECRET not in repr(client) and SECRET not in repr(client.config)


def _settings(**kw):
    return Settings(jwt_secret="x" * 40, **kw)


def test_both_roles_fall_back_to_the_embedding_endpoint_and_key():
    s = _settings(embedding_base_url="https://emb.example/v1", embedding_api_key="ek")
    compiler, reviewer = config_from_settings("compiler", s), config_from_settings("reviewer", s)
    assert compiler is not None and reviewer is not None
    assert (compiler.base_url, compiler.api_key, compiler.model) == (
        "https://emb.example/v1",
        "ek",
        "qwen3.7-plus",
    )
    assert (reviewer.base_url, reviewer.api_key, reviewer.model) == (
        "https://emb.example/v1",
        "ek",
        "qwen-max",
    )
    assert (compiler.temperature, compiler.max_tokens, compiler.timeout_s) == (0.2, 32768, 900)
    assert reviewer.temperature == 0
    assert independence(compiler, reviewer) == "same_provider"


def test_no_endpoint_means_no_compiler():
    assert config_from_settings("compiler", _settings()) is None
    assert independence(None, None) == "unavailable"


def test_independence_classes():
    s = _settings(
        compiler_base_url="https://a.example/v1",
        reviewer_base_url="https://b.example/v1",
        reviewer_model="deepseek-v4-pro",
    )
    assert (
        independence(config_from_settings("compiler", s), config_from_settings("reviewer", s))
        == "cross_provider"
    )
    same = _settings(
        compiler_base_url="https://a.example/v1",
        reviewer_base_url="https://a.example/v2",
        reviewer_model="qwen3.7-plus",
    )
    assert (
        independence(config_from_settings("compiler", same), config_from_settings("reviewer", same))
        == "same_model"
    )
