"""Auth through the HTTP API: registration, login, the caller, API keys and their scopes (spec/001 "Auth",
"Create API Key with Scopes", "Authentication", "Scopes Example")."""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import UTC, datetime, timedelta

import jwt
import psycopg
import pytest
from psycopg import sql

# The 17 scopes of spec/001's table, in the table's order.
SPEC_SCOPES = [
    "todos:r",
    "todos:rw",
    "notes:r",
    "notes:rw",
    "reports:r",
    "reports:rw",
    "bookmarks:r",
    "bookmarks:rw",
    "expenses:r",
    "expenses:rw",
    "memory:r",
    "memory:rw",
    "skills:r",
    "skills:rw",
    "knowledge:r",
    "knowledge:rw",
    "manage_keys",
]
PASSWORD = "correct horse battery"


def _email() -> str:
    return f"auth-{uuid.uuid4().hex[:12]}@example.com"


def _is_problem(r) -> bool:
    return r.headers["content-type"].startswith("application/problem+json")


def _create_key(client, headers: dict[str, str], scopes: list[str], name: str = "k"):
    return client.post("/api/auth/apikeys", json={"name": name, "scopes": scopes}, headers=headers)


# --- registration ---------------------------------------------------------------------------------------


def test_register_returns_201_with_the_new_user_and_account(client):
    # Given a new email in mixed case
    email = _email()
    # When it registers
    r = client.post(
        "/api/auth/register",
        json={"email": email.upper().replace("@EXAMPLE.COM", "@Example.com"), "password": PASSWORD},
    )
    # Then a user and its own account exist, and the email is stored lower-cased
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["email"] == email
    uuid.UUID(body["user_id"]), uuid.UUID(body["account_id"])
    assert "password" not in body and "password_hash" not in body


def test_registering_an_email_twice_is_a_409_whatever_its_case(client):
    email = _email()
    assert client.post("/api/auth/register", json={"email": email, "password": PASSWORD}).status_code == 201
    again = client.post("/api/auth/register", json={"email": email, "password": PASSWORD})
    shouting = client.post("/api/auth/register", json={"email": email.upper(), "password": PASSWORD})
    assert again.status_code == 409 and _is_problem(again)
    assert shouting.status_code == 409


def test_register_with_an_invalid_email_and_a_short_password_is_a_400_listing_both_fields(client):
    r = client.post("/api/auth/register", json={"email": "not-an-email", "password": "short"})
    assert r.status_code == 400 and _is_problem(r)
    assert {e["field"] for e in r.json()["errors"]} == {"email", "password"}
    assert "email" in r.json()["detail"] and "password" in r.json()["detail"]


def test_register_with_missing_and_unknown_fields_is_a_400_naming_them(client):
    r = client.post("/api/auth/register", json={"email": _email(), "nickname": "x"})
    assert r.status_code == 400
    errors = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert errors["password"] == "field required"
    assert errors["nickname"].startswith("unknown field")


# --- login and the caller -------------------------------------------------------------------------------


def test_login_returns_a_jwt_that_authenticates_the_user(client, account):
    # Given a registered user
    r = client.post("/api/auth/login", json={"email": account.email, "password": account.password})
    assert r.status_code == 200, r.text
    token = r.json()
    assert token["token_type"] == "bearer" and token["expires_at"]
    # When /me is called with the JWT
    me = client.get("/api/auth/me", headers={"Authorization": f"Bearer {token['token']}"})
    # Then it is the user, authenticated by JWT with full access
    assert me.status_code == 200, me.text
    assert me.json() == {
        "user_id": account.user_id,
        "account_id": account.account_id,
        "email": account.email,
        "role": "user",
        "auth": "jwt",
        "key_id": None,
        "scopes": [],
    }


def test_login_with_a_wrong_password_or_unknown_email_is_the_same_401(client, account):
    wrong = client.post("/api/auth/login", json={"email": account.email, "password": "wrong password!"})
    unknown = client.post("/api/auth/login", json={"email": _email(), "password": PASSWORD})
    assert wrong.status_code == 401 and _is_problem(wrong)
    assert unknown.status_code == 401
    assert wrong.json()["detail"] == unknown.json()["detail"]
    assert "token" not in wrong.json()


