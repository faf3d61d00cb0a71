"""The pages OAuth needs a person for (docs/decisions.md: the one exception to "a pure API, no UI"): login and
consent for a pending authorization (``/api/oauth/consent``) and device verification (``/api/oauth/device``).

Server-rendered HTML: no JavaScript, one inline stylesheet, every value escaped (``string.Template`` over
``html.escape``d values). The forms are CSRF-protected and their headers set by ``auth.oauth.csrf``. The user
signs in with the account's email and password on the form itself (core's ``verify_password_login``: the login
route's checks and throttle); no session outlives the request.

Cold start: the auth function imports this router at start; the services (core's ``auth.oauth.service``,
device's ``auth.oauth.device``, ``auth.service``) are imported inside the handlers, and the templates read on
first use.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit
from uuid import UUID

from fastapi import Query, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from agentmate.api.endpoints import Router
from agentmate.auth.oauth import csrf
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.db import get_database
from agentmate.core.errors import NotFound, RateLimited, Unauthorized, ValidationFailed

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.core.db import Database

TEMPLATES = Path(__file__).resolve().parent / "templates"
CONSENT_PATH = "/api/oauth/consent"
DEVICE_PATH = "/api/oauth/device"
FORM_MAX_BYTES = 16 * 1024  # every field below, with room; api.routing refuses a larger body with 413
MAX_EMAIL = 254
MAX_PASSWORD = 256
MAX_USER_CODE = 32
# What the device page takes as a code (device.USER_CODE_ALPHABET, 8 letters; case, dashes and spaces ignored), or
# nothing. Documented, not enforced by FastAPI: a mistyped code gets the HTML page with the error, not JSON.
USER_CODE_PATTERN = r"^$|^[ -]*(?:[BCDFGHJKLMNPQRSTVWXZbcdfghjklmnpqrstvwxz][ -]*){8}$"
MAX_SCOPES = 64
START_AGAIN = (
    "This sign-in request is unknown, has expired or was already used. Start again from the application "
    "that sent you here."
)

_HTML = {"content": {"text/html": {"schema": {"type": "string"}}}}


_PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}


def _html(description: str, problem: bool = False) -> dict[str, Any]:
    """An HTML page response; ``problem``: the route group's own 400/413 (an undeclared query parameter, a body
    over the limit) may answer problem+json too."""
    content = {**_HTML["content"], **(_PROBLEM if problem else {})}
    return {"description": description, "content": content}


_FORM_FIELDS: dict[str, Any] = {
    "csrf": {"type": "string", "maxLength": 64, "description": "The page's CSRF token (hidden field)"},
    "action": {"type": "string", "enum": ["approve", "deny"]},
    "email": {"type": "string", "maxLength": MAX_EMAIL},
    "password": {"type": "string", "maxLength": MAX_PASSWORD},
    "scope": {
        "type": "array",
        "items": {"type": "string", "maxLength": 64},
        "maxItems": MAX_SCOPES,
        "description": "The scopes the user keeps (a subset of those asked for); repeat the field per scope",
    },
}


def _form_body(required: Sequence[str], extra: dict[str, Any]) -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {**extra, **_FORM_FIELDS},
        "required": [*required, "csrf", "action"],
    }
    return {
        "requestBody": {"required": True, "content": {csrf.FORM_TYPE: {"schema": schema}}},
        "x-max-request-bytes": FORM_MAX_BYTES,  # api.routing.BODY_LIMIT_KEY
    }


_FORM_RESPONSES: dict[int | str, dict[str, Any]] = {
    303: {"description": "Decided: on to the client's redirect URI (code, state and iss, or error)"},
    400: _html(
        "A missing or invalid field, or an unknown, expired or used request: the page says which", True
    ),
    401: _html("Wrong email or password: the page again, nothing approved"),
    403: _html("CSRF token missing or wrong, or the form was sent from another origin"),
    404: _html("OAuth is not enabled on this server"),
    413: {"description": "The form is over its size limit", "content": _PROBLEM},
    415: _html("The form takes application/x-www-form-urlencoded only"),
    429: _html("Too many failed sign-ins or codes from this address: wait Retry-After"),
}

router = Router(prefix="/api/oauth", tags=["oauth"])


class Form(NamedTuple):
    fields: dict[str, str]
    scopes: list[str]


class Consent(NamedTuple):
    """What a consent form shows: the client, the scopes asked for (``checked`` the ones kept) and the fields."""

    action: str
    hidden: dict[str, str]
    client_name: str
    client_uri: str | None
    client_id: str
    resource: str
    scopes: Sequence[str]
    checked: set[str]
    redirect_uri: str | None = None
    email: str = ""
    errors: Sequence[tuple[str, str]] = ()


class Rendered(NamedTuple):
    status: int
    title: str
    body: str
    redirect_uri: str | None = None
    headers: Mapping[str, str] = {}


# ---- rendering ------------------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _template(name: str) -> Template:
    return Template((TEMPLATES / f"{name}.html").read_text(encoding="utf-8"))


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _errors(errors: Iterable[tuple[str, str]]) -> str:
    items = "".join(f"<li data-field='{_esc(f)}'><code>{_esc(f)}</code>: {_esc(m)}</li>" for f, m in errors)
    return f'<div class="error" id="error" role="alert"><ul>{items}</ul></div>\n' if items else ""


def _message(text: str, error: bool = False) -> str:
    return _template("message").substitute(text=_esc(text), css="error" if error else "muted")


def _scope_boxes(scopes: Sequence[str], checked: set[str]) -> str:
    from agentmate.core.scopes import DESCRIPTIONS

    rows = []
    for i, scope in enumerate(scopes):
        tick = " checked" if scope in checked else ""
        rows.append(
            f'<label><input type="checkbox" name="scope" id="scope-{i}" value="{_esc(scope)}"{tick}> '
            f"<code>{_esc(scope)}</code> {_esc(DESCRIPTIONS.get(scope, ''))}</label>\n"
        )
    return "".join(rows)


def _redirect_note(redirect_uri: str | None) -> str:
    if not redirect_uri:
        return ""
    parts = urlsplit(redirect_uri)
    where = f"{parts.scheme}://{parts.netloc}" if parts.netloc else f"{parts.scheme}:"
    return f'<div class="muted">Afterwards you go back to <code id="redirect">{_esc(where)}</code></div>\n'


def _consent_body(view: Consent) -> str:
    uri = (
        f'<div class="muted">Its website, as the client states it (not verified by this server): '
        f'<code id="client-uri">{_esc(view.client_uri)}</code></div>\n'
        if view.client_uri
        else ""
    )
    hidden = "".join(
        f'<input type="hidden" name="{_esc(k)}" value="{_esc(v)}">\n' for k, v in view.hidden.items()
    )
    return _template("consent").substitute(
        error=_errors(view.errors),
        client_name=_esc(view.client_name),
        client_uri=uri,
        client_id=_esc(view.client_id),
        resource=_esc(view.resource),
        redirect=_redirect_note(view.redirect_uri),
        action=_esc(view.action),
        hidden=hidden,
        scopes=_scope_boxes(view.scopes, view.checked),
        email=_esc(view.email),
    )


def _device_code_body(user_code: str, errors: Sequence[tuple[str, str]] = ()) -> str:
    return _template("device_code").substitute(error=_errors(errors), user_code=_esc(user_code))


def _respond(auth: AuthSettings, page: Rendered, nonce: str | None = None) -> HTMLResponse:
    body = _template("layout").substitute(title=_esc(page.title), body=page.body)
    headers = {**csrf.security_headers(page.redirect_uri), **page.headers}
    response = HTMLResponse(body, status_code=page.status, headers=headers)
    if nonce is not None:
        from agentmate.auth.oauth.settings import get_oauth_settings

        max_age = max(get_oauth_settings().oauth_request_ttl_s, get_oauth_settings().oauth_device_code_ttl_s)
        response.headers.append("Set-Cookie", csrf.set_cookie(auth.oauth_issuer_url, nonce, max_age))
    return response


def _redirect(url: str) -> Response:
    headers = {**csrf.security_headers(url), "Location": url, "Referrer-Policy": "no-referrer"}
    return Response(status_code=303, headers=headers)


def _plain(status: int, title: str, text: str, headers: Mapping[str, str] | None = None) -> Rendered:
    return Rendered(status, title, _message(text, error=status >= 400), headers=headers or {})


def _throttled(exc: RateLimited) -> Rendered:
    return _plain(429, "Too many attempts", exc.detail, {"Retry-After": str(exc.retry_after)})


# ---- the request's parts ----------------------------------------------------------------------------------


def _settings() -> AuthSettings | None:
    auth = get_auth_settings()
    return auth if auth.oauth_issuer_url else None


OFF = Rendered(404, "Not available", _message("OAuth is not enabled on this server.", error=True))


def _parse_form(body: bytes, single: Sequence[str]) -> tuple[Form, list[tuple[str, str]]]:
    """The posted fields: each of ``single`` at most once, ``scope`` repeated; unknown fields are errors."""
    errors: list[tuple[str, str]] = []
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_SCOPES + 16)
    except (UnicodeDecodeError, ValueError):
        return Form({}, []), [("body", "is not a UTF-8 form of at most 80 fields")]
    fields: dict[str, str] = {}
    scopes: list[str] = []
    for name, value in pairs:
        if "\x00" in value:
            errors.append((name, "holds U+0000"))
        elif name == "scope":
            scopes.append(value)
        elif name not in single:
            errors.append((name[:64], f"unknown field (the form sends {', '.join([*single, 'scope'])})"))
        elif name in fields:
            errors.append((name, "sent more than once"))
        else:
            fields[name] = value
    return Form(fields, scopes), errors


def _credential_errors(form: Form) -> list[tuple[str, str]]:
    errors = []
    email, password = form.fields.get("email", ""), form.fields.get("password", "")
    if not email.strip() or len(email) > MAX_EMAIL:
        errors.append(("email", f"enter the account's email (at most {MAX_EMAIL} characters)"))
    if not password or len(password) > MAX_PASSWORD:
        errors.append(("password", f"enter the account's password (at most {MAX_PASSWORD} characters)"))
    return errors


def _scope_errors(kept: Sequence[str], asked: Sequence[str]) -> list[tuple[str, str]]:
    unknown = [s for s in kept if s not in asked]
    if unknown:
        return [
            ("scope", f"not asked for by this client: {', '.join(unknown[:5])} (allowed: {', '.join(asked)})")
        ]
    if not kept:
        return [("scope", "keep at least one permission ticked, or choose Deny")]
    return []


def _action_error(form: Form) -> list[tuple[str, str]]:
    if form.fields.get("action") in ("approve", "deny"):
        return []
    return [("action", "choose Allow or Deny (allowed: approve, deny)")]


async def _checked_form(
    request: Request, auth: AuthSettings, purpose: str, single: Sequence[str], binding_field: str | None
) -> Form | Rendered:
    """The posted form once the content type, origin and CSRF token pass; else the refusal's page."""
    h = request.headers
    reason = csrf.refusal(
        auth.oauth_issuer_url, h.get("content-type"), h.get("origin"), h.get("sec-fetch-site")
    )
    if reason is not None:
        status = 415 if csrf.wrong_content_type(reason) else 403
        return _plain(status, "Request refused", reason)
    form, errors = _parse_form(await request.body(), single)
    binding = form.fields.get(binding_field, "") if binding_field else ""
    cookie = request.cookies.get(csrf.cookie_name(auth.oauth_issuer_url))
    if not csrf.verify(auth.resolved_jwt_secret(), cookie, form.fields.get(csrf.FIELD), purpose, binding):
        return _plain(
            403,
            "Request refused",
            "This form's security token is missing or does not match this browser (CSRF). Reload the page "
            "from the application's link and try again.",
        )
    if errors:
        return _plain(400, "Invalid form", "; ".join(f"{f}: {m}" for f, m in errors))
    return form


