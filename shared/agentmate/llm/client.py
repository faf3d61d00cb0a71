"""The chat completions client: one non-streaming call, classified errors, usage on every outcome.

Classification follows spec/001's retry table. Retryable: a transport failure (connect error, timeout, dropped
connection), a body that is not the JSON a chat completion returns (a truncated body), a reply without choices,
HTTP 408, 429 and 5xx. Not retryable: any other 4xx (it would deterministically recur) and a reply cut off by
max_tokens (the same budget truncates the same way; a retry only doubles the bill) or a reply larger than the
size cap (the provider ignored max_tokens). The tokens a failed call spent travel on the error (``usage``), so cost
is recorded per attempt.

A call can be abandoned (``complete(..., abandon=...)``): while it runs, a watcher asks ``abandon()`` every
``ABANDON_POLL_S``; once it says yes (the worker is shutting down, or lost its lease), the call's connections are
shut down, which wakes the read blocked on them, and the call raises ``Abandoned``. A client that owns its httpx
client keeps no idle connections, so every call opens its own and can be cut off alone.

A provider's reply is data, never trusted (issue 20): the body is read incrementally and abandoned past
``reply_cap_bytes``; ``Retry-After`` is parsed as RFC 9110 says (delay-seconds or an HTTP-date, anything else
ignored) and clamped; token counts are non-negative integers clamped to ``MAX_TOKENS_PER_CALL`` (so the costs
computed from them and the bigint columns that store them can never overflow).
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit

from agentmate.core.retry_after import MAX_RETRY_AFTER_S as MAX_RETRY_AFTER_S  # re-exported
from agentmate.core.retry_after import (
    parse_retry_after as parse_retry_after,  # re-exported (llm.parse_retry_after)
)
from agentmate.llm.cost import Prices, cost_micros

if TYPE_CHECKING:  # pragma: no cover
    import httpx

    from agentmate.llm.settings import ModelSettings

Role = Literal["compiler", "reviewer"]
Independence = Literal["cross_provider", "same_provider", "same_model", "unavailable"]
_SHOWN_BODY_CHARS = 200
# An error reply's body is only shown (200 characters): read no more of it than this.
_ERROR_BODY_BYTES = 4096
_MODEL_CHARS = 200
# No model reports more tokens for one call than this (the largest context windows are a few million tokens): a
# larger count is a provider's bug or attack and is clamped, so cost arithmetic and the bigint columns stay sane.
MAX_TOKENS_PER_CALL = 100_000_000
# Reply size cap: a legitimate reply is bounded by max_tokens. One token is a few characters, and JSON escaping
# of non-ASCII text (\uXXXX, surrogate pairs) can make one character 12 bytes, so 64 bytes per token plus 1 MiB of
# envelope is generous (2 MiB + 1 MiB at the default COMPILER_MAX_TOKENS=32768). A provider that sends more
# ignored max_tokens; reading on would only cost memory (a 150 MB reply once added ~390 MiB RSS).
_CAP_BYTES_PER_TOKEN = 64
_CAP_ENVELOPE_BYTES = 1024 * 1024
# How often an abandonable call asks whether to give up (a shutdown is noticed within this).
ABANDON_POLL_S = 0.05


def reply_cap_bytes(max_tokens: int) -> int:
    """The most bytes of a successful reply the client reads for a call with ``max_tokens``."""
    return _CAP_ENVELOPE_BYTES + _CAP_BYTES_PER_TOKEN * max(1, max_tokens)


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def cost_micros(self, prices: Prices) -> int:
        return cost_micros(self.prompt_tokens, self.completion_tokens, prices)


@dataclass(frozen=True, slots=True)
class ChatReply:
    text: str
    finish_reason: str | None
    usage: Usage
    model: str
    elapsed_ms: float = 0.0


class ChatError(Exception):
    """A call that produced no usable reply. ``reason`` is safe to store and show (never the API key)."""

    retryable: ClassVar[bool] = False
    kind: ClassVar[str] = "chat_error"

    def __init__(self, reason: str, *, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage or Usage()


class TransportError(ChatError):
    """Connect error, timeout, dropped connection, or a body that is not a chat completion."""

    retryable = True
    kind = "transport"


class HttpStatusError(ChatError):
    kind = "http_status"

    def __init__(self, status: int, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:  # type: ignore[override]
        return self.status in (408, 429) or self.status >= 500


class Truncated(ChatError):
    """finish_reason=length: the reply hit max_tokens."""

    kind = "truncated"

    def __init__(self, reason: str, *, usage: Usage, text: str) -> None:
        super().__init__(reason, usage=usage)
        self.text = text


class ReplyTooLarge(ChatError):
    """The reply body passed the size cap derived from max_tokens: the provider ignored max_tokens. Not retried
    (the same request would be answered the same way, and every attempt is billed)."""

    kind = "reply_too_large"


class Abandoned(ChatError):
    """The caller gave the call up (shutdown, lost lease) and its connection was closed: no verdict on the
    provider. Retryable: the same call may well succeed when it is made again."""

    retryable = True
    kind = "abandoned"


class NotConfigured(Exception):
    """No base URL or model for the role: an operator gap (501), not a failed call."""


@dataclass(frozen=True, slots=True)
class ChatConfig:
    base_url: str
    api_key: str = field(repr=False)
    model: str
    temperature: float = 0.2
    max_tokens: int = 32768
    timeout_s: float = 900.0
    prices: Prices = field(default_factory=Prices)

    @property
    def provider(self) -> str:
        """The endpoint's host: two roles on one host are the same provider."""
        return (urlsplit(self.base_url).hostname or "").lower()


