"""The device authorization grant's routes (RFC 8628): the device authorization endpoint (§3.1, OAuth's own
form body and error shape) and the verification page's approve and deny calls (JSON, the signed-in user's JWT,
problem+json). The token endpoint's device-code exchange is core's route (``auth.oauth.router``), which calls
``device.exchange_device_code``.

Imported at the auth function's start (cold start): FastAPI, pydantic and light modules only; the grant's logic
(``device``) and the client lookup (``clients``) are imported inside the handlers."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import parse_qs

from fastapi import Depends, Request, Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import AuthSettingsDep, ClientAddress, DbDep, UserSession
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES, Problem
from agentmate.auth.oauth.schemas import DeviceAuthorizationResponse, DeviceDecision, OAuthError, field_name
from agentmate.auth.settings import AuthSettings
from agentmate.core.errors import NotFound

router = Router(prefix="/api/oauth", tags=["oauth"])

MAX_FORM_BYTES = 4096  # a device authorization request is three short fields
MAX_FORM_FIELDS = 16
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
FORM_FIELDS = ("client_id", "scope", "resource", "client_secret")


THROTTLED: dict[int | str, dict[str, Any]] = {
    429: {
        "model": Problem,
        "description": "Too many wrong user codes from this client address: wait `Retry-After`",
        "headers": {
            "Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer", "minimum": 1}}
        },
    }
}
# The approve and deny routes: 204, or problem+json (the user's own session, like every other REST route).
DECISION_ROUTE: dict[str, Any] = {
    "status_code": 204,
    "response_class": Response,
    "responses": {**PROBLEM_RESPONSES, **THROTTLED},
}
FORM_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/x-www-form-urlencoded": {
                "schema": {
                    "type": "object",
                    "required": ["client_id"],
                    "properties": {
                        "client_id": {
                            "type": "string",
                            "minLength": 1,
                            "description": "The client's id (or metadata URL)",
                        },
                        "scope": {
                            "type": "string",
                            "description": "Space-separated scopes; omitted = every scope the resource offers",
                        },
                        "resource": {
                            "type": "string",
                            "description": "RFC 8707: the resource the tokens are for, e.g. `{issuer}/mcp`; "
                            "omitted = the whole server",
                        },
                        "client_secret": {
                            "type": "string",
                            "description": "A confidential client's secret (or send HTTP Basic)",
                        },
                    },
                }
            }
        },
    }
}


def _oauth_issuer(settings: AuthSettings) -> None:
    if not settings.oauth_issuer_url:
        raise NotFound("endpoint", "OAuth is not enabled on this deployment (OAUTH_ISSUER_URL is empty)")


async def _form_body(request: Request) -> bytes | None:
    """The raw body, read up to ``MAX_FORM_BYTES`` (None when larger)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return body


FormBody = Annotated[bytes | None, Depends(_form_body)]


def _oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    headers = dict(NO_STORE)
    if status == 401:
        headers["WWW-Authenticate"] = 'Basic realm="oauth"'
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers=headers
    )


def _parse_form(content_type: str, body: bytes | None) -> dict[str, str] | JSONResponse:
    if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
        return _oauth_error("invalid_request", "send the parameters as application/x-www-form-urlencoded")
    if body is None:
        return _oauth_error("invalid_request", f"the request body is over {MAX_FORM_BYTES} bytes")
    try:
        fields = parse_qs(body.decode(), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        return _oauth_error("invalid_request", "the form body could not be parsed (UTF-8, at most 16 fields)")
    repeated = [name for name in FORM_FIELDS if len(fields.get(name, [])) > 1]
    if repeated:  # RFC 6749 §3.1: parameters must not be repeated
        return _oauth_error("invalid_request", f"parameter sent more than once: {', '.join(repeated)}")
    form = {name: values[0] for name, values in fields.items() if name in FORM_FIELDS}
    bad = [name for name, value in form.items() if "\x00" in value]
    if bad:
        return _oauth_error("invalid_request", f"{field_name(bad[0])}: must not contain U+0000")
    if not form.get("client_id"):
        return _oauth_error("invalid_request", "client_id is required")
    return form


@router.post(
    "/device_authorization",
    response_model=DeviceAuthorizationResponse,
    responses={
        400: {"model": OAuthError, "description": "invalid_request, invalid_scope or invalid_target"},
        401: {"model": OAuthError, "description": "invalid_client: unknown client or wrong secret"},
        404: {"model": Problem, "description": "OAuth is not enabled on this deployment"},
    },
    openapi_extra=FORM_BODY,
)
def device_authorization(request: Request, body: FormBody, db: DbDep, settings: AuthSettingsDep) -> Response:
    """RFC 8628 device authorization: a device code to poll the token endpoint with, and a user code for the user
    to approve at `verification_uri` (signed in). Form fields `client_id`, optional `scope` (space-separated;
    omitted = every scope of the resource) and `resource` (RFC 8707). Errors are OAuth's `{error,
    error_description}`."""
    _oauth_issuer(settings)
    form = _parse_form(request.headers.get("content-type", ""), body)
    if isinstance(form, JSONResponse):
        return form
    from agentmate.auth.oauth import (
        clients,
        device,
    )
    from agentmate.auth.oauth.settings import get_oauth_settings

    oauth = get_oauth_settings()
    secret = clients.presented_secret(
        request.headers.get("authorization", ""), form["client_id"], form.get("client_secret")
    )
    client = clients.authenticate_client(db, oauth, form["client_id"], secret)
    if client is None:
        return _oauth_error("invalid_client", "unknown client_id, or the client's secret is wrong", 401)
    try:
        out = device.start_authorization(
            db,
            settings,
            oauth,
            client_id=form["client_id"],
            client_name=client.client_name,
            client_uri=str(client.client_uri) if client.client_uri else None,
            client_scope=client.scope,
            scope=form.get("scope"),
            resource=form.get("resource"),
        )
    except device.DeviceAuthorizationError as exc:
        return _oauth_error(exc.error, exc.description, exc.status)
    return JSONResponse(out.response(), headers=NO_STORE)


@router.post("/device/approve", **DECISION_ROUTE)
def approve_device(
    principal: UserSession, body: DeviceDecision, db: DbDep, settings: AuthSettingsDep, client: ClientAddress
) -> Response:
    """Approve a device's pending authorization by its user code (the signed-in user's JWT only), granting
    `scopes` (a non-empty subset of those asked for; omitted = all). The device's next poll gets the tokens.
    404 for an unknown, expired or already decided code; wrong codes are throttled per address (429)."""
    _oauth_issuer(settings)
    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.settings import get_oauth_settings

    device.approve(
        db,
        get_oauth_settings(),
        body.user_code,
        user_id=principal.user_id,
        account_id=principal.account_id,
        scopes=body.scopes,
        client_address=client,
    )
    return Response(status_code=204)


@router.post("/device/deny", **DECISION_ROUTE)
def deny_device(
    principal: UserSession, body: DeviceDecision, db: DbDep, settings: AuthSettingsDep, client: ClientAddress
) -> Response:
    """Deny a device's pending authorization by its user code (the signed-in user's JWT only): the device's next
    poll gets `access_denied`. 404 for an unknown, expired or already decided code; 429 when throttled."""
    _oauth_issuer(settings)
    from agentmate.auth.oauth import device
    from agentmate.auth.oauth.settings import get_oauth_settings

    if body.scopes is not None:
        from agentmate.core.errors import invalid

        raise invalid("scopes", "a denial grants no scopes: send only user_code")
    device.deny(db, get_oauth_settings(), body.user_code, client_address=client)
    return Response(status_code=204)
