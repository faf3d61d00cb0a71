"""The authorization server's use cases: pending requests and consent, codes, grants (token families), refresh
rotation with replay detection, revocation, and a user's list of grants. Sync, over ``Database``; the MCP SDK's
handlers reach it through ``auth.oauth.provider`` and the pages and device grant call it directly.

A grant is one user's authorisation of one client for one resource. Its tokens are refused (``auth.credentials``)
once it is revoked, once the user's credentials epoch moved on, when the account is suspended, and with the user.
Refreshing rotates both tokens; presenting a used refresh token again (a replay: someone holds a copy) revokes the
grant, and so does exchanging a used code a second time (RFC 6749 §4.1.2, OAuth 2.1 §4.3.1).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit
from uuid import UUID

from agentmate.auth import audience, tokens
from agentmate.auth import repository as auth_repo
from agentmate.auth.oauth import repository as repo
from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.auth.schemas import Grant
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import Conn, Database
from agentmate.core.errors import NotFound, Unauthorized, invalid
from agentmate.core.observability import count
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal


@dataclass(frozen=True)
class TokenSet:
    """What the token endpoint answers (RFC 6749 §5.1): ``.response()`` is the JSON body."""

    access_token: str
    refresh_token: str
    expires_in: int
    scopes: tuple[str, ...]

    def response(self) -> dict[str, object]:
        return {
            "access_token": self.access_token,
            "token_type": "Bearer",
            "expires_in": self.expires_in,
            "refresh_token": self.refresh_token,
            "scope": " ".join(self.scopes),
        }


class PendingRequest(NamedTuple):
    request_id: UUID
    client_id: str
    client_name: str | None
    client_uri: str | None
    redirect_uri: str
    scopes: tuple[str, ...]
    resource: str
    state: str | None


class TokenFailure(Exception):
    """An RFC 6749 §5.2 error of the token endpoint (``error`` is its code)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


_CLEANUP_CHANCE = 0.01


def issuer(auth: AuthSettings) -> str:
    """The issuer identifier as the metadata states it and as ``iss`` carries it (RFC 8414, RFC 9207)."""
    return audience.canonical(auth.oauth_issuer_url)


def redirect_with(redirect_uri: str, **params: str | None) -> str:
    """``redirect_uri`` with ``params`` added to its query (its own query parameters kept, RFC 6749 §3.1.2)."""
    parts = urlsplit(redirect_uri)
    query = parse_qsl(parts.query, keep_blank_values=True)
    query += [(k, v) for k, v in params.items() if v is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))


# -- grants -------------------------------------------------------------------------------------------------------


def issue_grant(
    db: Database,
    oauth: OAuthSettings,
    *,
    account_id: UUID,
    user_id: UUID,
    client_id: str,
    client_name: str | None,
    client_uri: str | None,
    scopes: Sequence[str],
    resource: str,
) -> TokenSet:
    """A new grant (token family) with an access and a refresh token. Refused (Unauthorized) when the user no
    longer exists or its account is suspended."""
    grant = repo.NewGrant(account_id, user_id, client_id, client_name, client_uri, list(scopes), resource)
    with db.tenant(account_id) as conn:
        _, token_set = _new_grant(conn, oauth, grant)
    count("OAuthGrantIssued")
    return token_set


def _new_grant(conn: Conn, oauth: OAuthSettings, grant: repo.NewGrant) -> tuple[UUID, TokenSet]:
    if not grant.scopes:
        raise invalid("scopes", "at least one scope must be granted")
    epoch = repo.user_epoch(conn, grant.user_id)
    if epoch is None:
        raise Unauthorized("the user no longer exists or its account is suspended")
    grant_id = repo.insert_grant(conn, grant, credentials_epoch=epoch)
    return grant_id, _mint(conn, oauth, grant_id, grant.account_id, tuple(grant.scopes))


def _mint(
    conn: Conn, oauth: OAuthSettings, grant_id: UUID, account_id: UUID, scopes: tuple[str, ...]
) -> TokenSet:
    access, access_hash = tokens.new_token("access")
    refresh, refresh_hash = tokens.new_token("refresh")
    for token_hash, kind, ttl in (
        (access_hash, "access", oauth.oauth_access_token_ttl_s),
        (refresh_hash, "refresh", oauth.oauth_refresh_token_ttl_s),
    ):
        repo.insert_token(
            conn, token_hash=token_hash, grant_id=grant_id, account_id=account_id, kind=kind, ttl_s=ttl
        )
    return TokenSet(access, refresh, oauth.oauth_access_token_ttl_s, scopes)


# -- authorization requests and consent -----------------------------------------------------------------------------