@pytest.mark.parametrize("transport", ["x-api-key", "bearer"])
def test_me_accepts_an_api_key_on_both_transports(client, account, transport):
    # Given a key with a couple of scopes
    created = _create_key(client, account.jwt_headers, ["todos:rw", "notes:r"]).json()
    headers = (
        {"X-Api-Key": created["key"]}
        if transport == "x-api-key"
        else {"Authorization": f"Bearer {created['key']}"}
    )
    # When /me is called with it
    r = client.get("/api/auth/me", headers=headers)
    # Then the caller is the key, with its scopes
    assert r.status_code == 200, r.text
    me = r.json()
    assert me["auth"] == "api_key" and me["key_id"] == created["id"]
    assert me["account_id"] == account.account_id and me["user_id"] == account.user_id
    assert me["scopes"] == ["todos:rw", "notes:r"]


def test_lowercase_header_names_from_the_spec_examples_work(client, account):
    key = account.key("todos:r")
    assert client.get("/api/todos", headers={"x-api-key": key}).status_code == 200
    assert client.get("/api/todos", headers={"authorization": f"bearer {key}"}).status_code == 200


def test_requests_without_credentials_or_with_bad_ones_are_401(client):
    missing = client.get("/api/auth/me")
    assert missing.status_code == 401 and _is_problem(missing)
    assert "X-Api-Key" in missing.json()["detail"]
    for headers in (
        {"X-Api-Key": "ak_" + "0" * 64},
        {"Authorization": "Bearer ak_" + "0" * 64},
        {"Authorization": "Bearer not-a-jwt"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"X-Api-Key": ""},
    ):
        assert client.get("/api/auth/me", headers=headers).status_code == 401, headers


# --- JWT integrity ----------------------------------------------------------------------------------------


def _claims(account, **overrides):
    now = datetime.now(UTC)
    return {
        "sub": account.user_id,
        "account_id": account.account_id,
        "epoch": 0,
        "iat": now,
        "exp": now + timedelta(hours=1),
        **overrides,
    }


def test_a_tampered_jwt_is_401(client, account):
    header, payload, signature = account.token.split(".")
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    assert (
        client.get(
            "/api/auth/me", headers={"Authorization": f"Bearer {header}.{payload}.{flipped}"}
        ).status_code
        == 401
    )
    # A payload swapped for another account's, keeping the original signature
    forged_payload = jwt.encode(
        _claims(account, account_id=str(uuid.uuid4())), "irrelevant-" + "z" * 32
    ).split(".")[1]
    assert (
        client.get(
            "/api/auth/me", headers={"Authorization": f"Bearer {header}.{forged_payload}.{signature}"}
        ).status_code
        == 401
    )


def test_a_jwt_signed_with_another_secret_or_with_alg_none_is_401(client, account):
    other = jwt.encode(_claims(account), "some-other-secret-" + "y" * 32, algorithm="HS256")
    unsigned = jwt.encode(_claims(account), None, algorithm="none")
    for token in (other, unsigned):
        assert client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_an_expired_jwt_is_401(client, account):
    # Given a token signed with the real secret that expired a minute ago
    past = datetime.now(UTC) - timedelta(minutes=1)
    token = jwt.encode(
        _claims(account, iat=past - timedelta(hours=1), exp=past), os.environ["JWT_SECRET"], algorithm="HS256"
    )
    # Then it is refused, while the same claims unexpired are accepted
    assert client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    fresh = jwt.encode(_claims(account), os.environ["JWT_SECRET"], algorithm="HS256")
    assert client.get("/api/auth/me", headers={"Authorization": f"Bearer {fresh}"}).status_code == 200


def test_a_jwt_missing_required_claims_is_401(client, account):
    token = jwt.encode(
        {"sub": account.user_id, "exp": datetime.now(UTC) + timedelta(hours=1)},
        os.environ["JWT_SECRET"],
        algorithm="HS256",
    )
    assert client.get("/api/auth/me", headers={"Authorization": f"Bearer {token}"}).status_code == 401


# --- API keys -----------------------------------------------------------------------------------------------


