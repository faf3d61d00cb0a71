"""The device authorization grant (RFC 8628) for headless agents.

A client asks ``POST /api/oauth/device_authorization`` for a device code and a short user code (§3.1, §3.2); a
signed-in user approves or denies the user code on the verification page (``POST /api/oauth/device/approve``,
``/deny``); the client polls the token endpoint with the device code (§3.4) and is answered
``authorization_pending``, ``slow_down``, ``access_denied``, ``expired_token`` (§3.5) or, once approved, the
token set of a new grant (core's ``service.issue_grant``), exactly once. The device code is stored hashed; the
user code is 8 characters from an alphabet without vowels or look-alikes (§6.1), and wrong guesses count per
client address in the login throttle's buckets (§5.1: 429 once over the limit).

Loaded only on the OAuth routes (the routers import it inside their handlers).
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from agentmate.auth import audience, throttle, tokens
from agentmate.auth.oauth import device_repository as repo
from agentmate.auth.oauth.settings import OAuthSettings
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.db import Database
from agentmate.core.errors import NotFound, Unauthorized, invalid
from agentmate.core.scopes import SCOPES

# RFC 8628 §6.1: consonants only (no vowels, so no words; no I/O/U, so no 1/0/V look-alikes), 8 characters:
# 20^8 ≈ 2^34.6 codes against at most ``oauth_user_code_failures_per_address`` guesses per window.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
USER_CODE_LENGTH = 8
SLOW_DOWN_S = 5  # §3.5: each slow_down adds 5 seconds to the interval, for this and every later poll
VERIFICATION_PATH = "/api/oauth/device"
_DRAWS = 5  # user codes drawn before giving up on a (vanishingly unlikely) run of collisions

_ERRORS = {
    "invalid_grant": "the device code is unknown, was issued to another client, or was already used",
    "expired_token": "the device code has expired: start a new device authorization",
    "access_denied": "the user denied the authorization request",
    "authorization_pending": "the user has not approved the request yet: keep polling at the interval",
    "slow_down": "polling too fast: the interval is now {interval} s",
}


class DeviceRequest(NamedTuple):
    """A pending device authorization, as the verification page shows it."""

    user_code: str  # displayed form, XXXX-XXXX
    client_id: str
    client_name: str | None
    client_uri: str | None
    scopes: tuple[str, ...]
    resource: str
    expires_at: datetime


class DeviceAuthorization(NamedTuple):
    """The device authorization response (§3.2)."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str
    expires_in: int
    interval: int

    def response(self) -> dict[str, object]:
        return self._asdict()


class DeviceAuthorizationError(Exception):
    """An error of the device authorization endpoint, in OAuth's shape (RFC 6749 §5.2, RFC 8628 §3.2)."""

    def __init__(self, error: str, description: str, status: int = 400) -> None:
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status

    def response(self) -> dict[str, object]:
        return {"error": self.error, "error_description": self.description}


# --- user codes -------------------------------------------------------------------------------------------------


def new_user_code() -> str:
    """A fresh user code, stored and compared in its normalised form (8 letters, no dash)."""
    return "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))


def display_user_code(code: str) -> str:
    """``WDJBMJHT`` → ``WDJB-MJHT`` (§6.1: shown in two groups, entered either way)."""
    half = len(code) // 2
    return f"{code[:half]}-{code[half:]}"


def normalise_user_code(raw: str) -> str:
    """What a user typed, as stored: upper-cased, dashes and spaces removed (§6.1)."""
    return "".join(ch for ch in raw.upper() if ch not in "- \t")


def _checked_user_code(raw: str) -> str:
    code = normalise_user_code(raw)
    if len(code) != USER_CODE_LENGTH or any(ch not in USER_CODE_ALPHABET for ch in code):
        raise invalid(
            "user_code",
            f"a user code is {USER_CODE_LENGTH} letters from {USER_CODE_ALPHABET} (shown as XXXX-XXXX; case, "
            "dashes and spaces do not matter)",
        )
    return code


# --- device authorization (§3.1, §3.2) ---------------------------------------------------------------------------


