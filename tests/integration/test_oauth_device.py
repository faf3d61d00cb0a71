"""The device authorization grant (RFC 8628) against its own rules: the §3.2 response fields, the §3.5 polling
answers (authorization_pending, slow_down, access_denied, expired_token) and the §6.1 user-code alphabet; the
whole flow (device authorization → a signed-in user approves → the poll gets tokens → a REST call with them);
narrowed scopes, denial, expiry, another client's code, a second poll after success, user-code brute force
(429) and tenant isolation of the grant a code turns into.

Stand-ins (until the sibling branches merge): ``clients.get_client`` answers from a small table in this file, and
``audience.scopes_for_resource`` (resource's) is stood in when absent. The token endpoint is core's route; here
the poll calls ``device.exchange_device_code`` itself, which is what that route sends back.
"""

from __future__ import annotations

import random
import sys
import types
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from conftest import Account
from starlette.testclient import TestClient

from agentmate.auth import audience
from agentmate.auth.oauth import device
from agentmate.auth.oauth.settings import get_oauth_settings
from agentmate.auth.settings import get_auth_settings
from agentmate.auth.tokens import hash_token
from agentmate.core.db import get_database
from agentmate.core.scopes import DOMAINS, SCOPES

ISSUER = "http://127.0.0.1:26001"
PUBLIC = "ocl_device_public"
OTHER = "ocl_device_other"
NARROW = "ocl_device_narrow"  # registered for todos only
CONFIDENTIAL = "ocl_device_confidential"
SECRET = "ocs_the-confidential-secret"


def _client(client_id: str, scope: str | None = None, secret: str | None = None) -> Any:
    return types.SimpleNamespace(
        client_id=client_id,
        client_name=f"Agent {client_id[-6:]}",
        client_uri="https://agent.example/",
        scope=scope,
        client_secret=secret,
    )


CLIENTS = {
    PUBLIC: _client(PUBLIC),
    OTHER: _client(OTHER),
    NARROW: _client(NARROW, scope="todos:r todos:rw"),
    CONFIDENTIAL: _client(CONFIDENTIAL, secret=SECRET),
}


def _scopes_for_resource(issuer: str, resource: str) -> tuple[str, ...]:
    """Stand-in for resource's ``audience.scopes_for_resource`` (a module's own scopes under /mcp/<module>)."""
    module = resource.removeprefix(audience.canonical(issuer) + "/mcp/")
    return (f"{module}:r", f"{module}:rw") if module in DOMAINS else SCOPES


@pytest.fixture
def oauth(monkeypatch) -> Iterator[None]:
    """OAuth on (the issuer set), the stand-in client registry, and settings read afresh."""
    monkeypatch.setenv("OAUTH_ISSUER_URL", ISSUER)
    stand_in = types.ModuleType("agentmate.auth.oauth.clients")
    stand_in.get_client = lambda db, oauth, client_id: CLIENTS.get(client_id)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "agentmate.auth.oauth.clients", stand_in)
    monkeypatch.setattr(sys.modules["agentmate.auth.oauth"], "clients", stand_in, raising=False)
    if not hasattr(audience, "scopes_for_resource"):
        monkeypatch.setattr(audience, "scopes_for_resource", _scopes_for_resource, raising=False)
    get_auth_settings.cache_clear()
    get_oauth_settings.cache_clear()
    yield
    get_auth_settings.cache_clear()
    get_oauth_settings.cache_clear()


def _address() -> str:
    return f"10.{random.randint(0, 255)}.{random.randint(0, 255)}.{random.randint(1, 254)}"


@pytest.fixture
def http(app, oauth) -> TestClient:
    """The local runtime (the auth group serves the device routes and the token endpoint), from a client address
    of this test's own (the user-code throttle counts per address)."""
    return TestClient(app, base_url=ISSUER, client=(_address(), 40000))


