"""Who is calling, and may they: request authentication and the admin check (scopes: api/deps.py)."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth import audience, security, tokens
from agentmate.auth import credentials_repository as sql
from agentmate.auth import repository as repo
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import Database
from agentmate.core.errors import Forbidden, Unauthorized
from agentmate.core.limits.repository import ADMITTED, NO_LIMITS, Admission, Terms
from agentmate.core.principal import Principal

SUSPENDED = "account suspended: its credentials are refused until an operator reactivates it"


def authenticate(
    db: Database,
    settings: AuthSettings,
    *,
    api_key: str | None,
    bearer: str | None,
    resource: str | None = None,
) -> Principal:
    """The caller, as ``authenticate_admitted`` finds it, without admitting the request by the account's limits
    (MCP admits each tool call on its own; a route that only changes credentials counts nothing)."""
    return authenticate_admitted(db, settings, api_key=api_key, bearer=bearer, resource=resource)[0]


def authenticate_admitted(
    db: Database,
    settings: AuthSettings,
    *,
    api_key: str | None,
    bearer: str | None,
    resource: str | None = None,
    terms: Terms = NO_LIMITS,
) -> tuple[Principal, Admission]:
    """Resolve the caller from an ``X-Api-Key`` value or an ``Authorization: Bearer`` token (JWT, ak_ key or
    OAuth access token), and admit the request by its account's limits (``terms``; ``limits.settle`` reads the
    answer) in the same statement: one round trip before the request's tenant transaction.

    That statement checks the credential against the database on every request: a key must exist and not be
    expired; a JWT (verified here first: signature, expiry, claims) must name a user that still exists in its
    account at the token's credentials epoch; an OAuth access token (``oat_``) must be live and issued for a
    resource that covers ``resource`` (the request's canonical resource, ``audience.resource_for_path``); and the
    account must not be suspended. Only an accepted credential is admitted, and its last_used_at (a key's, an
    OAuth grant's) stamped when over a minute old, in the same statement (migration 0102).
    """
    if bearer and bearer.startswith(security.API_KEY_PREFIX) and not api_key:
        api_key = bearer
    if bearer and not api_key and bearer.startswith(_OAUTH_PREFIXES):
        return _oauth(db, bearer.strip(), resource, terms)
    if api_key:
        return _api_key(db, api_key, terms)
    if bearer:
        return _jwt(db, settings, bearer, terms)
    raise Unauthorized("missing credentials: send X-Api-Key or Authorization: Bearer <jwt|ak_…>")


def _api_key(db: Database, api_key: str, terms: Terms) -> tuple[Principal, Admission]:
    with db.single_statement() as conn:
        found = sql.api_key(conn, security.hash_api_key(api_key.strip()), terms)
    if found is None:
        raise Unauthorized("invalid api key")
    row, admission = found
    if row.suspended:
        raise Unauthorized(SUSPENDED)
    if row.expired:
        raise Unauthorized("api key expired: create a new one (POST /api/auth/apikeys)")
    principal = Principal(
        account_id=row.account_id,
        user_id=row.user_id,
        via="api_key",
        key_id=row.key_id,
        scopes=tuple(row.scopes),
        role=row.role,
    )
    return principal, admission


def _jwt(db: Database, settings: AuthSettings, bearer: str, terms: Terms) -> tuple[Principal, Admission]:
    user_id, account_id, epoch = _jwt_claims(bearer, settings)
    with db.single_statement() as conn:
        found = sql.jwt_user(conn, user_id=user_id, account_id=account_id, epoch=epoch, terms=terms)
    if found is None:
        raise Unauthorized("invalid token: its user no longer exists in its account")
    user, admission = found
    if user.credentials_epoch != epoch:
        raise Unauthorized("token revoked (password changed or signed out everywhere): log in again")
    if user.suspended:
        raise Unauthorized(SUSPENDED)
    return Principal(account_id=account_id, user_id=user_id, via="jwt", role=user.role), admission


_OAUTH_PREFIXES = (
    tokens.ACCESS_PREFIX,
    tokens.REFRESH_PREFIX,
    tokens.CODE_PREFIX,
    tokens.DEVICE_CODE_PREFIX,
    tokens.CLIENT_ID_PREFIX,
    tokens.CLIENT_SECRET_PREFIX,
)


def _oauth(db: Database, bearer: str, resource: str | None, terms: Terms) -> tuple[Principal, Admission]:
    """An OAuth access token: one statement finds it with its grant and every reason to refuse it (the statement
    admits it only when none applies, the same reasons as ``_oauth_refusal``'s)."""
    if not tokens.is_access_token(bearer):
        raise Unauthorized("not an access token: send the access_token the token endpoint answered")
    target = audience.canonical(resource) if resource is not None else None
    with db.single_statement() as conn:
        found = sql.oauth_token(conn, tokens.hash_token(bearer), target, terms)
    row, admission = found if found is not None else (None, ADMITTED)
    refusal = _oauth_refusal(row, resource)
    if refusal is not None or row is None:
        raise Unauthorized(refusal or "invalid access token")
    principal = Principal(
        account_id=row.account_id,
        user_id=row.user_id,
        via="oauth",
        scopes=tuple(row.scopes),
        role=row.role,
        grant_id=row.grant_id,
        client_id=row.client_id,
    )
    return principal, admission


def _oauth_refusal(row: repo.OAuthTokenRow | None, resource: str | None) -> str | None:
    if row is None or row.kind != "access":
        return "invalid access token (unknown, or its grant, user or account was deleted): authorize again"
    if row.suspended:
        return SUSPENDED
    if row.revoked:
        return "access token revoked (its grant was revoked): authorize again"
    if row.epoch_moved:
        return "access token revoked (password changed or signed out everywhere): authorize again"
    if row.expired:
        return "access token expired: use the refresh token at the token endpoint"
    if resource is None:  # a caller that cannot say which resource it serves never accepts an access token
        return "OAuth access tokens are not accepted here (OAuth is not enabled on this deployment)"
    if not audience.covers(row.resource, audience.canonical(resource)):
        return f"access token issued for another resource ({row.resource}); this is {audience.canonical(resource)}"
    return None


def _jwt_claims(token: str, settings: AuthSettings) -> tuple[UUID, UUID, int]:
    import jwt as pyjwt

    try:
        claims = security.decode_jwt(token, settings.resolved_jwt_secret())
        epoch = claims[security.EPOCH_CLAIM]
        if not isinstance(epoch, int) or isinstance(epoch, bool) or not 0 <= epoch < 2**31:
            raise TypeError("epoch")  # a credentials epoch is a Postgres integer
        return UUID(claims["sub"]), UUID(claims["account_id"]), epoch
    except (pyjwt.PyJWTError, ValueError, TypeError, AttributeError):
        raise Unauthorized("invalid token") from None


def require_admin(db: Database, principal: Principal) -> None:
    """Admin routes act across accounts: they need an admin user's JWT or full-access (empty-scope) key,
    never a narrowly scoped key that merely belongs to an admin."""
    if principal.via == "oauth" or (principal.via == "api_key" and principal.scopes):
        raise Forbidden("admin access requires a JWT or a full-access API key")
    with db.tenant(principal.account_id) as conn:
        role = repo.user_role(conn, principal.user_id)
    if role != "admin":
        raise Forbidden("admin access required")