def create_request(
    db: Database,
    oauth: OAuthSettings,
    *,
    client_id: str,
    client_name: str | None,
    client_uri: str | None,
    redirect_uri: str,
    code_challenge: str,
    state: str | None,
    scopes: Sequence[str],
    resource: str,
) -> UUID:
    """Store a pending authorization (``/authorize`` validated it); the consent page finds it by the id. Anyone
    may start one, so about one call in a hundred also deletes the requests that expired an hour ago."""
    with db.transaction() as conn:
        if random.random() < _CLEANUP_CHANCE:
            repo.delete_expired_requests(conn, older_than_s=3600)
        return repo.insert_request(
            conn,
            client_id=client_id,
            client_name=client_name,
            client_uri=client_uri,
            redirect_uri=redirect_uri,
            code_challenge=code_challenge,
            state=state,
            scopes=list(scopes),
            resource=resource,
            ttl_s=oauth.oauth_request_ttl_s,
        )


def _pending(row: repo.RequestRow) -> PendingRequest:
    return PendingRequest(
        request_id=row.id,
        client_id=row.client_id,
        client_name=row.client_name,
        client_uri=row.client_uri,
        redirect_uri=row.redirect_uri,
        scopes=tuple(row.scopes),
        resource=row.resource,
        state=row.state,
    )


def pending_request(db: Database, request_id: UUID) -> PendingRequest | None:
    """The pending authorization, unexpired and unused; None otherwise."""
    with db.single_statement() as conn:
        row = repo.pending_request(conn, request_id)
    return _pending(row) if row is not None else None


def approve_request(
    db: Database,
    auth: AuthSettings,
    oauth: OAuthSettings,
    request_id: UUID,
    *,
    user_id: UUID,
    account_id: UUID,
    scopes: Sequence[str],
) -> str:
    """The user consented to ``scopes`` (a non-empty subset of what was asked): mint a code and return the
    client's redirect URL with ``code``, ``state`` and ``iss``. NotFound when the request expired or was used."""
    chosen = list(dict.fromkeys(scopes))
    with db.tenant(account_id) as conn:  # the code is the user's tenant row
        row = repo.pending_request(conn, request_id)
        if row is None:
            raise NotFound("authorization request (expired or already answered: start again from the client)")
        unknown = [s for s in chosen if s not in row.scopes]
        if not chosen or unknown:
            raise invalid(
                "scopes",
                "choose at least one of the scopes asked for" if not chosen else f"not asked for: {unknown}",
                list(row.scopes),
            )
        if repo.use_request(conn, request_id) is None:  # pragma: no cover - lost a race with another answer
            raise NotFound("authorization request")
        code, code_hash = tokens.new_token("code")
        repo.insert_code(
            conn,
            code_hash=code_hash,
            request=row,
            account_id=account_id,
            user_id=user_id,
            scopes=chosen,
            ttl_s=oauth.oauth_code_ttl_s,
        )
    count("OAuthConsentGiven")
    return redirect_with(row.redirect_uri, code=code, state=row.state, iss=issuer(auth))


def deny_request(db: Database, auth: AuthSettings, request_id: UUID) -> str:
    """The user refused: the client's redirect URL with ``error=access_denied`` (and ``state``, ``iss``)."""
    with db.transaction() as conn:
        row = repo.use_request(conn, request_id)
    if row is None:
        raise NotFound("authorization request (expired or already answered: start again from the client)")
    return redirect_with(
        row.redirect_uri,
        error="access_denied",
        error_description="the user denied the request",
        state=row.state,
        iss=issuer(auth),
    )


# -- the token endpoint -------------------------------------------------------------------------------------------


def load_code(db: Database, code: str) -> repo.CodeRow | None:
    """An unused code; a used one is a replay: the grant its first exchange created is revoked and None is
    returned (so is it for an unknown code)."""
    if not code.startswith(tokens.CODE_PREFIX) or "\x00" in code:
        return None
    with db.single_statement() as conn:
        row = repo.code_by_hash(conn, tokens.hash_token(code))
    if row is not None and row.used:
        _revoke_replayed(db, row.account_id, row.grant_id, "OAuthCodeReplayed")
        return None
    return row


