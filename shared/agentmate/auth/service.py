"""Registration, login, the caller's identity and API key management.

Request authentication lives in agentmate.auth.credentials, which every route group imports: it stays free of
the request schemas (EmailStr pulls in email-validator, ~20 ms of cold start).
"""

from __future__ import annotations

from uuid import UUID

from agentmate.auth import repository as repo
from agentmate.auth import security
from agentmate.auth.credentials import authenticate, require_admin
from agentmate.auth.schemas import ApiKey, ApiKeyCreate, ApiKeyCreated, Credentials, Me, Registered, Token
from agentmate.core import scopes as scope_rules
from agentmate.core.db import Database
from agentmate.core.errors import ErrorCollector, Forbidden, NotFound, Unauthorized
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.settings import Settings


def register(db: Database, body: Credentials) -> Registered:
    password_hash = security.hash_password(body.password)
    with db.transaction() as conn:  # a taken email is a Conflict (users_email_key in the repository's table)
        row = repo.register(conn, email=str(body.email), password_hash=password_hash)
    return Registered(user_id=row["user_id"], account_id=row["account_id"], email=str(body.email).lower())


def login(db: Database, settings: Settings, body: Credentials) -> Token:
    with db.single_statement() as conn:
        row = repo.user_by_email(conn, str(body.email))
    if row is None or not security.verify_password(body.password, row["password_hash"]):
        raise Unauthorized("invalid email or password")
    token, expires = security.make_jwt(
        user_id=str(row["user_id"]), account_id=str(row["account_id"]),
        secret=settings.resolved_jwt_secret(), ttl_hours=settings.jwt_ttl_hours,
    )
    return Token(token=token, expires_at=expires)


def me(db: Database, principal: Principal) -> Me:
    with db.tenant(principal.account_id) as conn:
        user = repo.get_user(conn, principal.user_id)
    if user is None:
        raise Unauthorized("user no longer exists")
    return Me(
        user_id=user["id"], account_id=user["account_id"], email=user["email"], role=user["role"],
        auth=principal.via, key_id=principal.key_id, scopes=list(principal.scopes),
    )


def create_api_key(db: Database, principal: Principal, body: ApiKeyCreate) -> ApiKeyCreated:
    errors = ErrorCollector()
    requested: list[str] = []
    for i, scope in enumerate(body.scopes):
        s = scope.strip()
        if s not in scope_rules.SCOPES:
            errors.add(f"scopes[{i}]", f"unknown scope {scope!r}", list(scope_rules.SCOPES))
        elif s not in requested:
            requested.append(s)
    errors.raise_if_any()
    if principal.via == "api_key" and not scope_rules.covers(principal.scopes, requested):
        raise Forbidden("a key cannot create a key with scopes it does not hold itself (an empty list means full access)")
    plaintext, key_hash, prefix = security.new_api_key()
    with db.tenant(principal.account_id) as conn:
        row = repo.insert_api_key(
            conn, account_id=principal.account_id, user_id=principal.user_id, name=body.name.strip(),
            key_hash=key_hash, prefix=prefix, scopes=requested, created_by_key_id=principal.key_id,
        )
    return ApiKeyCreated(**row, key=plaintext)


def list_api_keys(db: Database, principal: Principal, page: PageParams) -> Page[ApiKey]:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_api_keys(conn, limit=page.limit, offset=page.offset)
    return Page[ApiKey](items=[ApiKey(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)


def delete_api_key(db: Database, principal: Principal, key_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete_api_key(conn, key_id):
            raise NotFound("api key")


__all__ = ["authenticate", "create_api_key", "delete_api_key", "list_api_keys", "login", "me", "register",
           "require_admin"]
