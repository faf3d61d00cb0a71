"""The MCP SDK's ``OAuthAuthorizationServerProvider`` backed by our service (Postgres).

The SDK's handlers (authorize, token, revoke, register) validate the protocol — PKCE S256, exact redirect URIs,
client authentication, the scope a refresh may ask for — and call this provider for storage and policy: the
resource a token is bound to (RFC 8707), the default scopes, codes and refresh tokens (with replay detection),
revocation. The service is sync; each call runs on a worker thread. Imported only inside the OAuth handlers
(cold start): it loads ``mcp.server.auth``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from agentmate.auth import audience
from agentmate.auth.oauth import service
from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.auth.settings import AuthSettings
from agentmate.core import scopes as scope_rules
from agentmate.core.db import Database
from agentmate.core.errors import Unauthorized

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.auth.repository import OAuthTokenRow


def find_client(db: Database, oauth: OAuthSettings, client_id: str) -> OAuthClientInformationFull | None:
    """The client: its metadata document (an https client_id) or its dynamic registration (clients helper)."""
    from agentmate.auth.oauth import clients  # type: ignore[attr-defined, unused-ignore]

    found: OAuthClientInformationFull | None = clients.get_client(db, oauth, client_id)
    return found


def save_client(db: Database, info: OAuthClientInformationFull) -> None:
    from agentmate.auth.oauth import clients  # type: ignore[attr-defined, unused-ignore]

    clients.save_registered_client(db, info)


def scopes_for_resource(issuer: str, resource: str) -> tuple[str, ...]:
    """The scopes a resource offers (the resource helper's ``audience.scopes_for_resource``, once merged)."""
    offered = getattr(audience, "scopes_for_resource", None)
    if offered is not None:
        return tuple(offered(issuer, resource))
    return tuple(scope_rules.SCOPES)  # fallback until audience.scopes_for_resource is merged: every scope


def bound_resource(issuer: str, requested: str | None) -> str:
    """The resource a token will serve: the one asked for (one of this server's), else the issuer (RFC 8707)."""
    resource = audience.canonical(requested) if requested else audience.canonical(issuer)
    if resource not in audience.known_resources(issuer):
        raise AuthorizeError("invalid_target", f"unknown resource {requested!r}: not one of this server's")
    return resource


def requested_scopes(issuer: str, resource: str, asked: list[str] | None) -> list[str]:
    """What a client asked for, intersected with what the resource offers; nothing asked = all it offers."""
    offered = scopes_for_resource(issuer, resource)
    if not asked:
        return list(offered)
    unknown = [s for s in asked if s not in scope_rules.SCOPES]
    if unknown:
        raise AuthorizeError("invalid_scope", f"unknown scope(s): {' '.join(unknown)}")
    chosen = [s for s in dict.fromkeys(asked) if s in offered]
    if not chosen:
        raise AuthorizeError("invalid_scope", f"none of the scopes asked for is offered by {resource}")
    return chosen


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    """One request's provider (cheap: it holds the settings and the database). The SDK's identity-assertion grant
    (SEP-990) keeps the protocol's default: unsupported."""

    def __init__(self, db: Database, auth: AuthSettings, oauth: OAuthSettings) -> None:
        self.db = db
        self.auth = auth
        self.oauth = oauth
        self.issuer = service.issuer(auth)

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        client = await anyio.to_thread.run_sync(find_client, self.db, self.oauth, client_id)
        if client is not None and client.scope is None:
            # The SDK checks the scopes asked for against the client's; ours are checked against the resource.
            client = client.model_copy(update={"scope": " ".join(scope_rules.SCOPES)})
        return client

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await anyio.to_thread.run_sync(save_client, self.db, client_info)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        resource = bound_resource(self.issuer, params.resource)
        scopes = requested_scopes(self.issuer, resource, params.scopes)
        request_id = await anyio.to_thread.run_sync(
            lambda: service.create_request(
                self.db,
                self.oauth,
                client_id=client.client_id or "",
                client_name=client.client_name,
                client_uri=str(client.client_uri) if client.client_uri else None,
                redirect_uri=str(params.redirect_uri),
                code_challenge=params.code_challenge,
                state=params.state,
                scopes=scopes,
                resource=resource,
            )
        )
        return f"{self.issuer}/api/oauth/consent?request={request_id}"

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        row = await anyio.to_thread.run_sync(service.load_code, self.db, authorization_code)
        if row is None or row.client_id != client.client_id:
            return None
        return AuthorizationCode(
            code=authorization_code,
            scopes=list(row.scopes),
            expires_at=row.expires_at.timestamp(),
            client_id=row.client_id,
            code_challenge=row.code_challenge,
            redirect_uri=AnyUrl(row.redirect_uri),
            redirect_uri_provided_explicitly=True,  # OAuth 2.1: the token request repeats it, exactly
            resource=row.resource,
            subject=str(row.user_id),
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        try:
            token_set = await anyio.to_thread.run_sync(
                service.exchange_code, self.db, self.oauth, authorization_code.code, client.client_id or ""
            )
        except service.TokenFailure as exc:
            raise TokenError(exc.error, exc.description) from None  # type: ignore[arg-type]
        except Unauthorized as exc:  # the user was deleted or its account suspended since the consent
            raise TokenError("invalid_grant", exc.detail) from None
        return OAuthToken.model_validate(token_set.response())

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        row = await anyio.to_thread.run_sync(service.load_refresh, self.db, refresh_token)
        if row is None or row.client_id != client.client_id:
            return None
        return RefreshToken(
            token=refresh_token,
            client_id=row.client_id,
            scopes=list(row.scopes),
            expires_at=int(row.expires_at.timestamp()),
            resource=row.resource,
            subject=str(row.user_id),
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        try:
            token_set = await anyio.to_thread.run_sync(
                service.refresh, self.db, self.oauth, refresh_token.token, scopes
            )
        except service.TokenFailure as exc:
            raise TokenError(exc.error, exc.description) from None  # type: ignore[arg-type]
        return OAuthToken.model_validate(token_set.response())

    async def load_access_token(self, token: str) -> AccessToken | None:
        row: OAuthTokenRow | None = await anyio.to_thread.run_sync(service.load_token, self.db, token)
        if row is None or row.kind != "access":
            return None
        return AccessToken(
            token=token,
            client_id=row.client_id,
            scopes=list(row.scopes),
            expires_at=int(row.expires_at.timestamp()),
            resource=row.resource,
            subject=str(row.user_id),
        )

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await anyio.to_thread.run_sync(service.revoke_token, self.db, token.token)