CONSENT_FIELDS = ("request", csrf.FIELD, "action", "email", "password")
DEVICE_FIELDS = ("user_code", csrf.FIELD, "action", "email", "password")


def _wrong_login(exc: Unauthorized) -> str:
    """The login's own words for a suspended account (told only to who knows the password), else the usual."""
    from agentmate.auth.credentials import SUSPENDED

    return exc.detail if exc.detail == SUSPENDED else "wrong email or password"


def _request_id(value: str | None) -> UUID | None:
    try:
        return UUID(value) if value and len(value) <= 64 else None
    except ValueError:
        return None


# ---- login + consent ---------------------------------------------------------------------------------------


def _consent_view(auth: AuthSettings, pending: Any, nonce: str, **kw: Any) -> Consent:
    rid = str(pending.request_id)
    token = csrf.token(auth.resolved_jwt_secret(), nonce, "consent", rid)
    return Consent(
        action=CONSENT_PATH,
        hidden={"request": rid, csrf.FIELD: token},
        client_name=pending.client_name or pending.client_id,
        client_uri=pending.client_uri,
        client_id=pending.client_id,
        resource=pending.resource,
        scopes=list(pending.scopes),
        checked=kw.pop("checked", set(pending.scopes)),
        redirect_uri=pending.redirect_uri,
        **kw,
    )


