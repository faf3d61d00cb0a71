"""OpenAI-compatible chat completions (``POST {base_url}/chat/completions``) for the wiki compiler and reviewer.

``ChatClient.from_settings(role="compiler"|"reviewer")`` builds a client from COMPILER_* / REVIEWER_* settings
(both fall back to EMBEDDING_BASE_URL / EMBEDDING_API_KEY, spec/001 "Model configuration"). ``complete`` makes one
call and raises a classified ``ChatError``: ``retryable`` says whether the same call may succeed later (transport
failure, dropped connection, undecodable body, 408, 429, 5xx) or would deterministically recur (other 4xx, a reply
truncated by max_tokens, a reply past the size cap); ``complete(..., abandon=...)`` lets a caller give a call up
(``Abandoned``: its connection closed). Replies are hostile data: the body is read up to a cap derived
from max_tokens, Retry-After and token counts are validated and clamped. The client never retries by itself: the
compile queue owns retries and backoff.
"""

from agentmate.llm.client import (
    Abandoned,
    ChatClient,
    ChatConfig,
    ChatError,
    ChatReply,
    HttpStatusError,
    NotConfigured,
    ReplyTooLarge,
    TransportError,
    Truncated,
    Usage,
    config_from_settings,
    independence,
    parse_reply,
    parse_retry_after,
    reply_cap_bytes,
    same_model,
    token_count,
)
from agentmate.llm.cost import MAX_COST_MICROS, Prices, cost_micros

__all__ = [
    "MAX_COST_MICROS",
    "Abandoned",
    "ChatClient",
    "ChatConfig",
    "ChatError",
    "ChatReply",
    "HttpStatusError",
    "NotConfigured",
    "Prices",
    "ReplyTooLarge",
    "TransportError",
    "Truncated",
    "Usage",
    "config_from_settings",
    "cost_micros",
    "independence",
    "parse_reply",
    "parse_retry_after",
    "reply_cap_bytes",
    "same_model",
    "token_count",
]
