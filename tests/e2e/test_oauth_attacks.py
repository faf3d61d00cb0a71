"""Attacks on the OAuth authorization server that the other OAuth test files leave open (issue 24 §4), each
against the real routes (the local runtime over the test client) and the real Postgres:

- an expired access token, an expired refresh token, and the access token a refresh replaced (rotation);
- a code, a refresh token or a revocation presented by another client than the one it was issued to;
- a token request or a refresh that names another resource than the one consented to (RFC 8707);
- a client ID metadata document: a redirect URI it does not list, and a loopback host without the operator's
  opt-in (refused at ``/authorize``, nothing fetched);
- an authorization request without PKCE or with ``plain``;
- an access token in the query string (OAuth 2.1 §5.1.2: never a credential there).

Which test covers each attack of the issue's list is in the e2e helper's report (and in the module docstrings
of ``tests/integration/test_oauth_flow.py``, ``test_oauth_device.py``, ``test_oauth_clients.py``,
``tests/e2e/test_oauth_pages_http.py`` and ``test_mcp_oauth_resource.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from agentmate.auth.tokens import hash_token
from tests.fakes.https_server import HttpsServer
from tests.integration.test_oauth_flow import _authenticate, _refused
from tests.oauth_helpers import (
    ISSUER,
    REDIRECT_URI,
    approve,
    authorize,
    bearer,
    exchange,
    oauth_issuer,
    pkce_pair,
    query,
    refresh,
    request_id,
    store_client,
    tokens_for,
)

CLIENT = "ocl_attacks_test_client"
OTHER_CLIENT = "ocl_attacks_other_client"


@pytest.fixture
def oauth_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    store_client(CLIENT)
    store_client(OTHER_CLIENT)
    with oauth_issuer(monkeypatch) as issuer:
        yield issuer


def _expire(owner_url: str, token: str) -> None:
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = %(h)s",
            {"h": hash_token(token)},
        )


# -- expiry ---------------------------------------------------------------------------------------------------------


def test_an_expired_access_token_is_refused_saying_to_refresh(client, oauth_on, account, owner_url):
    tokens = tokens_for(client, account, CLIENT, scope="todos:r")
    assert client.get("/api/todos", headers=bearer(tokens["access_token"])).status_code == 200
    _expire(owner_url, tokens["access_token"])
    r = client.get("/api/todos", headers=bearer(tokens["access_token"]))
    assert _refused(r, "access token expired: use the refresh token"), r.text
    # the refresh token still works, and its new access token does
    renewed = refresh(client, CLIENT, tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    assert client.get("/api/todos", headers=bearer(renewed.json()["access_token"])).status_code == 200


def test_an_expired_refresh_token_mints_nothing(client, oauth_on, account, owner_url):
    tokens = tokens_for(client, account, CLIENT, scope="todos:r")
    _expire(owner_url, tokens["refresh_token"])
    r = refresh(client, CLIENT, tokens["refresh_token"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant", r.text
    assert "access_token" not in r.json()


def test_a_refresh_retires_the_access_token_it_replaces(client, oauth_on, account):
    # Given a client's tokens, and a copy of its access token in someone else's hands
    first = tokens_for(client, account, CLIENT, scope="todos:r")
    # When the client refreshes (rotation)
    r = refresh(client, CLIENT, first["refresh_token"])
    assert r.status_code == 200, r.text
    # Then the access token it replaced is refused, while the new one works
    assert _refused(client.get("/api/todos", headers=bearer(first["access_token"])), "expired"), r.text
    assert client.get("/api/todos", headers=bearer(r.json()["access_token"])).status_code == 200


# -- one client's artefacts presented by another --------------------------------------------------------------------


def test_a_code_issued_to_one_client_is_refused_to_another(client, oauth_on, account):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT, challenge)
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    # the other client knows the code, the verifier and the redirect URI, and still gets nothing
    stolen = exchange(client, OTHER_CLIENT, code, verifier)
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant", stolen.text
    # while the client it was issued to redeems it
    assert exchange(client, CLIENT, code, verifier).status_code == 200


def test_a_refresh_token_or_a_revocation_from_another_client_does_nothing(client, oauth_on, account):
    tokens = tokens_for(client, account, CLIENT, scope="todos:r")
    stolen = refresh(client, OTHER_CLIENT, tokens["refresh_token"])
    assert stolen.status_code == 400 and stolen.json()["error"] == "invalid_grant", stolen.text
    # another client's revocation is a 200 (RFC 7009 §2.2) that revokes nothing
    for token in (tokens["access_token"], tokens["refresh_token"]):
        r = client.post("/api/oauth/revoke", data={"token": token, "client_id": OTHER_CLIENT})
        assert r.status_code == 200
    assert client.get("/api/todos", headers=bearer(tokens["access_token"])).status_code == 200
    # and the real client's refresh token was neither spent nor its grant revoked by those attempts
    assert refresh(client, CLIENT, tokens["refresh_token"]).status_code == 200


# -- the resource (RFC 8707) ----------------------------------------------------------------------------------------


def test_the_token_request_cannot_move_the_token_to_another_resource(client, oauth_on, account):
    verifier, challenge = pkce_pair()
    r = authorize(client, CLIENT, challenge, resource=f"{ISSUER}/mcp/todos", scope="todos:r")
    code = query(approve(account, request_id(r.headers["location"])))["code"]
    # the token request names the REST API (or the whole server) instead of the consented MCP module
    r = client.post(
        "/api/oauth/token",
        data={
            "grant_type": "authorization_code",
            "client_id": CLIENT,
            "code": code,
            "code_verifier": verifier,
            "redirect_uri": REDIRECT_URI,
            "resource": ISSUER,
        },
    )
    # then the token is still bound to what the user consented to: the module, not the REST API
    assert r.status_code == 200, r.text
    access = r.json()["access_token"]
    assert _authenticate(access, f"{ISSUER}/mcp/todos").via == "oauth"
    assert _refused(client.get("/api/todos", headers=bearer(access)), "another resource")
    # and a refresh naming the REST API does not move it either
    moved = client.post(
        "/api/oauth/token",
        data={
            "grant_type": "refresh_token",
            "client_id": CLIENT,
            "refresh_token": r.json()["refresh_token"],
            "resource": f"{ISSUER}/api",
        },
    )
    assert moved.status_code == 200, moved.text
    assert _refused(
        client.get("/api/todos", headers=bearer(moved.json()["access_token"])), "another resource"
    )
    assert _authenticate(moved.json()["access_token"], f"{ISSUER}/mcp/todos").via == "oauth"


# -- client ID metadata documents at /authorize ---------------------------------------------------------------------


@pytest.fixture
def https(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpsServer]:
    """A client's https host; the test CA trusted and loopback opened (the operator's opt-in) by default."""
    from agentmate.auth.oauth import cimd
    from agentmate.auth.oauth.settings import get_oauth_settings

    with HttpsServer() as server:
        monkeypatch.setenv("OAUTH_CIMD_CA_BUNDLE", server.ca_pem(tmp_path))
        monkeypatch.setenv("OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS", "127.0.0.0/8")
        get_oauth_settings.cache_clear()
        cimd.CACHE.clear()
        yield server
        monkeypatch.delenv("OAUTH_CIMD_CA_BUNDLE")
        monkeypatch.delenv("OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS")
        get_oauth_settings.cache_clear()
        cimd.CACHE.clear()


def _document(server: HttpsServer, name: str) -> str:
    path = f"/clients/{name}.json"
    url = server.url(path)
    doc = {"client_id": url, "client_name": "Document client", "redirect_uris": [REDIRECT_URI]}
    return server.document(path, doc)


def test_a_redirect_uri_the_document_does_not_list_is_refused_without_a_redirect(client, oauth_on, https):
    client_id = _document(https, "listed-only")
    _, challenge = pkce_pair()
    evil = "http://127.0.0.1:39999/elsewhere"
    r = authorize(client, client_id, challenge, redirect_uri=evil)
    assert r.status_code == 400 and "location" not in r.headers, r.text
    assert r.json()["error"] == "invalid_request"
    # while the URI it lists goes on to the consent page
    ok = authorize(client, client_id, challenge)
    assert ok.status_code == 302 and ok.headers["location"].startswith(f"{ISSUER}/api/oauth/consent?request=")


def test_a_document_on_loopback_without_the_operators_opt_in_is_refused_and_never_fetched(
    client, oauth_on, https, monkeypatch
):
    from agentmate.auth.oauth.settings import get_oauth_settings

    monkeypatch.setenv("OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS", "")
    get_oauth_settings.cache_clear()
    client_id = _document(https, "loopback")
    _, challenge = pkce_pair()
    r = authorize(client, client_id, challenge)
    # an unknown client: never redirected (RFC 6749 §4.1.2.1), and the document was not fetched
    assert r.status_code == 404 and "location" not in r.headers, r.text
    assert "unknown client_id" in r.json()["detail"]
    assert https.hits["/clients/loopback.json"] == 0


# -- PKCE and the authorization request -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pkce",
    [
        pytest.param({}, id="no challenge"),
        pytest.param({"code_challenge": "x" * 43, "code_challenge_method": "plain"}, id="plain"),
    ],
)
def test_an_authorization_without_s256_pkce_issues_no_consent_page(client, oauth_on, pkce):
    params = {
        "client_id": CLIENT,
        "response_type": "code",
        "redirect_uri": REDIRECT_URI,
        "state": "st-1",
        **pkce,
    }
    r = client.get("/api/oauth/authorize", params=params, follow_redirects=False)
    # the error goes back to the client (its redirect URI is known), never to the consent page
    assert r.status_code == 302, r.text
    assert r.headers["location"].startswith(REDIRECT_URI + "?")
    answer = query(r.headers["location"])
    assert answer["error"] == "invalid_request" and "code_challenge" in answer["error_description"]
    assert answer["state"] == "st-1" and answer["iss"] == ISSUER


# -- where a token may be presented ---------------------------------------------------------------------------------


def test_an_access_token_in_the_query_string_is_not_a_credential(client, oauth_on, account):
    token = tokens_for(client, account, CLIENT, scope="todos:r")["access_token"]
    r = client.get("/api/todos", params={"access_token": token})
    assert r.status_code == 400, r.text
    assert r.json()["errors"][0]["field"] == "access_token"
    assert token not in r.text
