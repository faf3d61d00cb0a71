"""API-key authentication for the MCP endpoints, before any MCP processing (``initialize`` included).

Keys come from ``X-Api-Key``, ``Authorization: Bearer ak_…`` or ``?api_key=`` (the query value is removed
from the request before anything can log the URL). JWTs are not accepted here: MCP clients are agents,
which hold API keys with scopes.
"""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from starlette.types import Scope

from agentmate.auth import credentials
from agentmate.auth.security import API_KEY_PREFIX
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import get_database
from agentmate.core.errors import Unauthorized
from agentmate.core.principal import Principal

HOW = "send an API key in the X-Api-Key header (or Authorization: Bearer ak_…)"
# The scheme MCP endpoints advertise: not Bearer, so spec-following clients do not start OAuth discovery.
CHALLENGE = b'ApiKey header="X-Api-Key"'


def header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def take_query_key(scope: Scope) -> str | None:
    """Read ``api_key`` from the query string and strip it from the scope (so access logs never see it)."""
    raw: bytes = scope.get("query_string", b"")
    if b"api_key" not in raw:
        return None
    pairs = parse_qsl(raw.decode("latin-1"), keep_blank_values=True)
    found = next((v for k, v in pairs if k == "api_key"), None)
    scope["query_string"] = urlencode([(k, v) for k, v in pairs if k != "api_key"]).encode("latin-1")
    return found


def api_key_from(scope: Scope) -> str:
    query_key = take_query_key(scope)
    key = header(scope, b"x-api-key")
    if not key:
        auth = header(scope, b"authorization") or ""
        if auth[:7].lower() == "bearer ":
            bearer = auth[7:].strip()
            if not bearer.startswith(API_KEY_PREFIX):
                raise Unauthorized("MCP endpoints accept API keys only, not JWTs")
            key = bearer
    key = (key or query_key or "").strip()
    if not key:
        raise Unauthorized("missing API key")
    return key


async def authenticate(scope: Scope, settings: AuthSettings) -> Principal:
    """The request's caller; raises ``Unauthorized`` for a missing, malformed or unknown key."""
    key = api_key_from(scope)
    caller = await anyio.to_thread.run_sync(
        functools.partial(
            credentials.authenticate,
            get_database(),
            settings,
            api_key=key,
            bearer=None,
        )
    )
    if caller.via != "api_key":  # pragma: no cover - authenticate() returns api_key principals for keys
        raise Unauthorized("missing API key")
    return caller
