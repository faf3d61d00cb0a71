"""Who is calling, and may they: request authentication and the admin check (scopes: api/deps.py)."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth import repository as repo
from agentmate.auth import security
from agentmate.core.db import Database
from agentmate.core.errors import Forbidden, Unauthorized
from agentmate.core.principal import Principal
from agentmate.core.settings import Settings


def authenticate(db: Database, settings: Settings, *, api_key: str | None, bearer: str | None) -> Principal:
    """Resolve the caller from an ``X-Api-Key`` value or an ``Authorization: Bearer`` token (JWT or ak_ key)."""
    if bearer and bearer.startswith(security.API_KEY_PREFIX) and not api_key:
        api_key = bearer
    if api_key:
        with db.single_statement() as conn:
            row = repo.api_key_by_hash(conn, security.hash_api_key(api_key.strip()))
        if row is None:
            raise Unauthorized("invalid api key")
        return Principal(
            account_id=row["account_id"], user_id=row["user_id"], via="api_key",
            key_id=row["key_id"], scopes=tuple(row["scopes"]), role=row["role"],
        )
    if bearer:
        import jwt as pyjwt

        try:
            claims = security.decode_jwt(bearer, settings.resolved_jwt_secret())
            return Principal(account_id=UUID(claims["account_id"]), user_id=UUID(claims["sub"]), via="jwt")
        except (pyjwt.PyJWTError, ValueError, TypeError):
            raise Unauthorized("invalid token") from None
    raise Unauthorized("missing credentials: send X-Api-Key or Authorization: Bearer <jwt|ak_…>")


def require_admin(db: Database, principal: Principal) -> None:
    """Admin routes act across accounts: they need an admin user's JWT or full-access (empty-scope) key,
    never a narrowly scoped key that merely belongs to an admin."""
    if principal.via == "api_key" and principal.scopes:
        raise Forbidden("admin access requires a JWT or a full-access API key")
    with db.tenant(principal.account_id) as conn:
        role = repo.user_role(conn, principal.user_id)
    if role != "admin":
        raise Forbidden("admin access required")

