"""The authorization server's endpoints: RFC 8414 metadata, ``/api/oauth/authorize``, ``/token``, ``/revoke`` and
``/register``. The MCP SDK's handlers do the protocol over ``auth.oauth.provider``; the device grant at the token
endpoint is ours (``auth.oauth.device``).

Cold start: this module is imported when the auth function starts, so it imports only FastAPI, pydantic and light
modules of ours. The SDK (``mcp.server.auth``), the service, the provider and the device grant are imported
inside the handlers. Every answer is OAuth's own shape (RFC 6749 §5.2) with ``Cache-Control: no-store``; an
authorization response carries ``iss`` (RFC 9207) whether it is a success or an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import Query, Request, Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import AuthSettingsDep, ClientAddress, DbDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import Problem
from agentmate.auth.oauth import metadata
from agentmate.auth.oauth.schemas import (
    AUTHORIZE_FORM,
    REGISTER_BODY,
    REVOKE_FORM,
    TOKEN_FORM,
    AuthorizationServerMetadata,
    OAuthError,
    RegisteredClient,
    TokenResponse,
    field_name,
)
from agentmate.auth.oauth.settings import get_oauth_settings
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import Database
from agentmate.core.errors import NotFound, RateLimited

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.auth.oauth.provider import Provider

router = Router(tags=["oauth"])

NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
OFF: dict[int | str, dict[str, Any]] = {
    404: {"model": Problem, "description": "OAuth is not enabled on this server (OAUTH_ISSUER_URL is unset)"}
}
# The route group's own checks before an endpoint runs (a NUL in a JSON string, an undeclared query parameter)
# answer problem+json, as on every route; the endpoints' own refusals are OAuth's shape.
ALSO_PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {
        "model": OAuthError,
        "description": "RFC 6749 §5.2 error (`invalid_request`, `invalid_grant`, …); problem+json from the route "
        "group's own checks",
        "content": ALSO_PROBLEM,
    },
    401: {
        "model": OAuthError,
        "description": "`invalid_client`: the client is unknown or its secret is wrong",
    },
    **OFF,
}
REDIRECT: dict[int | str, dict[str, Any]] = {
    302: {
        "description": "To the consent page, or back to the client's redirect URI with `error`, `state` and "
        "`iss` (RFC 9207)",
        "headers": {"Location": {"schema": {"type": "string"}}},
    },
    400: {
        "model": OAuthError,
        "description": "No usable redirect URI to send the error to (OAuth's shape), or a malformed request "
        "(problem+json)",
        "content": ALSO_PROBLEM,
    },
    404: {
        "model": Problem,
        "description": "No such client (neither registered nor a usable client ID metadata document), or OAuth "
        "is not enabled on this server (OAUTH_ISSUER_URL is unset)",
    },
}


def _issuer(settings: AuthSettings) -> str:
    from agentmate.auth import audience

    if not settings.oauth_issuer_url:
        raise NotFound("OAuth (OAUTH_ISSUER_URL is not set on this server)")
    return audience.canonical(settings.oauth_issuer_url)


def _provider(db: Database, settings: AuthSettings) -> Provider:
    from agentmate.auth.oauth.provider import Provider

    return Provider(db, settings, get_oauth_settings())


def oauth_error(
    error: str, description: str, status: int = 400, headers: dict[str, str] | None = None
) -> Response:
    return JSONResponse(
        {"error": error, "error_description": description},
        status_code=status,
        headers={**NO_STORE, **(headers or {})},
    )


async def _form_error(request: Request) -> Response | None:
    """A 400 for a form body the endpoints cannot read: not a form, or a field holding U+0000."""
    try:
        form = await request.form()  # cached: the SDK's handler reads the same form
    except Exception:  # the form parser's errors: a malformed body is the client's
        return oauth_error("invalid_request", "the body must be application/x-www-form-urlencoded")
    bad = [k for k, v in form.multi_items() if "\x00" in k or (isinstance(v, str) and "\x00" in v)]
    if bad:
        return oauth_error("invalid_request", f"{field_name(bad[0])}: must not contain U+0000")
    return None


@router.get(
    "/.well-known/oauth-authorization-server",
    response_model=AuthorizationServerMetadata,
    responses=OFF,
    tags=["oauth"],
)
async def authorization_server_metadata(settings: AuthSettingsDep) -> JSONResponse:
    """RFC 8414 authorization server metadata: the endpoints, the 17 scopes, the grants (authorization code with
    PKCE S256, refresh token, device code), client ID metadata documents and dynamic registration."""
    return JSONResponse(metadata.document(_issuer(settings)))


def _with_iss(response: Response, issuer: str) -> Response:
    """RFC 9207: the SDK's error redirects back to the client carry ``iss`` too (the code redirect already does)."""
    from agentmate.auth.oauth.service import redirect_with

    location = response.headers.get("location")
    if response.status_code == 302 and location and not location.startswith(f"{issuer}/api/oauth/consent"):
        response.headers["location"] = redirect_with(location, iss=issuer)
    return response


