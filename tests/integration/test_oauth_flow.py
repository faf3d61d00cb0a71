"""The authorization server's core (issue 24): the authorization code flow with PKCE over HTTP, consent through
``approve_request`` (in place of the consent page), and the attacks on it — PKCE mismatch, code replay, redirect
URI mismatch, an expired code, refresh rotation and replay, revocation, another resource, scope escalation, a
token across tenants, a changed password, a deleted user, a suspended account — and a user's grants.

The client is stored as dynamic registration stores it (``oauth_helpers.store_client``)."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

import psycopg
import pytest
from conftest import make_account
from oauth_helpers import (
    ISSUER,
    REDIRECT_URI,
    approve,
    authorize,
    bearer,
    exchange,
    pkce_pair,
    query,
    refresh,
    request_id,
    store_client,
    tokens_for,
)

from agentmate.auth import credentials, tokens
from agentmate.auth.oauth import service
from agentmate.auth.settings import get_auth_settings
from agentmate.core.db import get_database
from agentmate.core.errors import NotFound, Unauthorized, ValidationFailed
from agentmate.core.scopes import SCOPES

CLIENT_ID = "ocl_flow_test_client_public"


@pytest.fixture
def clients() -> str:
    """The test's public client, registered (real ``oauth_clients`` row)."""
    return store_client(CLIENT_ID)


@pytest.fixture
def oauth_on(monkeypatch, clients):
    from oauth_helpers import oauth_issuer

    with oauth_issuer(monkeypatch) as issuer:
        yield issuer


def _authenticate(token: str, resource: str | None = None):
    return credentials.authenticate(
        get_database(), get_auth_settings(), api_key=None, bearer=token, resource=resource
    )


def _refused(r, reason: str) -> bool:
    return r.status_code == 401 and reason in r.json()["detail"]


# --- metadata ------------------------------------------------------------------------------------------------


def test_the_metadata_names_the_endpoints_scopes_and_grants(client, oauth_on):
    r = client.get("/.well-known/oauth-authorization-server")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["issuer"] == ISSUER
    assert doc["authorization_endpoint"] == f"{ISSUER}/api/oauth/authorize"
    assert doc["token_endpoint"] == f"{ISSUER}/api/oauth/token"
    assert doc["device_authorization_endpoint"] == f"{ISSUER}/api/oauth/device_authorization"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["client_id_metadata_document_supported"] is True
    assert doc["scopes_supported"] == list(SCOPES)
    assert "urn:ietf:params:oauth:grant-type:device_code" in doc["grant_types_supported"]
    assert doc["token_endpoint_auth_methods_supported"] == [
        "none",
        "client_secret_post",
        "client_secret_basic",
    ]


def test_with_no_issuer_configured_oauth_is_off(client):
    assert client.get("/.well-known/oauth-authorization-server").status_code == 404
    assert client.post("/api/oauth/token", data={"grant_type": "refresh_token"}).status_code == 404


# --- the code flow -------------------------------------------------------------------------------------------


def test_the_code_flow_issues_tokens_that_call_the_api_within_their_scopes(client, oauth_on, account):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge, scope="todos:rw notes:r", resource=f"{ISSUER}/api")
    assert r.status_code == 302 and r.headers["cache-control"] == "no-store", r.text
    req = request_id(r.headers["location"])
    pending = service.pending_request(get_database(), req)
    assert pending is not None
    assert (pending.client_name, pending.client_uri) == ("Test Agent", "https://client.example/")
    assert pending.scopes == ("todos:rw", "notes:r") and pending.resource == f"{ISSUER}/api"
    # the user narrows at consent: todos:rw only
    back = approve(account, req, ["todos:rw"])
    assert back.startswith(REDIRECT_URI + "?")
    params = query(back)
    assert params["state"] == "st-1" and params["iss"] == ISSUER
    r = exchange(client, CLIENT_ID, params["code"], verifier)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "todos:rw" and body["expires_in"] > 0
    assert body["access_token"].startswith("oat_") and body["refresh_token"].startswith("ort_")
    assert r.headers["cache-control"] == "no-store"
    # the token calls the API as the user, within the consented scopes
    headers = bearer(body["access_token"])
    created = client.post("/api/todos", json={"title": "via oauth"}, headers=headers)
    assert created.status_code == 201, created.text
    assert client.get("/api/todos", headers=account.jwt_headers).json()["total"] == 1
    assert client.get("/api/notes", headers=headers).status_code == 403  # not consented
    me = client.get("/api/auth/me", headers=headers)
    assert me.status_code == 200 and me.json()["auth"] == "oauth"
    # the consent was single-use
    assert service.pending_request(get_database(), req) is None