def exchange_code(db: Database, oauth: OAuthSettings, code: str, client_id: str) -> TokenSet:
    """Exchange a code (the caller checked PKCE and the redirect URI) for a new grant's tokens."""
    code_hash = tokens.hash_token(code)
    with db.single_statement() as conn:
        found = repo.code_by_hash(conn, code_hash)
    if found is None or found.client_id != client_id:
        raise TokenFailure("invalid_grant", "authorization code does not exist")
    with db.tenant(found.account_id) as conn:
        row = repo.lock_code(conn, code_hash)
        if row is None or row.used or row.expires_at <= datetime.now(UTC):
            row = None
        else:
            grant = repo.NewGrant(
                row.account_id,
                row.user_id,
                row.client_id,
                row.client_name,
                row.client_uri,
                list(row.scopes),
                row.resource,
            )
            grant_id, token_set = _new_grant(conn, oauth, grant)
            repo.mark_code_used(conn, code_hash, grant_id)
    if row is None:  # a concurrent exchange won: this one is a replay
        load_code(db, code)
        raise TokenFailure("invalid_grant", "authorization code was already used or has expired")
    count("OAuthGrantIssued")
    return token_set


def load_token(db: Database, token: str) -> auth_repo.OAuthTokenRow | None:
    """An access or refresh token with its grant (whatever its state), or None."""
    if not token.startswith((tokens.ACCESS_PREFIX, tokens.REFRESH_PREFIX)) or "\x00" in token:
        return None
    with db.single_statement() as conn:
        return auth_repo.oauth_token_by_hash(conn, tokens.hash_token(token))


def load_refresh(db: Database, token: str) -> auth_repo.OAuthTokenRow | None:
    """A live refresh token. A used one is a replay: its whole grant is revoked and None is returned; so is it
    for a revoked, expired or unknown one, or one whose user's credentials moved on."""
    row = load_token(db, token)
    if row is None or row.kind != "refresh":
        return None
    if row.used:
        _revoke_replayed(db, row.account_id, row.grant_id, "OAuthRefreshReplayed")
        return None
    if row.expired or row.revoked or row.epoch_moved or row.suspended:
        return None
    return row


def refresh(db: Database, oauth: OAuthSettings, token: str, scopes: Sequence[str]) -> TokenSet:
    """Rotate: the refresh token is spent, the access tokens it replaces expire, and a new access and refresh
    token of the same grant are minted.
    ``scopes`` may narrow the grant (it then keeps only those), never widen it."""
    row = load_refresh(db, token)
    if row is None:
        raise TokenFailure("invalid_grant", "refresh token does not exist")
    chosen = list(dict.fromkeys(scopes)) or list(row.scopes)
    wider = [s for s in chosen if s not in row.scopes]
    if wider:
        raise TokenFailure("invalid_scope", f"the grant does not include {' '.join(wider)}")
    with db.tenant(row.account_id) as conn:
        spent = repo.use_refresh_token(conn, tokens.hash_token(token))
        if spent:
            repo.retire_access_tokens(conn, row.grant_id)
            if set(chosen) != set(row.scopes):
                repo.narrow_grant(conn, row.grant_id, chosen)
            repo.delete_expired_tokens(conn, row.grant_id)  # a family grows by two tokens per refresh
            token_set = _mint(conn, oauth, row.grant_id, row.account_id, tuple(chosen))
    if not spent:  # a concurrent refresh spent it first: a replay
        _revoke_replayed(db, row.account_id, row.grant_id, "OAuthRefreshReplayed")
        raise TokenFailure("invalid_grant", "refresh token was already used: the grant is revoked")
    count("OAuthTokenRefreshed")
    return token_set


def revoke_token(db: Database, token: str) -> None:
    """RFC 7009: revoke the grant of an access or refresh token (every token of it). An unknown token is not an
    error (the endpoint answers 200 either way)."""
    row = load_token(db, token)
    if row is None:
        return
    with db.tenant(row.account_id) as conn:
        repo.revoke_grant(conn, row.grant_id)
    count("OAuthTokenRevoked")


def _revoke_replayed(db: Database, account_id: UUID, grant_id: UUID | None, metric: str) -> None:
    if grant_id is None:
        return
    with db.tenant(account_id) as conn:
        repo.revoke_grant(conn, grant_id)
    count(metric)


# -- a user's grants ------------------------------------------------------------------------------------------------


def list_grants(db: Database, principal: Principal, page: PageParams) -> Page[Grant]:
    """The caller's live grants: the clients it authorised, newest first."""
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_grants(conn, principal.user_id, limit=page.limit, offset=page.offset)
    items = [Grant(**row._asdict()) for row in rows]
    return Page[Grant](items=items, total=total, limit=page.limit, offset=page.offset)


def revoke_grant(db: Database, principal: Principal, grant_id: UUID) -> None:
    """Revoke one of the caller's grants: every token of it is refused at once. NotFound in another account."""
    with db.tenant(principal.account_id) as conn:
        if not repo.revoke_user_grant(conn, principal.user_id, grant_id):
            raise NotFound("grant")
    count("OAuthGrantRevoked")
