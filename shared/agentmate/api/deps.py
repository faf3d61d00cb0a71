"""Request dependencies as static Annotated aliases: the database, retrieval, settings, the caller and its route's
scopes, pagination."""

from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Annotated

from fastapi import Depends, Header, Query, Request, Security
from fastapi.dependencies.models import Dependant
from fastapi.security import SecurityScopes
from starlette.concurrency import run_in_threadpool
from starlette.types import Scope

from agentmate.api.endpoints import call_blocking, serving_one_request
from agentmate.api.errors import CHALLENGE_STATE
from agentmate.auth import audience, credentials, tokens
from agentmate.auth.oauth.challenge import INSUFFICIENT_SCOPE, INVALID_TOKEN, bearer_challenge
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.db import Database, get_database
from agentmate.core.errors import Forbidden, JwtRequired, RateLimited, Unauthorized
from agentmate.core.idempotency import KEY_PATTERN, MAX_KEY_LENGTH, check_key
from agentmate.core.limits import service as limits
from agentmate.core.limits.gate import CredentialGate
from agentmate.core.limits.repository import Admission, Terms
from agentmate.core.limits.settings import get_limit_settings
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


async def _model_settings() -> "ModelSettings":
    """Imported here, on first use: only the wiki's routes read the language models (cold start)."""
    from agentmate.llm.settings import get_model_settings

    return get_model_settings()


async def _database() -> Database:
    return get_database()


async def retrieval() -> "Retrieval":
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


REALM = "agentmate"


def _resource(request: Request, settings: AuthSettings) -> str | None:
    """The request's canonical resource (RFC 8707) while OAuth is on, else None."""
    issuer = settings.oauth_issuer_url
    return audience.resource_for_path(issuer, request.url.path) if issuer else None


def _needed_scopes(request: Request, resource: str, issuer: str) -> list[str]:
    """What a token must carry for this request: the route's declared scopes, else (a route any credential may
    call) every scope of its resource."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    declared = route_scopes(dependant) if dependant is not None else []
    return declared or list(audience.scopes_for_resource(issuer, resource))


def _authenticate(
    request: Request, db: Database, settings: AuthSettings, api_key: str | None, terms: Terms
) -> tuple[Principal, Admission]:
    """``credentials.authenticate_admitted`` for this request's resource and limits. While OAuth is on, a refusal
    leaves the ``Bearer`` challenge naming the resource's metadata and the scopes needed (RFC 9728 §5.1, RFC 6750
    §3)."""
    bearer = _bearer(request)
    resource = _resource(request, settings)
    if resource is None and bearer and tokens.is_access_token(bearer) and not api_key:
        raise Unauthorized("OAuth is not enabled on this server: send an API key (X-Api-Key)")
    try:
        return credentials.authenticate_admitted(
            db, settings, api_key=api_key, bearer=bearer, resource=resource, terms=terms
        )
    except Unauthorized:
        if resource is not None:
            issuer = settings.oauth_issuer_url
            challenge = bearer_challenge(
                issuer,
                resource,
                _needed_scopes(request, resource, issuer),
                error=INVALID_TOKEN if bearer else None,
                realm=REALM,
            )
            setattr(request.state, CHALLENGE_STATE, challenge)
        raise


_LEASE = "limit_lease"


def _admit(request: Request, db: Database, principal: Principal, admission: Admission) -> None:
    """The account's request limits (``core.limits``), as the credential's statement answered them: 429 naming the
    limit, or admitted; an expensive route's concurrency lease is released by ``release_lease`` when the response
    is done."""
    credential = request.headers.get("x-api-key") or _bearer(request)
    lease = limits.settle(get_limit_settings(), principal.account_id, admission, credential)
    if lease is not None:
        request.scope.setdefault("state", {})[_LEASE] = (db, principal.account_id, lease)


def request_credential(scope: Scope) -> str | None:
    """The credential a request carries (``X-Api-Key``, else a Bearer token), unchecked."""
    headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
    for name, value in headers:
        if name == b"x-api-key":
            return value.decode("latin-1")
        if name == b"authorization" and value[:7].lower() == b"bearer ":
            return value[7:].decode("latin-1").strip()
    return None


def known_refusal(credential: str | None) -> RateLimited | None:
    """A request whose credential this process saw refused by its account's rate, until then: refused before
    routing (``api/app.NoStoreMiddleware``), with the same 429 as ``_admit``'s."""
    return limits.known_refusal(get_limit_settings(), credential)