def _consent_page(view: Consent, status: int = 200) -> Rendered:
    return Rendered(status, "Allow access?", _consent_body(view), redirect_uri=view.redirect_uri)


def _show_consent(db: Database, auth: AuthSettings, request_id: str | None, nonce: str) -> Rendered:
    from agentmate.auth.oauth import service

    rid = _request_id(request_id)
    pending = service.pending_request(db, rid) if rid is not None else None
    if pending is None:  # not an id at all (400), or no such pending request (404)
        return _plain(400 if rid is None else 404, "Start again", START_AGAIN)
    return _consent_page(_consent_view(auth, pending, nonce))


@router.get(
    "/consent",
    response_class=HTMLResponse,
    responses={
        200: _html("The login and consent page"),
        400: _html("No `request` parameter, or not an id", True),
        404: _html(
            "An unknown, expired or used request (start again from the application), or OAuth is not "
            "enabled on this server"
        ),
    },
)
def consent_page(
    request: Request,
    request_id: Annotated[
        str,
        Query(
            alias="request",
            description="The pending authorization's id (from /authorize)",
            json_schema_extra={"format": "uuid"},
        ),
    ],
) -> HTMLResponse:
    """The login and consent page of a pending authorization: the client, the scopes it asks for (the user may
    untick some), email and password. HTML, no script; CSRF-protected form."""
    auth = _settings()
    if auth is None:
        return _respond(get_auth_settings(), OFF)
    nonce = csrf.nonce_for(request.cookies.get(csrf.cookie_name(auth.oauth_issuer_url)))
    return _respond(auth, _show_consent(get_database(), auth, request_id, nonce), nonce)