def test_creating_a_key_returns_the_plaintext_once_and_stores_only_its_hash(client, account, owner_url):
    # When a key is created
    r = _create_key(client, account.jwt_headers, ["todos:rw", "notes:r"], name="  my-agent  ")
    # Then the plaintext is ak_ + 64 hex characters, shown in this response
    assert r.status_code == 201, r.text
    created = r.json()
    plaintext = created["key"]
    assert plaintext.startswith("ak_") and len(plaintext) == 67
    int(plaintext[3:], 16)
    assert created["prefix"] == plaintext[:10] and created["name"] == "my-agent"
    assert created["scopes"] == ["todos:rw", "notes:r"] and created["created_by_key_id"] is None
    # And the database holds its SHA-256, and the plaintext in no column of any table
    with psycopg.connect(owner_url) as conn:
        row = conn.execute("SELECT key_hash, prefix FROM api_keys WHERE id = %s", (created["id"],)).fetchone()
        assert row == (hashlib.sha256(plaintext.encode()).hexdigest(), plaintext[:10])
        tables = [
            t
            for (t,) in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' "
                "AND table_type = 'BASE TABLE'"
            )
        ]
        for table in tables:
            hits = conn.execute(
                sql.SQL("SELECT count(*) FROM {} t WHERE strpos(t::text, %s) > 0").format(
                    sql.Identifier(table)
                ),
                (plaintext[10:],),
            ).fetchone()
            assert hits == (0,), f"table {table} holds the API key plaintext"
    # And the key is never shown again
    listing = client.get("/api/auth/apikeys", headers=account.jwt_headers).json()
    assert plaintext not in str(listing)


def test_listing_keys_shows_metadata_but_never_key_material(client, account):
    first = _create_key(client, account.jwt_headers, ["todos:r"], name="first").json()
    second = _create_key(client, account.jwt_headers, [], name="second").json()
    r = client.get("/api/auth/apikeys", headers=account.jwt_headers)
    assert r.status_code == 200, r.text
    page = r.json()
    assert page["total"] == 2 and page["limit"] == 20 and page["offset"] == 0
    assert [k["id"] for k in page["items"]] == [second["id"], first["id"]]  # newest first
    for item in page["items"]:
        assert set(item) == {
            "id",
            "name",
            "prefix",
            "scopes",
            "created_by_key_id",
            "created_at",
            "expires_at",
            "last_used_at",
        }
    assert first["key"] not in r.text and second["key"] not in r.text
    assert (
        client.get("/api/auth/apikeys", params={"limit": 0}, headers=account.jwt_headers).status_code == 400
    )


def test_deleting_a_key_is_204_then_404_and_the_key_stops_working(client, account):
    # Given a working key
    created = _create_key(client, account.jwt_headers, ["todos:r"]).json()
    key_headers = {"X-Api-Key": created["key"]}
    assert client.get("/api/todos", headers=key_headers).status_code == 200
    # When it is deleted
    r = client.delete(f"/api/auth/apikeys/{created['id']}", headers=account.jwt_headers)
    assert r.status_code == 204 and r.content == b""
    # Then it no longer authenticates, on either transport, and a second delete is a 404
    assert client.get("/api/todos", headers=key_headers).status_code == 401
    assert (
        client.get("/api/auth/me", headers={"Authorization": f"Bearer {created['key']}"}).status_code == 401
    )
    assert client.delete(f"/api/auth/apikeys/{created['id']}", headers=account.jwt_headers).status_code == 404
    assert client.delete(f"/api/auth/apikeys/{uuid.uuid4()}", headers=account.jwt_headers).status_code == 404
    assert client.delete("/api/auth/apikeys/not-a-uuid", headers=account.jwt_headers).status_code == 400


def test_another_accounts_key_cannot_be_deleted_or_seen(client, account, other_account):
    # Given a key of another account
    theirs = _create_key(client, other_account.jwt_headers, ["todos:r"]).json()
    # When this account tries to delete it, by JWT or by a full-access key
    for headers in (account.jwt_headers, account.headers()):
        r = client.delete(f"/api/auth/apikeys/{theirs['id']}", headers=headers)
        assert r.status_code == 404, r.text
    # Then it is not listed here and still works for its owner
    assert theirs["id"] not in client.get("/api/auth/apikeys", headers=account.jwt_headers).text
    assert client.get("/api/todos", headers={"X-Api-Key": theirs["key"]}).status_code == 200


def test_an_unknown_scope_is_a_400_listing_the_allowed_scopes(client, account):
    r = _create_key(client, account.jwt_headers, ["todos:r", "todos:write", "admin"])
    assert r.status_code == 400 and _is_problem(r)
    errors = r.json()["errors"]
    assert [e["field"] for e in errors] == ["scopes[1]", "scopes[2]"]
    for e in errors:
        assert e["allowed"] == SPEC_SCOPES
    assert client.get("/api/auth/apikeys", headers=account.jwt_headers).json()["total"] == 0


def test_the_schema_endpoint_lists_exactly_the_spec_scopes(client):
    schema = client.get("/api/schema").json()
    assert [s["scope"] for s in schema["scopes"]] == SPEC_SCOPES