def requested_resource(issuer: str, resource: str | None) -> str:
    """The resource the tokens will serve (RFC 8707): one of this server's, the issuer itself when absent."""
    if resource is None or not resource.strip():
        return audience.canonical(issuer)
    try:
        wanted = audience.canonical(resource)
    except ValueError:  # not a URL at all (e.g. an unclosed IPv6 bracket)
        wanted = ""
    if "#" in resource or wanted not in audience.known_resources(issuer):
        raise DeviceAuthorizationError(
            "invalid_target",
            f"resource {resource!r} is not a resource of this server; use one of "
            + ", ".join(audience.known_resources(issuer)),
        )
    return wanted


def requested_scopes(
    issuer: str, resource: str, scope: str | None, client_scope: str | None
) -> tuple[str, ...]:
    """The scopes asked for: the resource's (narrowed to the client's registered ``scope``) when ``scope`` is
    absent; otherwise the named ones, each one of the 17, kept where the resource offers them."""
    offered = tuple(audience.scopes_for_resource(issuer, resource))  # type: ignore[attr-defined, unused-ignore]
    registered = set(client_scope.split()) if client_scope else None
    asked = list(dict.fromkeys(scope.split())) if scope and scope.strip() else None
    if asked is not None:
        unknown = [s for s in asked if s not in SCOPES]
        if unknown:
            raise DeviceAuthorizationError(
                "invalid_scope", f"unknown scope(s) {' '.join(unknown)}; allowed: {' '.join(SCOPES)}"
            )
        if registered is not None and not set(asked) <= registered:
            extra = " ".join(s for s in asked if s not in registered)
            raise DeviceAuthorizationError(
                "invalid_scope", f"scope(s) {extra} not registered for this client"
            )
    candidates = asked if asked is not None else [s for s in offered if registered is None or s in registered]
    granted = tuple(s for s in candidates if s in offered)
    if not granted:
        raise DeviceAuthorizationError(
            "invalid_scope", f"none of the scopes asked for is offered by {resource}: {' '.join(offered)}"
        )
    return granted


def start_authorization(
    db: Database,
    auth: AuthSettings,
    oauth: OAuthSettings,
    *,
    client_id: str,
    client_name: str | None,
    client_uri: str | None,
    client_scope: str | None,
    scope: str | None,
    resource: str | None,
) -> DeviceAuthorization:
    """A new device authorization for a known client (the router has looked it up): raises
    ``DeviceAuthorizationError`` for a bad ``scope`` (invalid_scope) or ``resource`` (invalid_target)."""
    issuer = audience.canonical(auth.oauth_issuer_url)
    bound = requested_resource(issuer, resource)
    scopes = requested_scopes(issuer, bound, scope, client_scope)
    device_code, device_code_hash = tokens.new_token("device_code")
    for _ in range(_DRAWS):
        user_code = new_user_code()
        with db.single_statement() as conn:
            stored = repo.start(
                conn,
                device_code_hash=device_code_hash,
                user_code=user_code,
                client_id=client_id,
                client_name=client_name,
                client_uri=client_uri,
                scopes=scopes,
                resource=bound,
                ttl_s=oauth.oauth_device_code_ttl_s,
                interval_s=oauth.oauth_device_interval_s,
            )
        if stored:
            shown = display_user_code(user_code)
            verification_uri = issuer + VERIFICATION_PATH
            return DeviceAuthorization(
                device_code=device_code,
                user_code=shown,
                verification_uri=verification_uri,
                verification_uri_complete=f"{verification_uri}?user_code={shown}",
                expires_in=oauth.oauth_device_code_ttl_s,
                interval=oauth.oauth_device_interval_s,
            )
    raise RuntimeError("could not draw a free user code")  # pragma: no cover - 20^8 codes


# --- verification (the signed-in user) -----------------------------------------------------------------------------


def _bucket(oauth: OAuthSettings, client_address: str) -> throttle.Bucket:
    return throttle.user_code_bucket(
        client_address,
        limit=oauth.oauth_user_code_failures_per_address,
        window_s=oauth.oauth_user_code_window_s,
    )