def _decide_consent(
    db: Database, auth: AuthSettings, form: Form, client_address: str, nonce: str
) -> str | Rendered:
    from agentmate.auth.oauth import service

    rid = _request_id(form.fields.get("request"))
    pending = service.pending_request(db, rid) if rid is not None else None
    if pending is None or rid is None:
        return _plain(400, "Start again", START_AGAIN)
    errors = _action_error(form)
    if not errors and form.fields["action"] == "deny":
        return service.deny_request(db, auth, rid)
    errors += _credential_errors(form) + _scope_errors(form.scopes, pending.scopes)
    view = _consent_view(auth, pending, nonce, checked=set(form.scopes), email=form.fields.get("email", ""))
    if errors:
        return _consent_page(view._replace(errors=errors), 400)
    try:
        user = _verify_login(db, auth, form, client_address)
        return service.approve_request(
            db, auth, _oauth(), rid, user_id=user.user_id, account_id=user.account_id, scopes=form.scopes
        )
    except ValidationFailed as exc:
        return _consent_page(view._replace(errors=[(e.field, e.message) for e in exc.errors]), 400)
    except NotFound:
        return _plain(400, "Start again", START_AGAIN)
    except RateLimited as exc:
        return _throttled(exc)
    except Unauthorized as exc:
        return _consent_page(view._replace(errors=[("password", _wrong_login(exc))]), 401)