async def _authorize(request: Request, db: Database, settings: AuthSettings) -> Response:
    issuer = _issuer(settings)
    refused = await _form_error(request) if request.method == "POST" else None
    if refused is not None:
        return refused
    from mcp.server.auth.handlers.authorize import AuthorizationHandler

    provider = _provider(db, settings)
    params = await request.form() if request.method == "POST" else request.query_params
    client_id = params.get("client_id")
    if isinstance(client_id, str) and client_id and await provider.get_client(client_id) is None:
        # Not redirectable (RFC 6749 §4.1.2.1): an unknown client is told here, as every unknown id is
        raise NotFound(
            "client",
            "unknown client_id: register the client (POST /api/oauth/register) or use the https URL of its "
            "client ID metadata document",
        )
    return _with_iss(await AuthorizationHandler(provider).handle(request), issuer)


def _q(description: str, **documented: Any) -> Any:
    """An optional authorization parameter. What it must be is documented (``documented``) but checked by the
    SDK's handler, which redirects the error to a valid client's redirect URI (RFC 6749 §4.1.2.1)."""
    return Query(None, description=description, json_schema_extra=documented or None)


@router.get("/api/oauth/authorize", status_code=302, response_class=Response, responses=REDIRECT)
async def authorize(
    request: Request,
    db: DbDep,
    settings: AuthSettingsDep,
    client_id: Annotated[
        str, Query(min_length=1, max_length=2048, description="The client's id (registered, or an https URL)")
    ],
    response_type: str | None = _q("code", enum=["code"]),
    redirect_uri: str | None = _q("One of the client's redirect URIs, exactly", format="uri"),
    code_challenge: str | None = _q(
        "PKCE: BASE64URL(SHA-256(code_verifier)), S256 only", pattern="^[A-Za-z0-9_-]{43}$"
    ),
    code_challenge_method: str | None = _q("S256", enum=["S256"]),
    state: str | None = _q("Returned unchanged with the code or the error"),
    scope: str | None = _q("Space-separated scopes; none = every scope the resource offers"),
    resource: str | None = _q("RFC 8707: the resource the token is for, e.g. {issuer}/mcp"),
) -> Response:
    """Start an authorization (code flow with PKCE S256 only): the client is checked (metadata document or
    registration), the redirect URI matched exactly, the resource (RFC 8707) must be one of this server's and the
    scopes ones it offers (none asked = all it offers). Redirects to the login and consent page."""
    return await _authorize(request, db, settings)


@router.post(
    "/api/oauth/authorize",
    status_code=302,
    response_class=Response,
    responses=REDIRECT,
    openapi_extra=AUTHORIZE_FORM,
)
async def authorize_form(request: Request, db: DbDep, settings: AuthSettingsDep) -> Response:
    """The authorization request as a form post (same parameters as the GET)."""
    return await _authorize(request, db, settings)


@router.post("/api/oauth/token", response_model=TokenResponse, responses=ERRORS, openapi_extra=TOKEN_FORM)
async def token(request: Request, db: DbDep, settings: AuthSettingsDep) -> Response:
    """The token endpoint: `authorization_code` (with the PKCE verifier and the same redirect URI),
    `refresh_token` (rotates: the old refresh token is spent, and using it again revokes the whole grant; `scope`
    may narrow, never widen) and the device grant (RFC 8628 §3.4: `authorization_pending`, `slow_down`,
    `access_denied`, `expired_token`)."""
    _issuer(settings)
    refused = await _form_error(request)
    if refused is not None:
        return refused
    form = await request.form()
    if form.get("grant_type") == metadata.DEVICE_GRANT:
        return await _device_token(request, db, settings, form.get("device_code"))
    from mcp.server.auth.handlers.token import TokenHandler

    from agentmate.auth.oauth.provider import HashedSecretAuthenticator

    provider = _provider(db, settings)
    response: Response = await TokenHandler(provider, HashedSecretAuthenticator(provider)).handle(request)
    return response