def _authorize(http: TestClient, client_id: str = PUBLIC, **fields: str) -> dict[str, Any]:
    r = http.post("/api/oauth/device_authorization", data={"client_id": client_id, **fields})
    assert r.status_code == 200, r.text
    return r.json()


def _poll(device_code: str, client_id: str = PUBLIC) -> dict[str, Any]:
    """One poll of the token endpoint (§3.4): 200 with the token set, else 400 with the error (§3.5)."""
    r = TestClient(_APP[0], base_url=ISSUER).post(
        "/api/oauth/token", data={"grant_type": GRANT, "client_id": client_id, "device_code": device_code}
    )
    assert r.status_code == (200 if "access_token" in r.json() else 400), r.text
    assert r.headers["cache-control"] == "no-store"
    body: dict[str, Any] = r.json()
    return body


GRANT = "urn:ietf:params:oauth:grant-type:device_code"
_APP: list[Any] = []


@pytest.fixture(autouse=True)
def _remember_app(app) -> None:
    _APP[:] = [app]


def _approve(http: TestClient, account: Account, user_code: str, scopes: list[str] | None = None) -> Any:
    body: dict[str, Any] = {"user_code": user_code}
    if scopes is not None:
        body["scopes"] = scopes
    return http.post("/api/oauth/device/approve", json=body, headers=account.jwt_headers)


def _deny(http: TestClient, account: Account, user_code: str) -> Any:
    return http.post("/api/oauth/device/deny", json={"user_code": user_code}, headers=account.jwt_headers)


