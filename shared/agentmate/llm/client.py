"""The chat completions client: one non-streaming call, classified errors, usage on every outcome.

Classification follows spec/001's retry table. Retryable: a transport failure (connect error, timeout, dropped
connection), a body that is not the JSON a chat completion returns (a truncated body), a reply without choices,
HTTP 408, 429 and 5xx. Not retryable: any other 4xx (it would deterministically recur) and a reply cut off by
max_tokens (the same budget truncates the same way; a retry only doubles the bill). The tokens a failed call
spent travel on the error (``usage``), so cost is recorded per attempt.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit

from agentmate.llm.cost import Prices, cost_micros

if TYPE_CHECKING:  # pragma: no cover
    import httpx

    from agentmate.core.settings import Settings

Role = Literal["compiler", "reviewer"]
Independence = Literal["cross_provider", "same_provider", "same_model", "unavailable"]
_SHOWN_BODY_CHARS = 200


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


def config_from_settings(role: Role, settings: Settings) -> ChatConfig | None:
    """The role's configuration with spec/001's fall-backs, or None when no endpoint or model is set."""
    if role == "compiler":
        base = settings.compiler_base_url or settings.embedding_base_url
        key = settings.resolved_compiler_api_key() if (settings.compiler_api_key or settings.compiler_api_key_arn) \
            else settings.resolved_embedding_api_key()
        model, temperature = settings.compiler_model, settings.compiler_temperature
        prices = Prices(settings.compiler_input_micros_per_1k_tokens, settings.compiler_output_micros_per_1k_tokens)
        max_tokens, timeout = settings.compiler_max_tokens, settings.compiler_timeout_seconds
    else:
        base = settings.reviewer_base_url or settings.embedding_base_url
        key = settings.resolved_reviewer_api_key() if (settings.reviewer_api_key or settings.reviewer_api_key_arn) \
            else settings.resolved_embedding_api_key()
        model, temperature = settings.reviewer_model, settings.reviewer_temperature
        prices, max_tokens, timeout = Prices(), settings.compiler_max_tokens, settings.compiler_timeout_seconds
    if not base.strip() or not model.strip():
        return None
    return ChatConfig(base_url=base.strip(), api_key=key, model=model.strip(), temperature=temperature,
                      max_tokens=max_tokens, timeout_s=timeout, prices=prices)


def independence(compiler: ChatConfig | None, reviewer: ChatConfig | None) -> Independence:
    """How independent the reviewer is of the compiler (stored on every build)."""
    if compiler is None or reviewer is None:
        return "unavailable"
    if reviewer.model == compiler.model:
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
        self._client = client or httpx.Client(headers={"Content-Type": "application/json"})
        self._auth = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}

    @classmethod
    def from_settings(cls, role: Role = "compiler", settings: Settings | None = None) -> ChatClient:
        if settings is None:
            from agentmate.core.settings import get_settings

            settings = get_settings()
        config = config_from_settings(role, settings)
        if config is None:
            raise NotConfigured(f"no {role} model is configured: set {role.upper()}_BASE_URL (or EMBEDDING_BASE_URL) "
                                f"and {role.upper()}_MODEL")
        return cls(config)

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(url={self._url!r}, model={self.config.model!r})"

    def close(self) -> None:
        if self._owns_client:
            self._client.close()

    def complete(self, messages: list[dict[str, str]], *, response_format_json: bool = True,
                 timeout: float | None = None, max_tokens: int | None = None) -> ChatReply:
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
        started = time.perf_counter()
        httpx = self._httpx
        try:
            response = self._client.post(self._url, json=body, headers=self._auth,
                                         timeout=httpx.Timeout(limit, connect=min(10.0, limit)))
        except httpx.TimeoutException as exc:
            raise TransportError(f"timed out after {limit:g} s ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise TransportError(f"transport failure: {type(exc).__name__}") from None
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise HttpStatusError(response.status_code, self._status_reason(response),
                                  retry_after=_retry_after(response.headers.get("retry-after")))
        return self._reply(response, elapsed)

    def _status_reason(self, response: httpx.Response) -> str:
        text = response.text[:_SHOWN_BODY_CHARS]
        if self.config.api_key:
            text = text.replace(self.config.api_key, "***")
        return f"HTTP {response.status_code} from the chat endpoint: {' '.join(text.split())}".rstrip(": ")

    def _reply(self, response: httpx.Response, elapsed_ms: float) -> ChatReply:
        try:
            data = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise TransportError("the chat endpoint's body is not JSON (truncated or not a chat completion)") \
                from None
        if not isinstance(data, dict):
            raise TransportError("the chat endpoint's body is not a chat completion object")
        usage = _usage(data.get("usage"))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise TransportError("the chat completion has no choices", usage=usage)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else ""
        finish = choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None
        raw_model = data.get("model")
        model = raw_model if isinstance(raw_model, str) and raw_model else self.config.model
        if finish == "length":
            raise Truncated(f"the reply was truncated by max_tokens ({self.config.max_tokens}) after "
                            f"{usage.completion_tokens} output tokens", usage=usage, text=text)
        return ChatReply(text=text, finish_reason=finish, usage=usage, model=model, elapsed_ms=elapsed_ms)


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()

    def count(name: str) -> int:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    return Usage(count("prompt_tokens"), count("completion_tokens"))


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