async def _device_token(
    request: Request, db: Database, settings: AuthSettings, device_code: object
) -> Response:
    """RFC 8628 §3.4: the client authenticates as at any token request (a public client by its id)."""
    import anyio.to_thread
    from mcp.server.auth.middleware.client_auth import AuthenticationError

    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.provider import HashedSecretAuthenticator

    try:
        client = await HashedSecretAuthenticator(_provider(db, settings)).authenticate_request(request)
    except AuthenticationError as exc:
        return oauth_error("invalid_client", exc.message, 401)
    if not isinstance(device_code, str) or not device_code:
        return oauth_error("invalid_request", "device_code is required")
    client_id = client.client_id or ""
    oauth = get_oauth_settings()
    body: dict[str, object] = await anyio.to_thread.run_sync(
        lambda: device.exchange_device_code(db, oauth, client_id=client_id, device_code=device_code)
    )
    return JSONResponse(body, status_code=400 if "error" in body else 200, headers=NO_STORE)


@router.post(
    "/api/oauth/revoke",
    status_code=200,
    response_class=Response,
    responses={200: {"description": "Revoked, or unknown (RFC 7009 §2.2)"}, **ERRORS},
    openapi_extra=REVOKE_FORM,
)
async def revoke(request: Request, db: DbDep, settings: AuthSettingsDep) -> Response:
    """RFC 7009: revoke an access or refresh token, and with it every token of its grant. An unknown or already
    revoked token is a 200 as well. The client authenticates as at the token endpoint."""
    _issuer(settings)
    refused = await _form_error(request)
    if refused is not None:
        return refused
    import anyio.to_thread
    from mcp.server.auth.middleware.client_auth import AuthenticationError

    from agentmate.auth.oauth import service
    from agentmate.auth.oauth.provider import HashedSecretAuthenticator

    try:  # the client first (RFC 7009 §2.1), then what it asks
        client = await HashedSecretAuthenticator(_provider(db, settings)).authenticate_request(request)
    except AuthenticationError as exc:
        return oauth_error("invalid_client", exc.message, 401)
    token_value = (await request.form()).get("token")
    if not isinstance(token_value, str) or not token_value:
        return oauth_error("invalid_request", "token is required")
    row = await anyio.to_thread.run_sync(service.load_token, db, token_value)
    if row is not None and row.client_id == client.client_id:
        await anyio.to_thread.run_sync(service.revoke_token, db, token_value)
    return Response(status_code=200, headers=NO_STORE)


@router.post(
    "/api/oauth/register",
    status_code=201,
    response_model=RegisteredClient,
    responses={
        400: {
            "model": OAuthError,
            "description": "RFC 7591 §3.2.2: `invalid_client_metadata`, …; problem+json from the route group's "
            "own checks (a NUL in a string)",
            "content": ALSO_PROBLEM,
        },
        429: {
            "model": OAuthError,
            "description": "Too many registrations from this address: wait `Retry-After`",
        },
        **OFF,
    },
    openapi_extra=REGISTER_BODY,
)
async def register(
    request: Request, db: DbDep, settings: AuthSettingsDep, address: ClientAddress
) -> Response:
    """RFC 7591 dynamic client registration, for clients without a client ID metadata document. Throttled per
    client address."""
    _issuer(settings)
    import anyio.to_thread
    from mcp.server.auth.handlers.register import RegistrationHandler
    from mcp.server.auth.settings import ClientRegistrationOptions

    from agentmate.auth.oauth import clients
    from agentmate.core.scopes import SCOPES

    oauth = get_oauth_settings()
    try:
        await anyio.to_thread.run_sync(clients.check_registration_allowed, db, oauth, address)
    except RateLimited as exc:
        headers = {"Retry-After": str(exc.retry_after)}
        return oauth_error("temporarily_unavailable", exc.detail or "too many registrations", 429, headers)
    options = ClientRegistrationOptions(enabled=True, valid_scopes=list(SCOPES))
    response = await RegistrationHandler(_provider(db, settings), options).handle(request)
    response.headers.update(NO_STORE)
    return response