def pending_by_user_code(
    db: Database, oauth: OAuthSettings, user_code: str, client_address: str
) -> DeviceRequest:
    """The pending request a user code names. ``RateLimited`` while this address has guessed wrong too often;
    ``ValidationFailed`` (field ``user_code``) for a malformed code; ``NotFound`` for an unknown, expired or
    already decided one (which counts as a wrong guess)."""
    bucket = _bucket(oauth, client_address)
    throttle.check(db, [bucket], "wrong user codes")
    code = _checked_user_code(user_code)
    with db.single_statement() as conn:
        row = repo.pending(conn, code)
    if row is None:
        # The backoff after the limit is the login throttle's (the same Postgres buckets).
        throttle.hit(db, get_auth_settings(), [bucket])
        raise NotFound(
            "user code", "no pending device authorization has this user code (wrong, expired or already used)"
        )
    return DeviceRequest(
        display_user_code(code),
        row.client_id,
        row.client_name,
        row.client_uri,
        tuple(row.scopes),
        row.resource,
        row.expires_at,
    )


def _granted(request: DeviceRequest, scopes: Sequence[str] | None) -> list[str]:
    """The scopes the user grants: all asked for, or a non-empty subset (narrowed, never widened)."""
    if scopes is None:
        return list(request.scopes)
    chosen = list(dict.fromkeys(scopes))
    if not chosen:
        raise invalid("scopes", "grant at least one of the scopes asked for", list(request.scopes))
    wider = [s for s in chosen if s not in request.scopes]
    if wider:
        raise invalid(
            "scopes",
            f"may only narrow the scopes the client asked for; not asked for: {', '.join(wider)}",
            list(request.scopes),
        )
    return chosen


def approve(
    db: Database,
    oauth: OAuthSettings,
    user_code: str,
    *,
    user_id: UUID,
    account_id: UUID,
    scopes: Sequence[str] | None,
    client_address: str,
) -> None:
    """The signed-in user approves the request, granting ``scopes`` (default: all asked for)."""
    request = pending_by_user_code(db, oauth, user_code, client_address)
    granted = _granted(request, scopes)
    with db.single_statement() as conn:
        done = repo.decide(
            conn,
            normalise_user_code(user_code),
            approve=True,
            account_id=account_id,
            user_id=user_id,
            scopes=granted,
        )
    if not done:  # decided or expired between the lookup and now
        raise NotFound("user code", "the device authorization is no longer pending")


def deny(db: Database, oauth: OAuthSettings, user_code: str, *, client_address: str) -> None:
    """The signed-in user denies the request: the client's next poll answers ``access_denied``."""
    pending_by_user_code(db, oauth, user_code, client_address)
    with db.single_statement() as conn:
        done = repo.decide(conn, normalise_user_code(user_code), approve=False)
    if not done:
        raise NotFound("user code", "the device authorization is no longer pending")


# --- polling the token endpoint (§3.4, §3.5) ---------------------------------------------------------------------


def _error(error: str, interval: int | None = None) -> dict[str, object]:
    return {"error": error, "error_description": _ERRORS[error].format(interval=interval)}


def exchange_device_code(
    db: Database, oauth: OAuthSettings, *, client_id: str, device_code: str
) -> dict[str, object]:
    """The token endpoint's answer to ``grant_type=urn:ietf:params:oauth:grant-type:device_code``: the token set
    once the user approved (a new grant, issued once), else an error body the route sends with 400."""
    if not device_code.startswith(tokens.DEVICE_CODE_PREFIX):
        return _error("invalid_grant")
    with db.single_statement() as conn:
        row = repo.poll(
            conn,
            device_code_hash=tokens.hash_token(device_code),
            client_id=client_id,
            slow_down_s=SLOW_DOWN_S,
        )
    if row.outcome != "approved":
        return _error(row.outcome, row.interval_s)
    assert row.account_id and row.user_id and row.scopes and row.resource  # the approval check constraint
    from agentmate.auth.oauth import service

    try:
        issued = service.issue_grant(
            db,
            oauth,
            account_id=row.account_id,
            user_id=row.user_id,
            client_id=client_id,
            client_name=row.client_name,
            client_uri=row.client_uri,
            scopes=row.scopes,
            resource=row.resource,
        )
    except Unauthorized:  # the approving user was deleted or its account suspended since
        return _error("invalid_grant")
    return issued.response()