_gate: CredentialGate | None = None


def credential_gate() -> CredentialGate:
    """This process's gate (``core/limits/gate.py``), built on first use from ``LIMIT_CONCURRENT_PER_CREDENTIAL``."""
    global _gate
    if _gate is None:
        _gate = CredentialGate(get_limit_settings().concurrent_per_credential)
    return _gate


def credential_slot(credential: str | None) -> AbstractAsyncContextManager[None]:
    """The credential's turn in this process's gate; none inside a Lambda invocation (``one_request_at_a_time``),
    where nothing can wait and the gate's semaphore cost an event-loop round per request."""
    if serving_one_request():
        return nullcontext()
    return credential_gate().slot(credential)


async def hold_refusal(headers: list[tuple[bytes, bytes]]) -> None:
    """A 429 waits up to ``LIMIT_REFUSAL_HOLD_MS`` (never past its ``Retry-After``) before it is sent."""
    retry_after = next((v for k, v in headers if k.lower() == b"retry-after"), b"")
    if retry_after.isdigit():
        await limits.hold_refusal(get_limit_settings(), int(retry_after))


async def release_lease(scope: Scope) -> None:
    held = scope.get("state", {}).pop(_LEASE, None)
    if held is not None:
        try:
            await run_in_threadpool(limits.release, *held)
        except Exception:  # the lease expires by itself (LIMIT_EXPENSIVE_LEASE_S); the answer was sent
            logger.warning("could not release an expensive request's lease", exc_info=True)


async def current_principal(request: Request) -> Principal:
    """The caller, authenticated and admitted by its account's limits in one statement (one round trip before
    the route's tenant transaction).

    In Lambda the environment serves one request at a time, so the statement runs right here, on the loop: a
    worker-thread hop cost more than the statement on a busy host (bench/warm_invoke.py --framework). A server with
    concurrent requests on its loop (uvicorn, the tests' client) runs it on a worker thread (``call_blocking``).
    The database and settings are read here rather than as sub-dependencies: FastAPI solves each sub-dependency
    on every request, cached or not, and these two cost more to solve than to read."""
    return await call_blocking(_principal, request, get_database(), get_auth_settings())


def _principal(request: Request, db: Database, settings: AuthSettings) -> Principal:
    terms = limits.terms(get_limit_settings(), expensive=limits.is_expensive_path(request.url.path))
    principal, admission = _authenticate(request, db, settings, request.headers.get("x-api-key"), terms)
    _admit(request, db, principal, admission)
    return _resolved(request, principal)


CurrentPrincipal = Annotated[Principal, Depends(current_principal)]


async def authorised(
    security_scopes: SecurityScopes, principal: CurrentPrincipal, request: Request
) -> Principal:
    """The caller, after checking every scope its route declares with ``Security(authorised, scopes=[...])``.

    Routes declare their scopes statically (the aliases below), so the OpenAPI's ``x-required-scopes`` is read
    from the dependency itself (``route_scopes``). JWT callers and empty-scope keys pass every check. A refusal
    is a 403 ``insufficient_scope`` naming every scope the route needs (``required_scopes``; RFC 6750 §3.1), and
    while OAuth is on its ``Bearer`` challenge names them too, so an OAuth client can ask for them (step-up).
    """
    needed = list(security_scopes.scopes)
    missing = [scope for scope in needed if not principal.can(scope)]
    if not missing:
        return principal
    settings = get_auth_settings()
    resource = _resource(request, settings)
    if resource is not None:
        challenge = bearer_challenge(
            settings.oauth_issuer_url,
            resource,
            needed,
            error=INSUFFICIENT_SCOPE,
            description="this route needs " + " and ".join(needed),
            realm=REALM,
        )
        setattr(request.state, CHALLENGE_STATE, challenge)
    needs = f" (this route needs {' and '.join(needed)})" if len(needed) > 1 else ""
    raise Forbidden(
        f"insufficient scope: {', '.join(missing)}{needs}",
        extra={"error": INSUFFICIENT_SCOPE, "required_scope": missing[0], "required_scopes": needed},
    )


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
    principal = credentials.authenticate(
        db, settings, api_key=None, bearer=bearer, resource=_resource(request, settings)
    )
    if principal.via != "jwt":
        raise Forbidden(
            "this route needs the signed-in user's JWT (POST /api/auth/login), not an API key"
            + (" or OAuth token" if principal.via == "oauth" else "")
        )
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
