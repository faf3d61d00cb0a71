"""The OAuth pages over plain HTTP (httpx against the served pages): CSRF (token, cookie, content type, Origin),
the clickjacking and caching headers, escaping, and a 4xx naming the field for every bad form; nothing is ever
approved by a refused request."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit
from uuid import UUID

import httpx
import pytest

from agentmate.auth.oauth import csrf
from tests.conftest import Account, make_account
from tests.e2e.test_oauth_pages import (
    ASKED,
    code_scopes,
    is_pending,
    new_device,
    new_request,
)

pytest_plugins = ["tests.browser"]  # pages_server
REDIRECT = "http://127.0.0.1:9/callback"  # never fetched: the tests read the 303's Location
FORM = {"Content-Type": csrf.FORM_TYPE}


@pytest.fixture
def http(pages_server: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=pages_server, follow_redirects=False, timeout=30) as c:
        yield c


@pytest.fixture
def user(client: Any) -> Account:
    return make_account(client)


def _token(page: httpx.Response) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def _consent(http: httpx.Client, rid: UUID) -> str:
    """Open the consent page (the client keeps its cookie); the page's CSRF token."""
    page = http.get("/api/oauth/consent", params={"request": str(rid)})
    assert page.status_code == 200, page.text
    return _token(page)


def _approve(rid: UUID, token: str, user: Account, scopes: tuple[str, ...] = ASKED) -> dict[str, Any]:
    return {
        "request": str(rid),
        "csrf": token,
        "action": "approve",
        "email": user.email,
        "password": user.password,
        "scope": list(scopes),
    }


def test_the_consent_page_carries_the_clickjacking_caching_and_script_headers_and_a_strict_cookie(
    http: httpx.Client, pages_server: str
) -> None:
    rid = new_request(pages_server, REDIRECT)
    page = http.get("/api/oauth/consent", params={"request": str(rid)})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "same-origin"
    assert page.headers["content-security-policy"] == (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' http://127.0.0.1:9; "
        "frame-ancestors 'none'; base-uri 'none'"
    )
    cookie = page.headers["set-cookie"]
    assert cookie.startswith(f"{csrf.COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/api/oauth" in cookie
    assert "Secure" not in cookie  # the issuer here is http; an https issuer gets Secure and __Host-
    assert "<script" not in page.text.lower()


def test_the_client_name_and_uri_are_escaped(http: httpx.Client, pages_server: str) -> None:
    rid = new_request(
        pages_server, REDIRECT, client_name="<script>alert(1)</script>", client_uri='javascript:alert("x")'
    )
    page = http.get("/api/oauth/consent", params={"request": str(rid)})
    assert "<script>alert(1)" not in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    assert "javascript:alert(&quot;x&quot;)" in page.text
    assert 'href="javascript' not in page.text


def test_an_approval_answers_303_to_the_redirect_uri_with_no_referrer(
    http: httpx.Client, pages_server: str, user: Account, owner_url: str
) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    r = http.post("/api/oauth/consent", data=_approve(rid, token, user, ("notes:r",)))
    assert r.status_code == 303, r.text
    location = urlsplit(r.headers["location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == REDIRECT
    assert parse_qs(location.query)["iss"] == [pages_server]
    assert r.headers["referrer-policy"] == "no-referrer"
    assert code_scopes(owner_url, rid) == [["notes:r"]]
    # And the same form again finds the request used: a 400 page saying to start again
    again = http.post("/api/oauth/consent", data=_approve(rid, token, user))
    assert again.status_code == 400
    assert "Start again from the application" in again.text


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"csrf": None}, id="no token"),
        pytest.param({"csrf": "A" * 43}, id="wrong token"),
        pytest.param({"cookie": None}, id="no cookie"),
        pytest.param({"cookie": "B" * 43}, id="another cookie"),
        pytest.param({"other_request": True}, id="token of another request"),
    ],
)
def test_a_form_without_the_pages_matching_token_and_cookie_is_refused_with_403(
    http: httpx.Client, pages_server: str, user: Account, owner_url: str, change: dict[str, Any]
) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    if change.get("other_request"):
        token = _consent(http, new_request(pages_server, REDIRECT))
    if "csrf" in change:
        token = change["csrf"]
    if "cookie" in change:
        http.cookies.clear()
        if change["cookie"]:
            http.cookies.set(csrf.COOKIE, change["cookie"], path="/api/oauth")
    form = {k: v for k, v in _approve(rid, token, user).items() if v is not None}
    r = http.post("/api/oauth/consent", data=form)
    assert r.status_code == 403, r.text
    assert "CSRF" in r.text
    assert is_pending(rid)
    assert code_scopes(owner_url, rid) == []


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        pytest.param("text/plain", None, id="JSON as text/plain"),
        pytest.param("application/json", None, id="JSON"),
        pytest.param("multipart/form-data; boundary=x", b"--x--\r\n", id="multipart"),
        pytest.param(None, b"", id="no content type"),
    ],
)
def test_a_body_that_is_not_url_encoded_is_refused_with_415(
    http: httpx.Client, pages_server: str, user: Account, content_type: str | None, body: bytes | None
) -> None:
    import json
    from urllib.parse import urlencode

    rid = new_request(pages_server, REDIRECT)
    fields = _approve(rid, _consent(http, rid), user)
    if (
        body is None
    ):  # the whole approval as JSON: what a cross-site "simple request" could send as text/plain
        body = json.dumps(fields).encode()
    elif content_type is None:  # the right fields, url-encoded, but not labelled as such
        body = urlencode(fields, doseq=True).encode()
    headers = {"Content-Type": content_type} if content_type else {}
    r = http.post("/api/oauth/consent", content=body, headers=headers)
    assert r.status_code == 415, r.text
    assert csrf.FORM_TYPE in r.text
    assert is_pending(rid)


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:1"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_form_sent_from_another_origin_is_refused_with_403(
    http: httpx.Client, pages_server: str, user: Account, headers: dict[str, str]
) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    r = http.post("/api/oauth/consent", data=_approve(rid, token, user), headers=headers)
    assert r.status_code == 403, r.text
    assert r.headers["x-frame-options"] == "DENY"
    assert is_pending(rid)


