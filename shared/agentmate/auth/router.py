from __future__ import annotations

from typing import Any
from uuid import UUID

from fastapi import Response

from agentmate.api.deps import (
    AuthSettingsDep,
    ClientAddress,
    CurrentPrincipal,
    DbDep,
    KeyManager,
    PageDep,
    RetrievalDep,
    UserSession,
)
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES, Problem
from agentmate.auth import service
from agentmate.auth.schemas import (
    AccountDeletion,
    ApiKey,
    ApiKeyCreate,
    ApiKeyCreated,
    Credentials,
    Grant,
    Me,
    PasswordChange,
    Registered,
    Token,
)
from agentmate.core.limits import service as limits
from agentmate.core.limits.schemas import Usage
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import count
from agentmate.core.pagination import Page

router = Router(prefix="/api/auth", tags=["auth"], responses=PROBLEM_RESPONSES)

THROTTLED: dict[int | str, dict[str, Any]] = {
    429: {
        "model": Problem,
        "description": "Too many attempts from this client address (or for this email from it): wait `Retry-After`",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 1}}
        },
    }
}


@router.post("/register", status_code=201, response_model=Registered, responses=THROTTLED)
def register(body: Credentials, db: DbDep, settings: AuthSettingsDep, client: ClientAddress) -> Registered:
    """Register a user; each user gets its own account (tenant). Throttled per client address (429)."""
    out = service.register(db, settings, body, client)
    count("UserRegistered")
    return out


@router.post("/login", response_model=Token, responses=THROTTLED)
def login(body: Credentials, db: DbDep, settings: AuthSettingsDep, client: ClientAddress) -> Token:
    """Exchange email + password for a JWT (HS256). Failed logins are throttled per (email, client address) and
    per client address: 429 with `Retry-After`."""
    return service.login(db, settings, body, client)


@router.post("/password", response_model=Token, responses=THROTTLED)
def change_password(
    body: PasswordChange,
    principal: UserSession,
    db: DbDep,
    settings: AuthSettingsDep,
    client: ClientAddress,
) -> Token:
    """Change the password (JWT only: 401 without `Authorization: Bearer <jwt>`, 403 for an API key sent as the
    bearer; `current_password` re-entered). Every earlier JWT is refused from now on; the answer is a new one."""
    return service.change_password(db, settings, principal, body, client)


@router.post("/logout-all", status_code=204, response_class=Response)
def logout_all(principal: UserSession, db: DbDep) -> Response:
    """Sign out everywhere (JWT only: 401 without `Authorization: Bearer <jwt>`, 403 for an API key sent as the
    bearer): every JWT of the user minted so far is refused. API keys keep working."""
    service.logout_all(db, principal)
    return Response(status_code=204)


@router.delete(
    "/account",
    status_code=204,
    response_class=Response,
    responses={
        **THROTTLED,
        503: {
            "model": Problem,
            "description": "The vector index could not delete the account's vectors; nothing was deleted",
        },
    },
)
def delete_account(
    body: AccountDeletion,
    principal: UserSession,
    db: DbDep,
    settings: AuthSettingsDep,
    client: ClientAddress,
    retrieval: RetrievalDep,
) -> Response:
    """Delete the account (JWT only: 401 without `Authorization: Bearer <jwt>`, 403 for an API key sent as the
    bearer; `password` re-entered): every row of the tenant and its vectors. Its JWTs and API keys stop working
    at once. Not reversible."""
    service.delete_account(db, settings, principal, body, client, retrieval.remove_account)
    return Response(status_code=204)


@router.get("/me", response_model=Me)
def me(principal: CurrentPrincipal, db: DbDep) -> Me:
    """The caller: user, account, how it authenticated and the key's scopes."""
    return service.me(db, principal)


@router.get("/usage", response_model=Usage)
def usage(principal: CurrentPrincipal, db: DbDep) -> Usage:
    """The account's stored volume against its quotas (memories, working items, package bytes, sources, builds in
    the last 24 hours) and its request limits (rate, concurrent searches/packs/syncs, running jobs)."""
    return limits.usage(db, get_limit_settings(), principal.account_id)


@router.post("/apikeys", status_code=201, response_model=ApiKeyCreated)
def create_api_key(body: ApiKeyCreate, principal: KeyManager, db: DbDep) -> ApiKeyCreated:
    """Create an API key. The plaintext `key` is returned once. API-key callers need `manage_keys`."""
    out = service.create_api_key(db, principal, body)
    count("ApiKeyCreated")
    return out


@router.get("/apikeys", response_model=Page[ApiKey])
def list_api_keys(principal: KeyManager, db: DbDep, page: PageDep) -> Page[ApiKey]:
    """List the account's API keys (never the key material)."""
    return service.list_api_keys(db, principal, page)


@router.delete("/apikeys/{key_id}", status_code=204, response_class=Response)
def delete_api_key(key_id: UUID, principal: KeyManager, db: DbDep) -> Response:
    """Delete an API key; 404 if it does not exist in this account."""
    service.delete_api_key(db, principal, key_id)
    return Response(status_code=204)


@router.get("/grants", response_model=Page[Grant])
def list_grants(principal: KeyManager, db: DbDep, page: PageDep) -> Page[Grant]:
    """The OAuth clients the caller authorised (its live grants), newest first. API-key callers need
    `manage_keys`."""
    from agentmate.auth.oauth import service as oauth_service

    return oauth_service.list_grants(db, principal, page)


@router.delete("/grants/{grant_id}", status_code=204, response_class=Response)
def revoke_grant(grant_id: UUID, principal: KeyManager, db: DbDep) -> Response:
    """Revoke an OAuth grant: every access and refresh token of it is refused at once; 404 if it is not one of
    the caller's."""
    from agentmate.auth.oauth import service as oauth_service

    oauth_service.revoke_grant(db, principal, grant_id)
    return Response(status_code=204)
