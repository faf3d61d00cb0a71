"""Credentials are checked against the database on every request (issue 8 item 1): JWTs carry the user's
credentials epoch (password change and sign-out-everywhere revoke them), a token whose user is not in its account
is refused, API keys may expire and record when they were last used."""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta

import jwt
import psycopg

ME = "/api/auth/me"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _is_problem(r) -> bool:
    return r.headers["content-type"].startswith("application/problem+json")


def _signed(claims: dict) -> str:
    now = datetime.now(UTC)
    return jwt.encode(
        {"iat": now, "exp": now + timedelta(hours=1), **claims}, os.environ["JWT_SECRET"], algorithm="HS256"
    )


def _login(client, account, password: str | None = None):
    return client.post(
        "/api/auth/login", json={"email": account.email, "password": password or account.password}
    )


# --- password change -------------------------------------------------------------------------------------------


def test_changing_the_password_revokes_every_earlier_jwt_and_returns_a_working_one(client, account):
    # Given two tokens of the same user (two devices)
    second = _login(client, account).json()["token"]
    # When the password is changed with the current one re-entered
    r = client.post(
        "/api/auth/password",
        headers=account.jwt_headers,
        json={"current_password": account.password, "new_password": "a whole new passphrase"},
    )
    # Then the answer is a new token that works, and both earlier tokens are refused with problem+json
    assert r.status_code == 200, r.text
    fresh = r.json()["token"]
    assert client.get(ME, headers=_bearer(fresh)).status_code == 200
    for old in (account.token, second):
        refused = client.get(ME, headers=_bearer(old))
        assert refused.status_code == 401 and _is_problem(refused)
        assert "revoked" in refused.json()["detail"]
        assert client.post("/api/todos", json={"title": "x"}, headers=_bearer(old)).status_code == 401
    # And only the new password logs in
    assert _login(client, account).status_code == 401
    assert _login(client, account, "a whole new passphrase").status_code == 200


def test_a_wrong_current_password_is_a_400_naming_the_field_and_changes_nothing(client, account):
    r = client.post(
        "/api/auth/password",
        headers=account.jwt_headers,
        json={"current_password": "not the password", "new_password": "a whole new passphrase"},
    )
    assert r.status_code == 400 and _is_problem(r)
    assert [e["field"] for e in r.json()["errors"]] == ["current_password"]
    assert client.get(ME, headers=account.jwt_headers).status_code == 200
    assert _login(client, account).status_code == 200


def test_a_short_new_password_is_a_400_naming_it(client, account):
    r = client.post(
        "/api/auth/password",
        headers=account.jwt_headers,
        json={"current_password": account.password, "new_password": "short"},
    )
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["new_password"]


def test_api_keys_cannot_change_the_password_or_sign_out_everywhere(client, account):
    body = {"current_password": account.password, "new_password": "a whole new passphrase"}
    # An X-Api-Key (even full access) and no Authorization: the route's credential is missing (401, Bearer)
    headers = account.headers()
    for r in (
        client.post("/api/auth/password", headers=headers, json=body),
        client.post("/api/auth/logout-all", headers=headers),
        client.request("DELETE", "/api/auth/account", headers=headers, json={"password": account.password}),
    ):
        assert r.status_code == 401 and _is_problem(r), r.text
        assert r.headers["www-authenticate"] == 'Bearer realm="agentmate"'
        assert "JWT" in r.json()["detail"]
    # The same key sent as the bearer token: a valid credential of the wrong kind (403)
    as_bearer = _bearer(account.key())
    for r in (
        client.post("/api/auth/password", headers=as_bearer, json=body),
        client.post("/api/auth/logout-all", headers=as_bearer),
    ):
        assert r.status_code == 403 and _is_problem(r)
        assert "JWT" in r.json()["detail"]
    assert _login(client, account).status_code == 200
    assert client.get(ME, headers=account.jwt_headers).status_code == 200


# --- sign out everywhere ---------------------------------------------------------------------------------------


def test_logout_all_revokes_every_jwt_but_not_api_keys(client, account):
    key_headers = account.headers("todos:r")
    r = client.post("/api/auth/logout-all", headers=account.jwt_headers)
    assert r.status_code == 204
    refused = client.get(ME, headers=account.jwt_headers)
    assert refused.status_code == 401 and _is_problem(refused)
    # Keys are separate credentials (revoked by deleting them)
    assert client.get("/api/todos", headers=key_headers).status_code == 200
    # And a new login works again
    again = _login(client, account)
    assert client.get(ME, headers=_bearer(again.json()["token"])).status_code == 200