def _verify_login(db: Database, auth: AuthSettings, form: Form, client_address: str) -> Any:
    from agentmate.auth import service as auth_service

    return auth_service.verify_password_login(
        db, auth, form.fields["email"].strip(), form.fields["password"], client_address
    )


def _oauth() -> Any:
    from agentmate.auth.oauth.settings import get_oauth_settings

    return get_oauth_settings()


@router.post(
    "/consent",
    response_class=HTMLResponse,
    status_code=303,
    responses=_FORM_RESPONSES,
    openapi_extra=_form_body(["request"], {"request": {"type": "string", "format": "uuid"}}),
)
async def consent_decide(request: Request) -> Response:
    """Sign in and allow (303 to the client with `code`, `state` and `iss`) or deny (303 with
    `error=access_denied`). Form-encoded only; the page's CSRF token and cookie must match."""
    auth = _settings()
    if auth is None:
        return _respond(get_auth_settings(), OFF)
    form = await _checked_form(request, auth, "consent", CONSENT_FIELDS, "request")
    if isinstance(form, Rendered):
        return _respond(auth, form)
    nonce = request.cookies[csrf.cookie_name(auth.oauth_issuer_url)]
    address = request.client.host if request.client else ""
    out = await run_in_threadpool(_decide_consent, get_database(), auth, form, address, nonce)
    return _redirect(out) if isinstance(out, str) else _respond(auth, out)


# ---- device verification (RFC 8628 §3.3) -------------------------------------------------------------------


def _device_view(auth: AuthSettings, device: Any, nonce: str, **kw: Any) -> Consent:
    token = csrf.token(auth.resolved_jwt_secret(), nonce, "device", "")
    return Consent(
        action=DEVICE_PATH,
        hidden={"user_code": device.user_code, csrf.FIELD: token},
        client_name=device.client_name or device.client_id,
        client_uri=device.client_uri,
        client_id=device.client_id,
        resource=device.resource,
        scopes=list(device.scopes),
        checked=kw.pop("checked", set(device.scopes)),
        **kw,
    )


def _device_consent_page(view: Consent, status: int = 200) -> Rendered:
    return Rendered(status, "Connect a device?", _consent_body(view))


def _code_page(user_code: str, status: int = 200, errors: Sequence[tuple[str, str]] = ()) -> Rendered:
    return Rendered(status, "Connect a device", _device_code_body(user_code, errors))


def _lookup(db: Database, user_code: str, client_address: str) -> Any:
    """The pending device request for the code the user typed, or the page saying why not."""
    from agentmate.auth.oauth import device

    if not user_code.strip() or len(user_code) > MAX_USER_CODE:
        return _code_page(user_code[:MAX_USER_CODE], 400, [("user_code", "enter the code your device shows")])
    try:
        return device.pending_by_user_code(db, _oauth(), user_code, client_address)
    except RateLimited as exc:
        return _throttled(exc)
    except ValidationFailed as exc:
        return _code_page(user_code, 400, [(e.field, e.message) for e in exc.errors])
    except NotFound:
        errors = [("user_code", "unknown or expired code: check it, or start again on the device")]
        return _code_page(user_code, 404, errors)


def _show_device(
    db: Database, auth: AuthSettings, user_code: str | None, address: str, nonce: str
) -> Rendered:
    if not user_code:
        return _code_page("")
    found = _lookup(db, user_code, address)
    return found if isinstance(found, Rendered) else _device_consent_page(_device_view(auth, found, nonce))