def test_no_scope_asked_gets_every_scope_the_resource_offers(client, oauth_on, account):
    body = tokens_for(client, account, CLIENT_ID)
    assert body["scope"].split() == list(SCOPES)


def test_pkce_mismatch_is_refused(client, oauth_on, account):
    _, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge)
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    r = exchange(client, CLIENT_ID, code, pkce_pair()[0])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"


def test_a_replayed_code_revokes_the_grant_its_first_exchange_created(client, oauth_on, account):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge)
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    first = exchange(client, CLIENT_ID, code, verifier)
    assert first.status_code == 200
    access = first.json()["access_token"]
    assert client.get("/api/todos", headers=bearer(access)).status_code == 200
    again = exchange(client, CLIENT_ID, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert _refused(client.get("/api/todos", headers=bearer(access)), "revoked")
    assert refresh(client, CLIENT_ID, first.json()["refresh_token"]).status_code == 400


def test_a_redirect_uri_not_registered_is_refused_without_a_redirect(client, oauth_on):
    _, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge, redirect_uri="http://127.0.0.1:39999/evil")
    assert r.status_code == 400 and "location" not in r.headers
    assert r.json()["error"] == "invalid_request"


def test_the_token_request_must_repeat_the_redirect_uri_exactly(client, oauth_on, account):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge)
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    r = exchange(client, CLIENT_ID, code, verifier, redirect_uri=REDIRECT_URI + "/other")
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"


def test_an_expired_code_is_refused(client, oauth_on, account, owner_url):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge)
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE account_id = %s",
            (account.account_id,),
        )
    r = exchange(client, CLIENT_ID, code, verifier)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert "expired" in r.json()["error_description"]


def test_an_unknown_client_is_refused(client, oauth_on):
    _, challenge = pkce_pair()
    r = authorize(client, "https://unknown.example/meta.json", challenge)
    assert r.status_code == 404 and "unknown client_id" in r.json()["detail"]
    assert "location" not in r.headers  # never redirected (RFC 6749 §4.1.2.1)


def test_authorization_errors_go_back_to_the_client_with_state_and_iss(client, oauth_on):
    _, challenge = pkce_pair()
    r = authorize(client, CLIENT_ID, challenge, resource="https://elsewhere.example/api")
    assert r.status_code == 302
    params = query(r.headers["location"])
    assert r.headers["location"].startswith(REDIRECT_URI)
    assert params["error"] == "invalid_target" and params["iss"] == ISSUER and params["state"] == "st-1"
    r = authorize(client, CLIENT_ID, challenge, scope="todos:r nosuch:scope")
    assert query(r.headers["location"])["error"] == "invalid_scope"
    assert query(r.headers["location"])["iss"] == ISSUER


def test_consent_must_choose_among_the_scopes_asked_for_and_deny_answers_access_denied(
    client, oauth_on, account
):
    _, challenge = pkce_pair()
    req = request_id(authorize(client, CLIENT_ID, challenge, scope="todos:r").headers["location"])
    for wider in (["todos:r", "notes:r"], []):
        with pytest.raises(ValidationFailed) as exc:
            approve(account, req, wider)
        assert exc.value.errors[0].field == "scopes"
    denied = service.deny_request(get_database(), get_auth_settings(), req)
    params = query(denied)
    assert params["error"] == "access_denied" and params["iss"] == ISSUER and params["state"] == "st-1"
    with pytest.raises(NotFound):
        approve_after_deny = service.approve_request  # the request was answered: it is gone
        from agentmate.auth.oauth.settings import get_oauth_settings

        approve_after_deny(
            get_database(),
            get_auth_settings(),
            get_oauth_settings(),
            req,
            user_id=UUID(account.user_id),
            account_id=UUID(account.account_id),
            scopes=["todos:r"],
        )


# --- refresh, revocation -------------------------------------------------------------------------------------


