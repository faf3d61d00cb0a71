"""Stateless ``Mcp-Session-Id`` values.

The MCP servers are stateless (any replica answers any request), but clients that follow the 2025
handshake — and the curl sequence in the README — take the ``Mcp-Session-Id`` that ``initialize`` returns
and send it on every later request. So ``initialize`` returns an id that needs no server-side state: a
random nonce plus an HMAC over (nonce, API key id) under a key derived from the platform secret. Any
replica can check it, and it is only accepted together with the API key it was issued to; a forged,
foreign or garbled id answers 404 "Session not found", which tells a client to initialize again.
Requests without an id are served as well (stateless clients and the 2026 protocol never send one).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache
from uuid import UUID

_PURPOSE = b"agentmate-mcp-session-v1"


@lru_cache(maxsize=4)
def _key(secret: str) -> bytes:
    return hmac.new(secret.encode(), _PURPOSE, hashlib.sha256).digest()


def _signature(secret: str, nonce: str, key_id: UUID | None) -> str:
    return hmac.new(_key(secret), f"{nonce}.{key_id}".encode(), hashlib.sha256).hexdigest()[:32]


def mint(secret: str, key_id: UUID | None) -> str:
    nonce = secrets.token_hex(16)
    return f"{nonce}.{_signature(secret, nonce, key_id)}"


def verify(secret: str, session_id: str, key_id: UUID | None) -> bool:
    nonce, _, signature = session_id.strip().partition(".")
    if len(nonce) != 32 or len(signature) != 32:
        return False
    return hmac.compare_digest(signature, _signature(secret, nonce, key_id))