def test_rw_implies_r_and_r_alone_cannot_write(client, account):
    # Given a todos:rw key and a todos:r key (spec "Scopes Example")
    rw = account.headers("todos:rw")
    ro = account.headers("todos:r", "notes:r")
    # Then the rw key can read and write
    created = client.post("/api/todos", json={"title": "t"}, headers=rw)
    assert created.status_code == 201
    assert client.get("/api/todos", headers=rw).status_code == 200
    assert client.get(f"/api/todos/{created.json()['id']}", headers=rw).status_code == 200
    # And the read-only key can list and get but not create, update or delete
    assert client.get("/api/todos", headers=ro).status_code == 200
    assert client.get(f"/api/todos/{created.json()['id']}", headers=ro).status_code == 200
    denied = client.post("/api/todos", json={"title": "t"}, headers=ro)
    assert denied.status_code == 403 and _is_problem(denied)
    assert denied.json()["required_scope"] == "todos:rw"
    assert (
        client.patch(f"/api/todos/{created.json()['id']}", json={"title": "x"}, headers=ro).status_code == 403
    )
    assert client.delete(f"/api/todos/{created.json()['id']}", headers=ro).status_code == 403


def test_an_empty_scope_list_is_full_access(client, account):
    full = account.headers()
    assert client.get("/api/auth/me", headers=full).json()["scopes"] == []
    assert client.post("/api/todos", json={"title": "t"}, headers=full).status_code == 201
    assert client.get("/api/todos", headers=full).status_code == 200
    assert client.get("/api/auth/apikeys", headers=full).status_code == 200
    assert _create_key(client, full, []).status_code == 201


def test_a_key_without_manage_keys_cannot_manage_keys(client, account):
    # Given a key with every scope except manage_keys
    headers = account.headers(*[s for s in SPEC_SCOPES if s != "manage_keys"])
    victim = _create_key(client, account.jwt_headers, ["todos:r"]).json()
    # Then it can neither create, list nor delete keys
    for r in (
        _create_key(client, headers, ["todos:r"]),
        client.get("/api/auth/apikeys", headers=headers),
        client.delete(f"/api/auth/apikeys/{victim['id']}", headers=headers),
    ):
        assert r.status_code == 403, r.text
        assert r.json()["required_scope"] == "manage_keys"
    assert client.get("/api/todos", headers={"X-Api-Key": victim["key"]}).status_code == 200


def test_a_key_with_manage_keys_can_mint_only_keys_within_its_own_scopes(client, account):
    # Given a key with manage_keys and todos:rw
    parent_key = account.key("manage_keys", "todos:rw")
    parent = {"X-Api-Key": parent_key}
    parent_id = client.get("/api/auth/me", headers=parent).json()["key_id"]
    # Then it can mint keys within its scopes (todos:rw implies todos:r), recorded as their creator
    for scopes in (["todos:r"], ["todos:rw"], ["manage_keys", "todos:r"]):
        r = _create_key(client, parent, scopes)
        assert r.status_code == 201, (scopes, r.text)
        assert r.json()["created_by_key_id"] == parent_id
    # But not a key with a scope it lacks, nor a full-access key (an empty list)
    for scopes in (["notes:r"], ["todos:rw", "notes:r"], ["expenses:rw"], []):
        r = _create_key(client, parent, scopes)
        assert r.status_code == 403 and _is_problem(r), (scopes, r.text)
    # And it can list and delete keys
    assert client.get("/api/auth/apikeys", headers=parent).status_code == 200
    child = _create_key(client, parent, ["todos:r"]).json()
    assert client.delete(f"/api/auth/apikeys/{child['id']}", headers=parent).status_code == 204


def test_a_read_only_manager_cannot_mint_a_writer(client, account):
    parent = account.headers("manage_keys", "todos:r")
    assert _create_key(client, parent, ["todos:rw"]).status_code == 403
    assert _create_key(client, parent, ["todos:r"]).status_code == 201


def test_duplicate_scopes_are_stored_once_and_a_blank_name_is_400(client, account):
    r = _create_key(client, account.jwt_headers, ["todos:r", "todos:r"])
    assert r.status_code == 201 and r.json()["scopes"] == ["todos:r"]
    blank = client.post("/api/auth/apikeys", json={"name": "", "scopes": []}, headers=account.jwt_headers)
    assert blank.status_code == 400 and [e["field"] for e in blank.json()["errors"]] == ["name"]