def config_from_settings(role: Role, settings: ModelSettings) -> ChatConfig | None:
    """The role's configuration with spec/001's fall-backs, or None when no endpoint or model is set."""
    if role == "compiler":
        base = settings.compiler_base_url or settings.embedding_base_url
        key = (
            settings.resolved_compiler_api_key()
            if (settings.compiler_api_key or settings.compiler_api_key_arn)
            else settings.resolved_embedding_api_key()
        )
        model, temperature = settings.compiler_model, settings.compiler_temperature
        prices = Prices(
            settings.compiler_input_micros_per_1k_tokens, settings.compiler_output_micros_per_1k_tokens
        )
        max_tokens, timeout = settings.compiler_max_tokens, settings.compiler_timeout_seconds
    else:
        base = settings.reviewer_base_url or settings.embedding_base_url
        key = (
            settings.resolved_reviewer_api_key()
            if (settings.reviewer_api_key or settings.reviewer_api_key_arn)
            else settings.resolved_embedding_api_key()
        )
        model, temperature = settings.reviewer_model, settings.reviewer_temperature
        prices, max_tokens, timeout = (
            Prices(),
            settings.compiler_max_tokens,
            settings.compiler_timeout_seconds,
        )
    if not base.strip() or not model.strip():
        return None
    return ChatConfig(
        base_url=base.strip(),
        api_key=key,
        model=model.strip(),
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout,
        prices=prices,
    )


def same_model(compiler_model: str | None, reviewer_model: str | None) -> bool:
    """The one comparison of model names (independence and the self-review refusal both use it): names are
    compared without case and surrounding blanks, as providers treat them (``Qwen-Max`` is ``qwen-max``)."""
    if compiler_model is None or reviewer_model is None:
        return False
    return compiler_model.strip().casefold() == reviewer_model.strip().casefold()


def independence(compiler: ChatConfig | None, reviewer: ChatConfig | None) -> Independence:
    """How independent the reviewer is of the compiler (stored on every build)."""
    if compiler is None or reviewer is None:
        return "unavailable"
    if same_model(compiler.model, reviewer.model):
        return "same_model"
    if reviewer.provider == compiler.provider:
        return "same_provider"
    return "cross_provider"


