"""Shared OAuth test helpers (issue 24): turn the issuer on, make a PKCE pair, run /authorize, consent in place of
the consent page (``approve_request`` directly), exchange the code. The tests drive the real routes over the
test client and the real Postgres."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit
from uuid import UUID

import pytest

ISSUER = "http://127.0.0.1:26001"  # the test client's base URL (tests/conftest.py)
REDIRECT_URI = "http://127.0.0.1:39999/callback"


@contextmanager
def oauth_issuer(monkeypatch: pytest.MonkeyPatch, issuer: str = ISSUER) -> Iterator[str]:
    """OAUTH_ISSUER_URL set for the duration (the settings cache cleared before and after)."""
    from agentmate.auth.settings import get_auth_settings

    monkeypatch.setenv("OAUTH_ISSUER_URL", issuer)
    get_auth_settings.cache_clear()
    try:
        yield issuer
    finally:
        monkeypatch.delenv("OAUTH_ISSUER_URL")
        get_auth_settings.cache_clear()


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge) per RFC 7636 §4."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def query(location: str) -> dict[str, str]:
    """The query parameters of a redirect location (one value each)."""
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def authorize(
    client: Any,
    client_id: str,
    challenge: str,
    *,
    redirect_uri: str = REDIRECT_URI,
    scope: str | None = None,
    resource: str | None = None,
    state: str = "st-1",
) -> Any:
    """GET /api/oauth/authorize without following the redirect."""
    params = {
        "client_id": client_id,
        "response_type": "code",
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
    }
    if scope is not None:
        params["scope"] = scope
    if resource is not None:
        params["resource"] = resource
    return client.get("/api/oauth/authorize", params=params, follow_redirects=False)


def request_id(location: str) -> UUID:
    """The pending request of a redirect to the consent page."""
    assert location.startswith(f"{ISSUER}/api/oauth/consent?request="), location
    return UUID(query(location)["request"])


def approve(account: Any, req: UUID, scopes: list[str] | None = None) -> str:
    """Consent as ``account``'s user (in place of the consent page); returns the redirect back to the client."""
    from agentmate.auth.oauth import service
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.auth.settings import get_auth_settings
    from agentmate.core.db import get_database

    db = get_database()
    pending = service.pending_request(db, req)
    assert pending is not None
    return service.approve_request(
        db,
        get_auth_settings(),
        get_oauth_settings(),
        req,
        user_id=UUID(account.user_id),
        account_id=UUID(account.account_id),
        scopes=list(pending.scopes) if scopes is None else scopes,
    )


def exchange(
    client: Any, client_id: str, code: str, verifier: str, *, redirect_uri: str = REDIRECT_URI
) -> Any:
    return client.post(
        "/api/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": client_id,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": redirect_uri,
        },
    )


def refresh(client: Any, client_id: str, refresh_token: str, scope: str | None = None) -> Any:
    data = {"grant_type": "refresh_token", "client_id": client_id, "refresh_token": refresh_token}
    if scope is not None:
        data["scope"] = scope
    return client.post("/api/oauth/token", data=data)


def tokens_for(
    client: Any,
    account: Any,
    client_id: str,
    *,
    scope: str | None = None,
    resource: str | None = None,
    consent: list[str] | None = None,
) -> dict[str, Any]:
    """The whole code flow for ``account``: the token endpoint's answer."""
    verifier, challenge = pkce_pair()
    r = authorize(client, client_id, challenge, scope=scope, resource=resource)
    assert r.status_code == 302, r.text
    back = approve(account, request_id(r.headers["location"]), consent)
    r = exchange(client, client_id, query(back)["code"], verifier)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