def test_refresh_rotates_and_a_replayed_refresh_token_revokes_the_family(client, oauth_on, account):
    first = tokens_for(client, account, CLIENT_ID, scope="todos:r")
    r = refresh(client, CLIENT_ID, first["refresh_token"])
    assert r.status_code == 200, r.text
    second = r.json()
    assert second["refresh_token"] != first["refresh_token"] and second["scope"] == "todos:r"
    assert client.get("/api/todos", headers=bearer(second["access_token"])).status_code == 200
    # the spent refresh token presented again: a replay, every token of the grant is refused
    replay = refresh(client, CLIENT_ID, first["refresh_token"])
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    for access in (first["access_token"], second["access_token"]):
        assert _refused(client.get("/api/todos", headers=bearer(access)), "revoked")
    assert refresh(client, CLIENT_ID, second["refresh_token"]).status_code == 400


def test_a_refresh_deletes_the_grants_expired_tokens_and_keeps_its_spent_refresh_token(
    client, oauth_on, account, owner_url
):
    # Given a grant whose first access token has expired
    first = tokens_for(client, account, CLIENT_ID, scope="todos:r")
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = %s",
            (tokens.hash_token(first["access_token"]),),
        )
    # When the client refreshes
    assert refresh(client, CLIENT_ID, first["refresh_token"]).status_code == 200
    # Then the expired access token is gone; the spent refresh token stays (a replay must still be recognised)
    with psycopg.connect(owner_url) as conn:
        kinds = conn.execute(
            """SELECT kind, used_at IS NOT NULL FROM oauth_tokens WHERE grant_id =
                 (SELECT grant_id FROM oauth_tokens WHERE token_hash = %s) ORDER BY created_at, kind""",
            (tokens.hash_token(first["refresh_token"]),),
        ).fetchall()
    assert sorted(kinds) == [("access", False), ("refresh", False), ("refresh", True)]


def test_a_refresh_may_narrow_the_scopes_but_never_widen_them(client, oauth_on, account):
    first = tokens_for(client, account, CLIENT_ID, scope="todos:rw notes:r")
    wider = refresh(client, CLIENT_ID, first["refresh_token"], "todos:rw notes:r memory:r")
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"
    narrowed = refresh(client, CLIENT_ID, first["refresh_token"], "notes:r")
    assert narrowed.status_code == 200 and narrowed.json()["scope"] == "notes:r"
    assert client.get("/api/todos", headers=bearer(narrowed.json()["access_token"])).status_code == 403
    # narrowing is kept: the next refresh cannot take todos:rw back
    back = refresh(client, CLIENT_ID, narrowed.json()["refresh_token"], "todos:rw")
    assert back.status_code == 400 and back.json()["error"] == "invalid_scope"


def test_revocation_refuses_the_grant_and_an_unknown_token_is_still_200(client, oauth_on, account):
    body = tokens_for(client, account, CLIENT_ID)
    r = client.post("/api/oauth/revoke", data={"token": body["access_token"], "client_id": CLIENT_ID})
    assert r.status_code == 200
    assert _refused(client.get("/api/todos", headers=bearer(body["access_token"])), "revoked")
    assert refresh(client, CLIENT_ID, body["refresh_token"]).status_code == 400
    unknown = client.post("/api/oauth/revoke", data={"token": "oat_nothing", "client_id": CLIENT_ID})
    assert unknown.status_code == 200
    missing = client.post("/api/oauth/revoke", data={"client_id": CLIENT_ID})
    assert missing.status_code == 400 and missing.json()["error"] == "invalid_request"


def test_only_access_tokens_are_bearer_credentials(client, oauth_on, account):
    body = tokens_for(client, account, CLIENT_ID)
    for value in (body["refresh_token"], "oac_x", "odc_x"):
        assert _refused(client.get("/api/todos", headers=bearer(value)), "not an access token")
    assert _refused(client.get("/api/todos", headers=bearer("oat_unknown")), "invalid access token")


# --- the resource a token is bound to ------------------------------------------------------------------------