def _sql(owner_url: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(owner_url) as conn:
        cur = conn.execute(statement, params)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


# --- §6.1 user codes ------------------------------------------------------------------------------------------


def test_user_codes_are_eight_consonants_shown_in_two_groups_and_entered_either_way():
    codes = {device.new_user_code() for _ in range(200)}
    assert len(codes) == 200
    for code in codes:
        assert len(code) == 8 and set(code) <= set("BCDFGHJKLMNPQRSTVWXZ")
    # §6.1's example alphabet: no vowels (no words), no look-alikes of digits
    assert not set("AEIOUY0123456789") & set(device.USER_CODE_ALPHABET)
    assert device.display_user_code("WDJBMJHT") == "WDJB-MJHT"  # the RFC's own example code
    for typed in ("WDJB-MJHT", "wdjb-mjht", "wdjbmjht", " WDJB MJHT ", "WDJB--MJHT"):
        assert device.normalise_user_code(typed) == "WDJBMJHT"


# --- §3.1/§3.2 the device authorization endpoint -------------------------------------------------------------


def test_device_authorization_answers_every_field_of_section_3_2_and_stores_only_the_codes_hash(
    http, owner_url
):
    r = http.post("/api/oauth/device_authorization", data={"client_id": PUBLIC, "scope": "todos:r"})
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    body = r.json()
    assert set(body) == {
        "device_code",
        "user_code",
        "verification_uri",
        "verification_uri_complete",
        "expires_in",
        "interval",
    }
    assert body["device_code"].startswith("odc_")
    assert len(body["user_code"]) == 9 and body["user_code"][4] == "-"
    assert body["verification_uri"] == f"{ISSUER}/api/oauth/device"
    assert body["verification_uri_complete"] == f"{ISSUER}/api/oauth/device?user_code={body['user_code']}"
    assert body["expires_in"] == 900 and body["interval"] == 5
    rows = _sql(
        owner_url,
        "SELECT device_code_hash, user_code, scopes, resource, status FROM oauth_device_codes WHERE user_code = %s",
        body["user_code"].replace("-", ""),
    )
    assert rows == [
        (hash_token(body["device_code"]), body["user_code"].replace("-", ""), ["todos:r"], ISSUER, "pending")
    ]


def test_scopes_default_to_the_resources_and_to_what_the_client_registered(http, owner_url):
    def stored(body: dict[str, Any]) -> tuple[list[str], str]:
        [(scopes, resource)] = _sql(
            owner_url,
            "SELECT scopes, resource FROM oauth_device_codes WHERE device_code_hash = %s",
            hash_token(body["device_code"]),
        )
        return scopes, resource

    assert stored(_authorize(http)) == (list(SCOPES), ISSUER)
    assert stored(_authorize(http, resource=f"{ISSUER}/api/")) == (list(SCOPES), f"{ISSUER}/api")
    scopes, resource = stored(_authorize(http, resource=f"{ISSUER}/mcp/todos"))
    assert resource == f"{ISSUER}/mcp/todos" and set(scopes) == {"todos:r", "todos:rw"}
    # asking for more than the resource offers keeps what it offers
    assert stored(_authorize(http, scope="todos:r notes:r", resource=f"{ISSUER}/mcp/todos"))[0] == ["todos:r"]
    # a client registered for some scopes gets those by default and may not ask for others
    assert stored(_authorize(http, NARROW)) == (["todos:r", "todos:rw"], ISSUER)
    r = http.post("/api/oauth/device_authorization", data={"client_id": NARROW, "scope": "notes:r"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_scope"


@pytest.mark.parametrize(
    ("fields", "status", "error"),
    [
        ({}, 400, "invalid_request"),
        ({"client_id": ""}, 400, "invalid_request"),
        ({"client_id": "ocl_nobody"}, 401, "invalid_client"),
        ({"client_id": PUBLIC, "scope": "todos:r everything"}, 400, "invalid_scope"),
        ({"client_id": PUBLIC, "scope": "notes:r", "resource": f"{ISSUER}/mcp/todos"}, 400, "invalid_scope"),
        ({"client_id": PUBLIC, "resource": "https://elsewhere.example/api"}, 400, "invalid_target"),
        ({"client_id": PUBLIC, "resource": f"{ISSUER}/nowhere"}, 400, "invalid_target"),
        ({"client_id": PUBLIC, "resource": f"{ISSUER}/api#frag"}, 400, "invalid_target"),
        ({"client_id": PUBLIC, "resource": "http://[::1"}, 400, "invalid_target"),
        ({"client_id": CONFIDENTIAL}, 401, "invalid_client"),
        ({"client_id": CONFIDENTIAL, "client_secret": "ocs_wrong"}, 401, "invalid_client"),
    ],
)
def test_device_authorization_errors_are_oauths_shape(http, fields, status, error):
    r = http.post("/api/oauth/device_authorization", data=fields)
    assert r.status_code == status, r.text
    assert r.json() == {"error": error, "error_description": r.json()["error_description"]}
    assert r.json()["error_description"]
    assert r.headers["cache-control"] == "no-store"


def test_malformed_device_authorization_bodies_are_invalid_request(http):
    url = "/api/oauth/device_authorization"
    for kwargs in (
        {"json": {"client_id": PUBLIC}},  # JSON, not a form
        {"content": f"client_id={PUBLIC}&client_id={OTHER}", "headers": _FORM},  # repeated (RFC 6749 §3.1)
        {"content": "client_id=" + "x" * 5000, "headers": _FORM},  # over the bound
        {"content": b"client_id=\xff\xfe", "headers": _FORM},  # not UTF-8
        {"content": "&".join(f"f{i}=1" for i in range(40)), "headers": _FORM},  # too many fields
    ):
        r = http.post(url, **kwargs)
        assert r.status_code == 400, (kwargs, r.text)
        assert r.json()["error"] == "invalid_request"


_FORM = {"content-type": "application/x-www-form-urlencoded"}


def test_a_confidential_client_authenticates_with_its_secret_in_the_form_or_by_basic(http):
    _authorize(http, CONFIDENTIAL, client_secret=SECRET)
    r = http.post(
        "/api/oauth/device_authorization", data={"client_id": CONFIDENTIAL}, auth=(CONFIDENTIAL, SECRET)
    )
    assert r.status_code == 200, r.text


def test_the_device_routes_are_404_while_oauth_is_off(app, account, monkeypatch):
    monkeypatch.setenv("OAUTH_ISSUER_URL", "")
    get_auth_settings.cache_clear()
    try:
        http = TestClient(app, base_url=ISSUER)
        assert http.post("/api/oauth/device_authorization", data={"client_id": PUBLIC}).status_code == 404
        assert _approve(http, account, "WDJB-MJHT").status_code == 404
    finally:
        get_auth_settings.cache_clear()


# --- the whole flow ----------------------------------------------------------------------------------------------


def test_the_whole_flow_approve_narrowed_then_tokens_once_then_a_rest_call(http, client, account, owner_url):
    # Given a device authorization asking for todos read and write
    auth = _authorize(http, scope="todos:r todos:rw")
    # While nobody has approved: authorization_pending (§3.5)
    assert _poll(auth["device_code"])["error"] == "authorization_pending"
    # When the signed-in user approves, narrowing to todos:r (the code entered as typed, lower case, no dash)
    r = _approve(http, account, auth["user_code"].lower().replace("-", ""), ["todos:r"])
    assert r.status_code == 204, r.text
    # Then the next poll gets the token set of a new grant, with the narrowed scope
    tokens = _poll(auth["device_code"])
    assert set(tokens) == {"access_token", "token_type", "expires_in", "refresh_token", "scope"}
    assert tokens["token_type"] == "Bearer" and tokens["scope"] == "todos:r"
    assert str(tokens["access_token"]).startswith("oat_") and str(tokens["refresh_token"]).startswith("ort_")
    # And the grant is the approving user's, for the client that asked
    grants = _sql(
        owner_url,
        "SELECT account_id::text, user_id::text, client_id, scopes FROM oauth_grants WHERE user_id = %s",
        uuid.UUID(account.user_id),
    )
    assert grants == [(account.account_id, account.user_id, PUBLIC, ["todos:r"])]
    # And the access token reads todos but may not write them
    bearer = {"Authorization": f"Bearer {tokens['access_token']}"}
    assert client.get("/api/todos", headers=bearer).status_code == 200
    assert client.post("/api/todos", json={"title": "x"}, headers=bearer).status_code == 403
    # And a second poll with the same device code is refused: one grant per code
    assert _poll(auth["device_code"])["error"] == "invalid_grant"
    assert (
        len(_sql(owner_url, "SELECT 1 FROM oauth_grants WHERE user_id = %s", uuid.UUID(account.user_id))) == 1
    )
    # And the user code is spent
    assert _approve(http, account, auth["user_code"]).status_code == 404


def test_approval_without_scopes_grants_everything_asked_for(http, account):
    auth = _authorize(http, scope="notes:r todos:rw")
    assert _approve(http, account, auth["user_code"]).status_code == 204
    assert _poll(auth["device_code"])["scope"] == "notes:r todos:rw"


@pytest.mark.parametrize(
    ("scopes", "fragment"),
    [([], "at least one"), (["notes:rw"], "only narrow"), (["todos:r", "manage_keys"], "only narrow")],
)
def test_approval_may_narrow_never_widen_nor_empty(http, account, scopes, fragment):
    auth = _authorize(http, scope="todos:r")
    r = _approve(http, account, auth["user_code"], scopes)
    assert r.status_code == 400, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    [error] = r.json()["errors"]
    assert error["field"] == "scopes" and fragment in error["message"] and error["allowed"] == ["todos:r"]
    # and the request is still pending
    assert _poll(auth["device_code"])["error"] == "authorization_pending"


def test_unknown_scope_names_in_an_approval_are_400_listing_the_allowed_ones(http, account):
    auth = _authorize(http)
    r = _approve(http, account, auth["user_code"], ["todos:admin"])
    assert r.status_code == 400
    assert r.json()["errors"][0]["field"].startswith("scopes")


def test_denial_answers_access_denied(http, account):
    auth = _authorize(http)
    assert _deny(http, account, auth["user_code"]).status_code == 204
    assert _poll(auth["device_code"]) == {
        "error": "access_denied",
        "error_description": "the user denied the authorization request",
    }
    # a denied code can no longer be approved
    assert _approve(http, account, auth["user_code"]).status_code == 404


def test_a_denial_carries_no_scopes(http, account):
    auth = _authorize(http)
    r = http.post(
        "/api/oauth/device/deny",
        json={"user_code": auth["user_code"], "scopes": ["todos:r"]},
        headers=account.jwt_headers,
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "scopes"


def test_an_expired_code_answers_expired_token_and_cannot_be_approved(http, account, owner_url):
    auth = _authorize(http)
    _sql(
        owner_url,
        "UPDATE oauth_device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = %s",
        hash_token(auth["device_code"]),
    )
    assert _approve(http, account, auth["user_code"]).status_code == 404
    assert _poll(auth["device_code"])["error"] == "expired_token"


def test_an_approved_code_that_expired_before_the_poll_is_expired_token(http, account, owner_url):
    auth = _authorize(http)
    assert _approve(http, account, auth["user_code"]).status_code == 204
    _sql(
        owner_url,
        "UPDATE oauth_device_codes SET expires_at = now() - interval '1 second' WHERE device_code_hash = %s",
        hash_token(auth["device_code"]),
    )
    assert _poll(auth["device_code"])["error"] == "expired_token"


def test_polling_faster_than_the_interval_is_slow_down_and_the_interval_grows_by_five(http, owner_url):
    auth = _authorize(http)
    key = hash_token(auth["device_code"])
    assert _poll(auth["device_code"])["error"] == "authorization_pending"
    # polled again at once (well within the 5 s interval): slow_down, and the interval is now 10 s (§3.5)
    answer = _poll(auth["device_code"])
    assert answer["error"] == "slow_down" and "10 s" in str(answer["error_description"])
    assert _sql(owner_url, "SELECT interval_s FROM oauth_device_codes WHERE device_code_hash = %s", key) == [
        (10,)
    ]
    # once the (longer) interval has passed, polling is pending again, and the interval stays 10 s
    _sql(
        owner_url,
        "UPDATE oauth_device_codes SET last_polled_at = now() - interval '11 seconds' WHERE device_code_hash = %s",
        key,
    )
    assert _poll(auth["device_code"])["error"] == "authorization_pending"
    assert _sql(owner_url, "SELECT interval_s FROM oauth_device_codes WHERE device_code_hash = %s", key) == [
        (10,)
    ]


@pytest.mark.parametrize("which", ["another client", "unknown", "not a device code"])
def test_unknown_or_another_clients_device_code_is_invalid_grant(http, account, which):
    auth = _authorize(http)
    assert _approve(http, account, auth["user_code"]).status_code == 204
    code, client_id = {
        "another client": (auth["device_code"], OTHER),
        "unknown": ("odc_" + uuid.uuid4().hex, PUBLIC),
        "not a device code": ("oac_" + uuid.uuid4().hex, PUBLIC),
    }[which]
    assert _poll(code, client_id)["error"] == "invalid_grant"
    # and the rightful client still gets its tokens afterwards
    assert "access_token" in _poll(auth["device_code"])


def test_the_exchange_itself_refuses_an_empty_or_foreign_device_code():
    for code in ("", "ort_x", "odc_" + "z" * 5000):
        answer = device.exchange_device_code(
            get_database(), get_oauth_settings(), client_id=PUBLIC, device_code=code
        )
        assert answer["error"] == "invalid_grant"


# --- the verification calls: who may call them, and guessing ----------------------------------------------------


def test_approve_and_deny_need_the_signed_in_users_jwt(http, account):
    auth = _authorize(http)
    body = {"user_code": auth["user_code"]}
    for path in ("/api/oauth/device/approve", "/api/oauth/device/deny"):
        r = http.post(path, json=body)
        assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
        assert (
            http.post(path, json=body, headers={"Authorization": f"Bearer {account.key()}"}).status_code
            == 403
        )
    assert _poll(auth["device_code"])["error"] == "authorization_pending"


def test_a_malformed_user_code_is_400_naming_the_field(http, account):
    for code in ("WDJB-MJH", "AEIO-UAEI", "WDJB-MJHT-X"):
        r = _approve(http, account, code)
        assert r.status_code == 400, r.text
        assert r.json()["errors"][0]["field"] == "user_code"
    r = http.post("/api/oauth/device/approve", json={"user_code": "x" * 33}, headers=account.jwt_headers)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "user_code"


def test_guessing_user_codes_is_throttled_per_address(app, oauth, account, monkeypatch):
    monkeypatch.setenv("OAUTH_USER_CODE_FAILURES_PER_ADDRESS", "3")
    get_oauth_settings.cache_clear()
    guesser = TestClient(app, base_url=ISSUER, client=(_address(), 40000))
    auth = _authorize(guesser)
    # Given three wrong guesses from one address
    for _ in range(3):
        wrong = device.display_user_code(device.new_user_code())
        assert _approve(guesser, account, wrong).status_code == 404
    # Then that address is refused even with the right code, with Retry-After
    r = _approve(guesser, account, auth["user_code"])
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert int(r.headers["retry-after"]) >= 1
    assert _deny(guesser, account, auth["user_code"]).status_code == 429
    # While another address approves it
    other = TestClient(app, base_url=ISSUER, client=(_address(), 40000))
    assert _approve(other, account, auth["user_code"]).status_code == 204


def test_pending_by_user_code_shows_the_request_to_the_verification_page(http):
    auth = _authorize(http, scope="todos:r", resource=f"{ISSUER}/api")
    request = device.pending_by_user_code(
        get_database(), get_oauth_settings(), auth["user_code"].lower(), "127.0.0.9"
    )
    assert request.user_code == auth["user_code"]
    assert (request.client_id, request.client_name, request.client_uri) == (
        PUBLIC,
        CLIENTS[PUBLIC].client_name,
        "https://agent.example/",
    )
    assert request.scopes == ("todos:r",) and request.resource == f"{ISSUER}/api"


# --- tenants ---------------------------------------------------------------------------------------------------


def test_a_code_approved_by_another_accounts_user_serves_only_that_account(
    http, client, account, other_account
):
    # Given a todo in each account
    for acct, title in ((account, "mine"), (other_account, "theirs")):
        r = client.post("/api/todos", json={"title": title}, headers=acct.headers())
        assert r.status_code == 201, r.text
    # When the other account's user approves the device's code
    auth = _authorize(http, scope="todos:r")
    assert _approve(http, other_account, auth["user_code"]).status_code == 204
    # Then no one else can decide it any more
    assert _approve(http, account, auth["user_code"]).status_code == 404
    assert _deny(http, account, auth["user_code"]).status_code == 404
    # And its token reads that account's todos only
    tokens = _poll(auth["device_code"])
    r = client.get("/api/todos", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert r.status_code == 200, r.text
    assert [t["title"] for t in r.json()["items"]] == ["theirs"]


def test_approved_codes_are_tenant_rows_pending_ones_are_seen_by_no_tenant(http, account, other_account):
    pending = _authorize(http)
    approved = _authorize(http)
    assert _approve(http, account, approved["user_code"]).status_code == 204
    with get_database().tenant(uuid.UUID(account.account_id)) as conn:
        mine = {
            r["device_code_hash"] for r in conn.execute("SELECT device_code_hash FROM oauth_device_codes")
        }
    with get_database().tenant(uuid.UUID(other_account.account_id)) as conn:
        theirs = conn.execute("SELECT count(*) AS n FROM oauth_device_codes").fetchone()
    assert mine == {hash_token(approved["device_code"])}
    assert hash_token(pending["device_code"]) not in mine
    assert theirs is not None and theirs["n"] == 0