class ChatClient:
    """Client of one OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint. The httpx client is made
    once and reused (thread-safe); ``close()`` releases it."""

    def __init__(self, config: ChatConfig, *, client: httpx.Client | None = None) -> None:
        import httpx  # lazy: only the compile worker pays for it

        self._httpx = httpx
        self.config = config
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._owns_client = client is None
        # No idle connections: each call opens its own, so abandoning one call closes that call's connection only.
        self._client = client or httpx.Client(
            headers={"Content-Type": "application/json"}, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self._auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}

    @classmethod
    def from_settings(cls, role: Role = "compiler", settings: ModelSettings | None = None) -> ChatClient:
        if settings is None:
            from agentmate.llm.settings import get_model_settings

            settings = get_model_settings()
        config = config_from_settings(role, settings)
        if config is None:
            raise NotConfigured(
                f"no {role} model is configured: set {role.upper()}_BASE_URL (or EMBEDDING_BASE_URL) "
                f"and {role.upper()}_MODEL"
            )
        return cls(config)

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(url={self._url!r}, model={self.config.model!r})"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        response_format_json: bool = True,
        timeout: float | None = None,
        max_tokens: int | None = None,
        abandon: Callable[[], bool] | None = None,
    ) -> ChatReply:
        """One call. ``abandon``: asked while the call runs; when it answers yes the call's connection is closed
        and ``Abandoned`` raised (a reply that already arrived in full is returned all the same)."""
        if abandon is None:
            return self._complete(messages, response_format_json, timeout, max_tokens, None)
        if abandon():
            raise Abandoned("the call was abandoned before it started")
        cut = _CutOff()
        done = threading.Event()
        watcher = threading.Thread(target=cut.watch, args=(abandon, done), name="chat-abandon", daemon=True)
        watcher.start()
        try:
            return self._complete(messages, response_format_json, timeout, max_tokens, cut)
        finally:
            done.set()
            watcher.join()

    def _complete(
        self,
        messages: list[dict[str, str]],
        response_format_json: bool,
        timeout: float | None,
        max_tokens: int | None,
        cut: _CutOff | None,
    ) -> ChatReply:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": max_tokens or self.config.max_tokens,
            "stream": False,
        }
        if response_format_json:
            body["response_format"] = {"type": "json_object"}
        limit = timeout or self.config.timeout_s
        cap = reply_cap_bytes(body["max_tokens"])
        started = time.perf_counter()
        deadline = started + limit
        httpx = self._httpx
        try:
            with self._client.stream(
                "POST",
                self._url,
                json=body,
                headers=self._auth,
                timeout=httpx.Timeout(limit, connect=min(10.0, limit)),
                extensions={"trace": cut.trace} if cut is not None else None,
            ) as response:
                if response.status_code != 200:
                    head = _read(response, _ERROR_BODY_BYTES, deadline, limit, truncate=True)
                    raise HttpStatusError(
                        response.status_code,
                        self._status_reason(response.status_code, head),
                        retry_after=parse_retry_after(response.headers.get("retry-after")),
                    )
                raw = _read(response, cap, deadline, limit, truncate=False)
        except httpx.TimeoutException as exc:
            raise TransportError(f"timed out after {limit:g} s ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            if cut is not None and cut.fired:
                raise Abandoned("the call was abandoned and its connection closed") from None
            raise TransportError(f"transport failure: {type(exc).__name__}") from None
        except TransportError:
            if cut is not None and cut.fired:
                raise Abandoned("the call was abandoned and its connection closed") from None
            raise
        elapsed = (time.perf_counter() - started) * 1000
        return parse_reply(raw, model=self.config.model, max_tokens=body["max_tokens"], elapsed_ms=elapsed)

    def _status_reason(self, status: int, head: bytes) -> str:
        text = head.decode("utf-8", "replace")[:_SHOWN_BODY_CHARS].replace(
            "\x00", ""
        )  # NUL: no text column takes it
        if self.config.api_key:
            text = text.replace(self.config.api_key, "***")
        return f"HTTP {status} from the chat endpoint: {' '.join(text.split())}".rstrip(": ")


class _CutOff:
    """The connections one call opened (httpcore's ``trace`` extension reports each new connection's stream),
    so that another thread can shut them down: ``shutdown`` wakes a read blocked on the socket, ``close`` would not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: list[Any] = []
        self.fired = False

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event not in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            return
        stream = info.get("return_value")
        if stream is None:
            return
        with self._lock:
            self._streams.append(stream)
            late = self.fired
        if late:  # the call was abandoned while this connection was being made
            _shut(stream)

    def watch(self, abandon: Callable[[], bool], done: threading.Event) -> None:
        while not done.wait(ABANDON_POLL_S):
            if abandon():
                with self._lock:
                    self.fired = True
                    streams = list(self._streams)
                for stream in streams:
                    _shut(stream)
                return


def _shut(stream: Any) -> None:
    sock = stream.get_extra_info("socket")
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except (OSError, AttributeError):  # already closed, or a TLS stream whose raw socket was handed over
        pass


def _read(response: httpx.Response, cap: int, deadline: float, limit: float, *, truncate: bool) -> bytes:
    """The body, read incrementally: at most ``cap`` bytes (``truncate``: keep the first ``cap`` and stop; else a
    longer body is ``ReplyTooLarge``), and never past the call's deadline (a provider dripping bytes would reset
    the per-read timeout forever)."""
    declared = response.headers.get("content-length", "").strip()
    if (
        not truncate
        and declared.isascii()
        and declared.isdigit()
        and (len(declared) > 18 or int(declared) > cap)
    ):
        raise ReplyTooLarge(
            f"the chat endpoint announced a {declared[:20]}-byte reply, over the {cap}-byte cap "
            "for this call's max_tokens (the provider ignored max_tokens)"
        )
    buf = bytearray()
    for chunk in response.iter_bytes():
        buf += chunk
        if len(buf) > cap:
            if truncate:
                return bytes(buf[:cap])
            raise ReplyTooLarge(
                f"the chat endpoint's reply passed the {cap}-byte cap for this call's max_tokens "
                "(the provider ignored max_tokens); the rest was not read"
            )
        if time.perf_counter() > deadline:
            raise TransportError(f"timed out after {limit:g} s (the reply was still arriving)")
    return bytes(buf)


def parse_reply(raw: bytes, *, model: str, max_tokens: int, elapsed_ms: float = 0.0) -> ChatReply:
    """A chat completion body → ``ChatReply``, or a ``ChatError`` (never any other exception: the body is
    hostile input)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, a number too long, nesting too deep
        raise TransportError(
            "the chat endpoint's body is not JSON (truncated or not a chat completion)"
        ) from None
    if not isinstance(data, dict):
        raise TransportError("the chat endpoint's body is not a chat completion object")
    usage = _usage(data.get("usage"))
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise TransportError("the chat completion has no choices", usage=usage)
    choice = choices[0]
    message = choice.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    text = content if isinstance(content, str) else ""
    finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None
    raw_model = data.get("model")
    shown = raw_model[:_MODEL_CHARS].replace("\x00", "") if isinstance(raw_model, str) else ""
    if finish == "length":
        raise Truncated(
            f"the reply was truncated by max_tokens ({max_tokens}) after "
            f"{usage.completion_tokens} output tokens",
            usage=usage,
            text=text,
        )
    return ChatReply(
        text=text,
        finish_reason=finish[:_MODEL_CHARS] if finish else None,
        usage=usage,
        model=shown or model,
        elapsed_ms=elapsed_ms,
    )


def token_count(value: Any) -> int:
    """A provider's token count: a non-negative integer (an integral float is accepted), clamped to
    ``MAX_TOKENS_PER_CALL``; anything else (a string, a bool, a fraction, NaN, a negative number) counts 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return 0
        value = int(value)
    if not isinstance(value, int):
        return 0
    return min(max(value, 0), MAX_TOKENS_PER_CALL)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(token_count(raw.get("prompt_tokens")), token_count(raw.get("completion_tokens")))