def test_a_token_serves_its_resource_and_those_below_it_only(client, oauth_on, account):
    todos = tokens_for(client, account, CLIENT_ID, resource=f"{ISSUER}/mcp/todos")["access_token"]
    assert _authenticate(todos, f"{ISSUER}/mcp/todos").via == "oauth"
    for elsewhere in (f"{ISSUER}/api", f"{ISSUER}/mcp", f"{ISSUER}/mcp/notes"):
        with pytest.raises(Unauthorized, match="another resource"):
            _authenticate(todos, elsewhere)
    mcp = tokens_for(client, account, CLIENT_ID, resource=f"{ISSUER}/mcp")["access_token"]
    assert _authenticate(mcp, f"{ISSUER}/mcp/notes").grant_id is not None
    with pytest.raises(Unauthorized, match="another resource"):
        _authenticate(mcp, f"{ISSUER}/api")
    everything = tokens_for(client, account, CLIENT_ID)["access_token"]  # no resource: the issuer's
    assert _authenticate(everything, f"{ISSUER}/api").client_id == CLIENT_ID


# --- the user, the account, tenants --------------------------------------------------------------------------


def test_a_token_cannot_reach_another_tenants_rows(client, oauth_on, account, other_account):
    theirs = client.post("/api/todos", json={"title": "theirs"}, headers=other_account.headers()).json()["id"]
    mine = bearer(tokens_for(client, account, CLIENT_ID)["access_token"])
    assert client.get(f"/api/todos/{theirs}", headers=mine).status_code == 404
    assert client.get("/api/todos", headers=mine).json()["total"] == 0


def test_a_changed_password_or_sign_out_everywhere_refuses_the_tokens(client, oauth_on, account):
    before = tokens_for(client, account, CLIENT_ID)
    r = client.post(
        "/api/auth/password",
        json={"current_password": account.password, "new_password": "another long password"},
        headers=account.jwt_headers,
    )
    assert r.status_code == 200, r.text
    assert _refused(client.get("/api/todos", headers=bearer(before["access_token"])), "password changed")
    assert refresh(client, CLIENT_ID, before["refresh_token"]).status_code == 400
    account.token = r.json()["token"]
    after = tokens_for(client, account, CLIENT_ID)
    assert client.post("/api/auth/logout-all", headers=account.jwt_headers).status_code == 204
    assert _refused(client.get("/api/todos", headers=bearer(after["access_token"])), "signed out everywhere")


def test_a_suspended_account_or_deleted_user_refuses_the_tokens(client, oauth_on, account, owner_url):
    body = tokens_for(client, account, CLIENT_ID)
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE accounts SET suspended_at = now() WHERE id = %s", (account.account_id,))
    assert _refused(client.get("/api/todos", headers=bearer(body["access_token"])), "account suspended")
    assert refresh(client, CLIENT_ID, body["refresh_token"]).status_code == 400
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE accounts SET suspended_at = NULL WHERE id = %s", (account.account_id,))
    assert client.get("/api/todos", headers=bearer(body["access_token"])).status_code == 200
    with psycopg.connect(owner_url) as conn:
        conn.execute("DELETE FROM users WHERE id = %s", (account.user_id,))
    assert _refused(
        client.get("/api/todos", headers=bearer(body["access_token"])), "user or account was deleted"
    )


def test_an_oauth_token_is_never_an_admin_credential(client, oauth_on, owner_url):
    admin = make_account(client)
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE users SET role = 'admin' WHERE id = %s", (admin.user_id,))
    token = tokens_for(client, admin, CLIENT_ID)["access_token"]
    r = client.post(f"/api/admin/accounts/{uuid.uuid4()}/suspend", headers=bearer(token))
    assert r.status_code == 403


# --- a user's grants -----------------------------------------------------------------------------------------