@router.get(
    "/device",
    response_class=HTMLResponse,
    responses={
        200: _html("The code entry page, or (with a known `user_code`) the login and consent page"),
        400: _html("A malformed code: the code entry page with the error", True),
        404: _html(
            "An unknown or expired code (the code entry page with the error), or OAuth is not enabled on "
            "this server"
        ),
        429: _html("Too many wrong codes from this address: wait Retry-After"),
    },
)
def device_page(
    request: Request,
    user_code: Annotated[
        str | None,
        Query(
            description="The code the device shows (`verification_uri_complete` carries it): 8 letters of "
            "BCDFGHJKLMNPQRSTVWXZ, any case, dashes and spaces ignored; empty = the code entry page",
            json_schema_extra={"pattern": USER_CODE_PATTERN, "maxLength": MAX_USER_CODE},
        ),
    ] = None,
) -> HTMLResponse:
    """The device verification page: enter the code the device shows, then sign in and allow or deny. HTML, no
    script; CSRF-protected form."""
    auth = _settings()
    if auth is None:
        return _respond(get_auth_settings(), OFF)
    nonce = csrf.nonce_for(request.cookies.get(csrf.cookie_name(auth.oauth_issuer_url)))
    address = request.client.host if request.client else ""
    return _respond(auth, _show_device(get_database(), auth, user_code, address, nonce), nonce)


DEVICE_DONE = "Done: your device is connected. You can close this page and return to it."
DEVICE_DENIED = "Denied: the device was not connected. You can close this page."


def _deny_device(db: Database, user_code: str, address: str) -> Rendered:
    from agentmate.auth.oauth import device

    try:
        device.deny(db, _oauth(), user_code, client_address=address)
    except NotFound:
        return _code_page("", 400, [("user_code", "this code has expired or was already used")])
    except RateLimited as exc:
        return _throttled(exc)
    return _plain(200, "Device not connected", DEVICE_DENIED)


def _decide_device(db: Database, auth: AuthSettings, form: Form, address: str, nonce: str) -> Rendered:
    from agentmate.auth.oauth import device

    found = _lookup(db, form.fields.get("user_code", ""), address)
    if isinstance(found, Rendered):
        return found
    errors = _action_error(form)
    if not errors and form.fields["action"] == "deny":
        return _deny_device(db, found.user_code, address)
    errors += _credential_errors(form) + _scope_errors(form.scopes, found.scopes)
    view = _device_view(auth, found, nonce, checked=set(form.scopes), email=form.fields.get("email", ""))
    if errors:
        return _device_consent_page(view._replace(errors=errors), 400)
    try:
        user = _verify_login(db, auth, form, address)
        device.approve(
            db,
            _oauth(),
            found.user_code,
            user_id=user.user_id,
            account_id=user.account_id,
            scopes=form.scopes,
            client_address=address,
        )
    except ValidationFailed as exc:
        return _device_consent_page(view._replace(errors=[(e.field, e.message) for e in exc.errors]), 400)
    except NotFound:
        return _code_page("", 400, [("user_code", "this code has expired or was already used")])
    except RateLimited as exc:
        return _throttled(exc)
    except Unauthorized as exc:
        return _device_consent_page(view._replace(errors=[("password", _wrong_login(exc))]), 401)
    return _plain(200, "Device connected", DEVICE_DONE)


@router.post(
    "/device",
    response_class=HTMLResponse,
    responses={k: v for k, v in _FORM_RESPONSES.items() if k != 303}
    | {200: _html("Decided: the page says the device is connected (or not)")},
    openapi_extra=_form_body(["user_code"], {"user_code": {"type": "string", "maxLength": MAX_USER_CODE}}),
)
async def device_decide(request: Request) -> Response:
    """Sign in and allow or deny the device whose code the form carries. Form-encoded only; the page's CSRF
    token and cookie must match."""
    auth = _settings()
    if auth is None:
        return _respond(get_auth_settings(), OFF)
    form = await _checked_form(request, auth, "device", DEVICE_FIELDS, None)
    if isinstance(form, Rendered):
        return _respond(auth, form)
    nonce = request.cookies[csrf.cookie_name(auth.oauth_issuer_url)]
    address = request.client.host if request.client else ""
    return _respond(auth, await run_in_threadpool(_decide_device, get_database(), auth, form, address, nonce))
