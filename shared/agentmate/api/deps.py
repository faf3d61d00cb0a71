"""Request dependencies as static Annotated aliases: the database, retrieval, settings, the caller and its route's
scopes, pagination."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Header, Query, Request, Security
from fastapi.dependencies.models import Dependant
from fastapi.security import SecurityScopes

from agentmate.auth import credentials
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.db import Database, get_database
from agentmate.core.errors import Forbidden, JwtRequired
from agentmate.core.idempotency import KEY_PATTERN, MAX_KEY_LENGTH, check_key
from agentmate.core.observability import logger
from agentmate.core.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET, PageParams
from agentmate.core.principal import Principal

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.llm.settings import ModelSettings
    from agentmate.retrieval.service import Retrieval


# Trivial dependencies are ``async def`` on purpose: a plain ``def`` dependency costs a worker-thread hop per
# request, which dominated warm Lambda latency (bench/warm_invoke.py).
async def _auth_settings() -> AuthSettings:
    return get_auth_settings()


async def _model_settings() -> ModelSettings:
    """Imported here, on first use: only the wiki's routes read the language models (cold start)."""
    from agentmate.llm.settings import get_model_settings

    return get_model_settings()


async def _database() -> Database:
    return get_database()


async def retrieval() -> Retrieval:
    """The execution environment's Retrieval; tests override this dependency with their own. Imported here, on
    first use, so route groups without retrieval never load it (cold start)."""
    from agentmate.retrieval.service import get_retrieval

    return get_retrieval()


AuthSettingsDep = Annotated[AuthSettings, Depends(_auth_settings)]
ModelSettingsDep = Annotated["ModelSettings", Depends(_model_settings)]
DbDep = Annotated[Database, Depends(_database)]
RetrievalDep = Annotated["Retrieval", Depends(retrieval)]


def _bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth[:7].lower() == "bearer " else None


def _resolved(request: Request, principal: Principal) -> Principal:
    logger.append_keys(account_id=str(principal.account_id))
    request.state.principal = principal
    return principal


def current_principal(request: Request, db: DbDep, settings: AuthSettingsDep) -> Principal:
    principal = credentials.authenticate(
        db, settings, api_key=request.headers.get("x-api-key"), bearer=_bearer(request)
    )
    return _resolved(request, principal)


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


async def authorised(security_scopes: SecurityScopes, principal: CurrentPrincipal) -> Principal:
    """The caller, after checking every scope its route declares with ``Security(authorised, scopes=[...])``.

    Routes declare their scopes statically (the aliases below), so the OpenAPI's ``x-required-scopes`` is read
    from the dependency itself (``route_scopes``). JWT callers and empty-scope keys pass every check.
    """
    for scope in security_scopes.scopes:
        principal.require(scope)
    return principal


# One alias per scope a route can require; the scope strings are core.scopes.SCOPES.
TodosRead = Annotated[Principal, Security(authorised, scopes=["todos:r"])]
TodosWrite = Annotated[Principal, Security(authorised, scopes=["todos:rw"])]
NotesRead = Annotated[Principal, Security(authorised, scopes=["notes:r"])]
NotesWrite = Annotated[Principal, Security(authorised, scopes=["notes:rw"])]
ReportsRead = Annotated[Principal, Security(authorised, scopes=["reports:r"])]
ReportsWrite = Annotated[Principal, Security(authorised, scopes=["reports:rw"])]
BookmarksRead = Annotated[Principal, Security(authorised, scopes=["bookmarks:r"])]
BookmarksWrite = Annotated[Principal, Security(authorised, scopes=["bookmarks:rw"])]
ExpensesRead = Annotated[Principal, Security(authorised, scopes=["expenses:r"])]
ExpensesWrite = Annotated[Principal, Security(authorised, scopes=["expenses:rw"])]
MemoryRead = Annotated[Principal, Security(authorised, scopes=["memory:r"])]
MemoryWrite = Annotated[Principal, Security(authorised, scopes=["memory:rw"])]
SkillsRead = Annotated[Principal, Security(authorised, scopes=["skills:r"])]
SkillsWrite = Annotated[Principal, Security(authorised, scopes=["skills:rw"])]
KnowledgeRead = Annotated[Principal, Security(authorised, scopes=["knowledge:r"])]
KnowledgeWrite = Annotated[Principal, Security(authorised, scopes=["knowledge:rw"])]
# Key management: checked before the body is validated, so a key without manage_keys always gets a 403.
KeyManager = Annotated[Principal, Security(authorised, scopes=["manage_keys"])]


def user_session(request: Request, db: DbDep, settings: AuthSettingsDep) -> Principal:
    """The signed-in user's JWT, never an API key: for routes that change or end the user's own credentials.

    Only ``Authorization: Bearer`` counts here (an ``X-Api-Key`` beside it is ignored). Without a bearer token
    the route's credential is missing: 401 with a ``Bearer`` challenge. A valid API key sent as the bearer token
    is a credential of the wrong kind: 403.
    """
    bearer = _bearer(request)
    if not bearer:
        raise JwtRequired(
            "this route needs the signed-in user's JWT: send Authorization: Bearer <jwt> "
            "(POST /api/auth/login); API keys are not accepted here"
        )
    principal = credentials.authenticate(db, settings, api_key=None, bearer=bearer)
    if principal.via != "jwt":
        raise Forbidden("this route needs the signed-in user's JWT (POST /api/auth/login), not an API key")
    return _resolved(request, principal)


# Checked before the body is validated, like the scopes.
UserSession = Annotated[Principal, Depends(user_session)]

# Knowledge routes that read a skill's compiled contract from the skills domain need both scopes (spec/001);
# one Security with two scopes, so the OpenAPI's x-required-scopes lists both.
KnowledgeDiscover = Annotated[Principal, Security(authorised, scopes=["knowledge:r", "skills:r"])]
KnowledgeResolve = Annotated[Principal, Security(authorised, scopes=["knowledge:rw", "skills:r"])]


def route_scopes(dependant: Dependant) -> list[str]:
    """The scopes a route's dependency tree declares (``Security(..., scopes=[...])``), in declaration order."""
    found: list[str] = []
    for dep in dependant.dependencies:
        for scope in [*(dep.own_oauth_scopes or ()), *route_scopes(dep)]:
            if scope not in found:
                found.append(scope)
    return found


async def client_address(request: Request) -> str:
    """The caller's address: API Gateway's ``requestContext.http.sourceIp`` (Mangum puts it in the ASGI scope's
    ``client``), locally the socket peer. Never a client-supplied header such as X-Forwarded-For."""
    return request.client.host if request.client else ""


ClientAddress = Annotated[str, Depends(client_address)]


async def idempotency_key(
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=MAX_KEY_LENGTH,
            pattern=KEY_PATTERN,
            description="Retry-safe create: a replay returns the original response. 1..255 printable ASCII "
            "characters",
        ),
    ] = None,
) -> str | None:
    return check_key(idempotency_key)


IdempotencyKey = Annotated[str | None, Depends(idempotency_key)]


async def page_params(
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size, 1..100")] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET, description="Items to skip")] = 0,
) -> PageParams:
    return PageParams(limit=limit, offset=offset)


PageDep = Annotated[PageParams, Depends(page_params)]