def test_grants_are_listed_and_revoked_by_their_user_only(client, oauth_on, account, other_account):
    body = tokens_for(client, account, CLIENT_ID, scope="todos:r", resource=f"{ISSUER}/mcp")
    listed = client.get("/api/auth/grants", headers=account.jwt_headers)
    assert listed.status_code == 200, listed.text
    page = listed.json()
    assert page["total"] == 1
    grant = page["items"][0]
    assert grant["client_id"] == CLIENT_ID and grant["client_name"] == "Test Agent"
    assert grant["scopes"] == ["todos:r"] and grant["resource"] == f"{ISSUER}/mcp"
    assert client.get("/api/auth/grants", headers=other_account.jwt_headers).json()["total"] == 0
    assert client.get("/api/auth/grants", headers=account.headers("todos:r")).status_code == 403
    assert client.get("/api/auth/grants", headers=account.headers("manage_keys")).status_code == 200
    # another tenant cannot revoke it
    path = f"/api/auth/grants/{grant['id']}"
    assert client.delete(path, headers=other_account.jwt_headers).status_code == 404
    assert _authenticate(body["access_token"], f"{ISSUER}/mcp/todos").via == "oauth"
    # its user can: every token of it at once
    assert client.delete(path, headers=account.jwt_headers).status_code == 204
    with pytest.raises(Unauthorized, match="revoked"):
        _authenticate(body["access_token"], f"{ISSUER}/mcp/todos")
    assert refresh(client, CLIENT_ID, body["refresh_token"]).status_code == 400
    assert client.delete(path, headers=account.jwt_headers).status_code == 404
    assert client.get("/api/auth/grants", headers=account.jwt_headers).json()["total"] == 0


# --- registration --------------------------------------------------------------------------------------------


def test_dynamic_registration_then_the_code_flow(client, oauth_on, account, clients):
    r = client.post(
        "/api/oauth/register",
        json={
            "redirect_uris": [REDIRECT_URI],
            "token_endpoint_auth_method": "none",
            "client_name": "Registered Agent",
        },
    )
    assert r.status_code == 201, r.text
    client_id = r.json()["client_id"]
    assert client_id.startswith("ocl_") and client_id != clients
    body = tokens_for(client, account, client_id, scope="notes:r")
    assert body["scope"] == "notes:r"
    bad = client.post("/api/oauth/register", json={"redirect_uris": ["not a url"]})
    assert bad.status_code == 400 and bad.json()["error"] == "invalid_client_metadata"


def test_a_confidential_client_proves_its_secret_at_the_token_and_revocation_endpoints(
    client, oauth_on, account
):
    # Given a client registered for client_secret_basic (the server keeps only the secret's hash)
    r = client.post(
        "/api/oauth/register",
        json={"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "client_secret_basic"},
    )
    assert r.status_code == 201, r.text
    client_id, secret = r.json()["client_id"], r.json()["client_secret"]
    assert secret.startswith("ocs_")
    verifier, challenge = pkce_pair()
    back = approve(account, request_id(authorize(client, client_id, challenge).headers["location"]))
    code = query(back)["code"]
    form = {
        "grant_type": "authorization_code",
        "client_id": client_id,
        "code": code,
        "code_verifier": verifier,
        "redirect_uri": REDIRECT_URI,
    }
    # When it exchanges the code without its secret, or with a wrong one, it is refused (the code stays unused)
    assert client.post("/api/oauth/token", data=form).status_code == 401
    wrong = client.post("/api/oauth/token", data=form, auth=(client_id, secret + "x"))
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    # Then with the secret in HTTP Basic it gets its tokens
    ok = client.post("/api/oauth/token", data=form, auth=(client_id, secret))
    assert ok.status_code == 200, ok.text
    # And revoking needs the secret too: without it the token stays valid
    token = ok.json()["access_token"]
    assert client.post("/api/oauth/revoke", data={"token": token, "client_id": client_id}).status_code == 401
    assert client.get("/api/todos", headers=bearer(token)).status_code == 200
    revoked = client.post(
        "/api/oauth/revoke", data={"token": token, "client_id": client_id}, auth=(client_id, secret)
    )
    assert revoked.status_code == 200
    assert client.get("/api/todos", headers=bearer(token)).status_code == 401


def test_malformed_token_requests_are_oauth_errors_never_500(client, oauth_on):
    cases: list[dict[str, Any]] = [
        {"data": {}},
        {"data": {"grant_type": "authorization_code", "client_id": CLIENT_ID}},
        {"data": {"grant_type": "password", "client_id": CLIENT_ID}},
        {"data": {"grant_type": "refresh_token", "client_id": CLIENT_ID, "refresh_token": "ort_\x00"}},
        {"data": {"grant_type": "authorization_code", "client_id": "nobody"}},
        {"json": {"grant_type": "refresh_token"}},
        {"content": b"\xff\xfe", "headers": {"content-type": "application/x-www-form-urlencoded"}},
    ]
    for case in cases:
        r = client.post("/api/oauth/token", **case)
        assert r.status_code in (400, 401), (case, r.status_code, r.text)
        assert "error" in r.json(), case