def test_a_token_minted_in_the_same_second_as_a_sign_out_is_judged_by_its_epoch(client, account):
    # Tokens minted before and after a sign-out within one second (iat has one-second resolution)
    before = _login(client, account).json()["token"]
    assert client.post("/api/auth/logout-all", headers=_bearer(before)).status_code == 204
    after = _login(client, account).json()["token"]
    assert (
        jwt.decode(before, options={"verify_signature": False})["epoch"] + 1
        == jwt.decode(after, options={"verify_signature": False})["epoch"]
    )
    assert client.get(ME, headers=_bearer(before)).status_code == 401
    assert client.get(ME, headers=_bearer(after)).status_code == 200


# --- tokens whose user is not who they claim ------------------------------------------------------------------


def test_a_genuinely_signed_jwt_whose_user_is_not_in_its_account_is_refused(client, account, other_account):
    for sub in (other_account.user_id, str(uuid.uuid4())):
        token = _signed({"sub": sub, "account_id": account.account_id, "epoch": 0})
        for r in (
            client.get(ME, headers=_bearer(token)),
            client.get("/api/todos", headers=_bearer(token)),
            client.post("/api/todos", json={"title": "x"}, headers=_bearer(token)),
        ):
            assert r.status_code == 401 and _is_problem(r), (sub, r.text)
    # The same claims naming the user's own account are accepted (the signature and epoch are right)
    own = _signed({"sub": account.user_id, "account_id": account.account_id, "epoch": 0})
    assert client.get(ME, headers=_bearer(own)).status_code == 200


def test_a_jwt_with_a_future_or_malformed_epoch_is_refused(client, account):
    for epoch in (1, -1, "0", 0.0, True, None):
        token = _signed({"sub": account.user_id, "account_id": account.account_id, "epoch": epoch})
        assert client.get(ME, headers=_bearer(token)).status_code == 401, epoch


# --- API key expiry and last use -------------------------------------------------------------------------------


def _key(client, account, **extra):
    r = client.post(
        "/api/auth/apikeys", json={"name": "k", "scopes": [], **extra}, headers=account.jwt_headers
    )
    assert r.status_code == 201, r.text
    return r.json()


def test_a_key_with_a_future_expiry_works_and_stops_working_once_expired(client, account, owner_url):
    expires = (datetime.now(UTC) + timedelta(days=30)).replace(microsecond=0)
    created = _key(client, account, expires_at=expires.isoformat())
    assert datetime.fromisoformat(created["expires_at"]) == expires
    assert client.get(ME, headers={"X-Api-Key": created["key"]}).status_code == 200
    # When its expiry passes
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s", (created["id"],)
        )
    # Then it is refused on both transports, saying why
    for headers in ({"X-Api-Key": created["key"]}, _bearer(created["key"])):
        r = client.get(ME, headers=headers)
        assert r.status_code == 401 and _is_problem(r)
        assert "expired" in r.json()["detail"]


def test_an_expiry_in_the_past_or_without_an_offset_is_a_400_naming_expires_at(client, account):
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    naive = (datetime.now(UTC) + timedelta(days=1)).replace(tzinfo=None).isoformat()
    for value in (past, naive, "tomorrow"):
        r = client.post(
            "/api/auth/apikeys", json={"name": "k", "expires_at": value}, headers=account.jwt_headers
        )
        assert r.status_code == 400, (value, r.text)
        assert [e["field"] for e in r.json()["errors"]] == ["expires_at"], value
    # null means never
    assert _key(client, account, expires_at=None)["expires_at"] is None


def _last_used(owner_url: str, key_id: str):
    with psycopg.connect(owner_url) as conn:
        return conn.execute("SELECT last_used_at FROM api_keys WHERE id = %s", (key_id,)).fetchone()[0]


def test_last_used_at_is_written_on_use_at_most_once_a_minute(client, account, owner_url):
    created = _key(client, account)
    assert created["last_used_at"] is None
    headers = {"X-Api-Key": created["key"]}
    # First use stamps it
    assert client.get(ME, headers=headers).status_code == 200
    first = _last_used(owner_url, created["id"])
    assert first is not None
    # Uses within the minute leave it alone
    assert client.get("/api/todos", headers=headers).status_code == 200
    assert _last_used(owner_url, created["id"]) == first
    # Once it is older than a minute the next use moves it on
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET last_used_at = now() - interval '61 seconds' WHERE id = %s", (created["id"],)
        )
    stale = _last_used(owner_url, created["id"])
    assert client.get(ME, headers=headers).status_code == 200
    assert _last_used(owner_url, created["id"]) > stale
    # And the listing shows it
    listed = client.get("/api/auth/apikeys", headers=account.jwt_headers).json()["items"]
    assert next(k for k in listed if k["id"] == created["id"])["last_used_at"] is not None


def test_an_expired_key_is_not_stamped_as_used(client, account, owner_url):
    created = _key(client, account)
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s", (created["id"],)
        )
    assert client.get(ME, headers={"X-Api-Key": created["key"]}).status_code == 401
    assert _last_used(owner_url, created["id"]) is None
