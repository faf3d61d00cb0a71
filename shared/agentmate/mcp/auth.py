"""Authentication for the MCP endpoints, before any MCP processing (``initialize`` included).

Keys come from ``X-Api-Key``, ``Authorization: Bearer ak_…`` or ``?api_key=`` (the query value is removed
from the request before anything can log the URL). While OAuth is on (``OAUTH_ISSUER_URL``), an OAuth access
token (``Authorization: Bearer oat_…``) is accepted too, for the resource of the endpoint called
(``{issuer}/mcp`` or ``{issuer}/mcp/<module>``), and a refusal carries a ``Bearer`` challenge naming that
resource's metadata (RFC 9728) beside the ``ApiKey`` one. JWTs are not accepted here: MCP clients are agents,
which hold API keys with scopes or OAuth grants.
"""

from __future__ import annotations

import functools
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from starlette.types import Scope

from agentmate.auth import audience, credentials, tokens
from agentmate.auth.oauth.challenge import INVALID_TOKEN, bearer_challenge
from agentmate.auth.security import API_KEY_PREFIX
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import get_database
from agentmate.core.errors import Unauthorized
from agentmate.core.principal import Principal

HOW = "send an API key in the X-Api-Key header (or Authorization: Bearer ak_…)"
OAUTH_HOW = (
    "authorize with OAuth (WWW-Authenticate names this endpoint's resource metadata) and send "
    "Authorization: Bearer <access token>, or send an API key in the X-Api-Key header"
)
# With OAuth off, not Bearer: spec-following clients then do not start OAuth discovery.
CHALLENGE = b'ApiKey header="X-Api-Key"'
JWT_REFUSED = "MCP endpoints accept API keys only, not JWTs"
JWT_REFUSED_OAUTH = "MCP endpoints accept API keys and OAuth access tokens, not JWTs"
OAUTH_OFF = "OAuth is not enabled on this server: send an API key"
# Bearer values that are OAuth token material: an access token is looked up; the others are refused by
# ``credentials.authenticate`` as "not an access token".
_OAUTH_PREFIXES = (tokens.ACCESS_PREFIX, tokens.REFRESH_PREFIX, tokens.CODE_PREFIX, tokens.DEVICE_CODE_PREFIX)


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


def bearer_of(scope: Scope) -> str | None:
    auth = header(scope, b"authorization") or ""
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def credential_from(scope: Scope, *, oauth: bool) -> tuple[str | None, str | None]:
    """(API key, OAuth bearer token) of the request; at most one is set."""
    query_key = take_query_key(scope)
    key = header(scope, b"x-api-key")
    if not key:
        bearer = bearer_of(scope)
        if bearer is not None:
            if bearer.startswith(API_KEY_PREFIX):
                key = bearer
            elif bearer.startswith(_OAUTH_PREFIXES):
                if not oauth:
                    raise Unauthorized(OAUTH_OFF)
                return None, bearer
            else:
                raise Unauthorized(JWT_REFUSED_OAUTH if oauth else JWT_REFUSED)
    key = (key or query_key or "").strip()
    if not key:
        raise Unauthorized("missing credentials" if oauth else "missing API key")
    return key, None


def resource_of(scope: Scope, settings: AuthSettings) -> str | None:
    """The endpoint's resource (``{issuer}/mcp[/<module>]``) while OAuth is on, else None."""
    issuer = settings.oauth_issuer_url
    return audience.resource_for_path(issuer, scope["path"]) if issuer else None


def challenges(scope: Scope, settings: AuthSettings) -> list[tuple[bytes, bytes]]:
    """The 401's ``WWW-Authenticate``: the ``ApiKey`` challenge, and while OAuth is on the ``Bearer`` one first
    (the endpoint's resource metadata and scopes; ``invalid_token`` when a token was sent)."""
    resource = resource_of(scope, settings)
    if resource is None:
        return [(b"www-authenticate", CHALLENGE)]
    issuer = settings.oauth_issuer_url
    bearer = bearer_challenge(
        issuer,
        resource,
        audience.scopes_for_resource(issuer, resource),
        error=INVALID_TOKEN if bearer_of(scope) else None,
    )
    return [(b"www-authenticate", f"{bearer}, {CHALLENGE.decode()}".encode())]


async def authenticate(scope: Scope, settings: AuthSettings) -> Principal:
    """The request's caller; raises ``Unauthorized`` for a missing, malformed or unknown key or token."""
    resource = resource_of(scope, settings)
    key, bearer = credential_from(scope, oauth=resource is not None)
    caller = await anyio.to_thread.run_sync(
        functools.partial(
            credentials.authenticate,
            get_database(),
            settings,
            api_key=key,
            bearer=bearer,
            resource=resource,
        )
    )
    if caller.via == "jwt":  # pragma: no cover - a key or an OAuth token never yields a JWT principal
        raise Unauthorized(JWT_REFUSED_OAUTH)
    return caller
