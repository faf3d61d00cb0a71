from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Response

from agentmate.api.deps import CurrentPrincipal, DbDep, KeyManager, PageDep, SettingsDep
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.auth import service
from agentmate.auth.schemas import ApiKey, ApiKeyCreate, ApiKeyCreated, Credentials, Me, Registered, Token
from agentmate.core.observability import count
from agentmate.core.pagination import Page

router = APIRouter(prefix="/api/auth", tags=["auth"], responses=PROBLEM_RESPONSES)


@router.post("/register", status_code=201, response_model=Registered)
def register(body: Credentials, db: DbDep) -> Registered:
    """Register a user; each user gets its own account (tenant)."""
    out = service.register(db, body)
    count("UserRegistered")
    return out


@router.post("/login", response_model=Token)
def login(body: Credentials, db: DbDep, settings: SettingsDep) -> Token:
    """Exchange email + password for a JWT (HS256)."""
    return service.login(db, settings, body)


@router.get("/me", response_model=Me)
def me(principal: CurrentPrincipal, db: DbDep) -> Me:
    """The caller: user, account, how it authenticated and the key's scopes."""
    return service.me(db, principal)


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