def test_the_issuers_own_origin_is_accepted(http: httpx.Client, pages_server: str, user: Account) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    headers = {"Origin": pages_server, "Sec-Fetch-Site": "same-origin"}
    assert (
        http.post("/api/oauth/consent", data=_approve(rid, token, user), headers=headers).status_code == 303
    )


def test_a_wrong_password_is_401_with_the_page_and_approves_nothing(
    http: httpx.Client, pages_server: str, user: Account, owner_url: str
) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    r = http.post("/api/oauth/consent", data={**_approve(rid, token, user), "password": "wrong-password"})
    assert r.status_code == 401
    assert "wrong email or password" in r.text
    assert "wrong-password" not in r.text
    assert is_pending(rid)
    assert code_scopes(owner_url, rid) == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"scope": ["manage_keys"]}, "scope"),
        ({"scope": []}, "scope"),
        ({"email": ""}, "email"),
        ({"password": "x" * 300}, "password"),
        ({"action": "maybe"}, "action"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_a_bad_field_is_a_400_naming_it(
    http: httpx.Client, pages_server: str, user: Account, change: dict[str, Any], field: str
) -> None:
    rid = new_request(pages_server, REDIRECT)
    token = _consent(http, rid)
    r = http.post("/api/oauth/consent", data={**_approve(rid, token, user), **change})
    assert r.status_code == 400, r.text
    assert field in r.text
    assert is_pending(rid)


@pytest.mark.parametrize(
    ("value", "status"), [("not-a-uuid", 400), ("00000000-0000-4000-8000-000000000000", 404), ("", 400)]
)
def test_an_unknown_or_malformed_request_is_a_page_saying_to_start_again(
    http: httpx.Client, value: str, status: int
) -> None:
    r = http.get("/api/oauth/consent", params={"request": value})
    assert r.status_code == status
    assert "Start again from the application" in r.text
    assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_device_form_needs_its_token_too(http: httpx.Client, pages_server: str, user: Account) -> None:
    started = new_device(pages_server, scope="notes:r")
    page = http.get("/api/oauth/device", params={"user_code": started.user_code})
    assert page.status_code == 200
    assert "form-action 'self';" in page.headers["content-security-policy"]
    form = {
        "user_code": started.user_code,
        "action": "approve",
        "email": user.email,
        "password": user.password,
        "scope": "notes:r",
    }
    assert http.post("/api/oauth/device", data=form).status_code == 403
    assert (
        http.post("/api/oauth/device", content=b"{}", headers={"Content-Type": "text/plain"}).status_code
        == 415
    )
    done = http.post("/api/oauth/device", data={**form, "csrf": _token(page)})
    assert done.status_code == 200, done.text
    assert "your device is connected" in done.text


def test_an_unknown_device_code_is_a_404_with_the_code_page_and_an_empty_one_the_entry_page(
    http: httpx.Client,
) -> None:
    r = http.get("/api/oauth/device", params={"user_code": "BCDF-GHJK"})
    assert r.status_code == 404
    assert 'id="user_code"' in r.text
    empty = http.get("/api/oauth/device", params={"user_code": ""})
    assert empty.status_code == 200 and 'id="user_code"' in empty.text


def test_the_pages_answer_404_when_oauth_is_off(http: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentmate.auth.settings import get_auth_settings

    monkeypatch.setenv("OAUTH_ISSUER_URL", "")
    get_auth_settings.cache_clear()
    try:
        assert http.get("/api/oauth/consent", params={"request": "x"}).status_code == 404
        assert http.post("/api/oauth/device", data={"action": "deny"}).status_code == 404
    finally:
        monkeypatch.undo()
        get_auth_settings.cache_clear()


def test_an_https_issuer_gets_a_secure_host_cookie_and_its_own_origin_only() -> None:
    cookie = csrf.set_cookie("https://auth.example", "n" * 43, 900)
    assert cookie.startswith("__Host-oauth_csrf=") and "; Secure" in cookie and "Path=/;" in cookie
    assert csrf.refusal("https://auth.example", csrf.FORM_TYPE, "https://auth.example:443", None) is None
    assert csrf.refusal("https://auth.example", csrf.FORM_TYPE, "http://auth.example", None) is not None
    assert csrf.form_action("com.example.app:/callback") == "'self' com.example.app:"
    assert csrf.form_action("https://a.example;script-src *") == "'self'"
