"""The REST API as an OAuth protected resource (RFC 9728, RFC 6750; issue 24 §2): the metadata documents, the
401 and 403 challenges with OAuth on and off, and access tokens bound to the resource they were issued for."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

import psycopg
import pytest

from agentmate.core.mcp_modules import MCP_MODULES
from agentmate.core.scopes import SCOPES

ISSUER = "http://127.0.0.1:26001"  # the ``client`` fixture's base URL
WELL_KNOWN = f"{ISSUER}/.well-known/oauth-protected-resource"
APIKEY = 'ApiKey realm="agentmate" header="X-Api-Key"'
DISCOVER = "/api/knowledge/discover"


def _clear_settings() -> None:
    from agentmate.auth.settings import get_auth_settings

    get_auth_settings.cache_clear()


@pytest.fixture
def oauth_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OAUTH_ISSUER_URL", ISSUER)
    _clear_settings()
    yield ISSUER
    monkeypatch.delenv("OAUTH_ISSUER_URL")
    _clear_settings()


def grant(
    account, resource: str, *scopes: str, client_id: str = "https://client.example/metadata.json"
) -> dict[str, str]:
    """An access token of ``account``'s user for ``resource`` (core's ``issue_grant``, as consent would)."""
    from agentmate.auth.oauth.service import issue_grant
    from agentmate.auth.oauth.settings import get_oauth_settings
    from agentmate.core.db import get_database

    tokens = issue_grant(
        get_database(),
        get_oauth_settings(),
        account_id=UUID(account.account_id),
        user_id=UUID(account.user_id),
        client_id=client_id,
        client_name="resource tests",
        client_uri=None,
        scopes=scopes,
        resource=resource,
    )
    return {"Authorization": f"Bearer {tokens.access_token}"}


# -- RFC 9728 documents ---------------------------------------------------------------------------------------------

PATHS = {
    "": (ISSUER, SCOPES),
    "/api": (f"{ISSUER}/api", SCOPES),
    "/mcp/todos": (f"{ISSUER}/mcp/todos", ("todos:r", "todos:rw")),
    # the pack needs memory:r and fills the layers the token may also read
    "/mcp/context": (f"{ISSUER}/mcp/context", ("todos:r", "notes:r", "memory:r", "skills:r", "knowledge:r")),
    "/mcp/knowledge": (f"{ISSUER}/mcp/knowledge", ("skills:r", "knowledge:r", "knowledge:rw")),
}


@pytest.mark.parametrize("path", [*PATHS, "/mcp", *(f"/mcp/{m}" for m in MCP_MODULES)])
def test_every_resource_has_its_metadata_document(client, oauth_on, path):
    # When a client reads the document of a resource
    r = client.get(f"/.well-known/oauth-protected-resource{path}")
    # Then it names the resource, this server as its authorization server, and the scopes a token may carry
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    doc = r.json()
    resource, scopes = PATHS.get(path, (f"{ISSUER}{path}", None))
    assert doc["resource"] == resource
    assert doc["authorization_servers"] == [ISSUER]
    assert doc["bearer_methods_supported"] == ["header"]
    assert doc["resource_documentation"] == f"{ISSUER}/api/guide"
    assert doc["resource_name"].startswith("Agentmate")
    if scopes is not None:
        assert doc["scopes_supported"] == list(scopes)
    assert doc["scopes_supported"] and set(doc["scopes_supported"]) <= set(SCOPES)
    # And the MCP SDK's own model reads it
    from mcp.shared.auth import ProtectedResourceMetadata

    assert str(ProtectedResourceMetadata.model_validate(doc).resource).rstrip("/") == resource


def test_the_aggregate_mcp_resource_offers_every_modules_scopes(client, oauth_on):
    doc = client.get("/.well-known/oauth-protected-resource/mcp").json()
    assert doc["scopes_supported"] == [s for s in SCOPES if s != "manage_keys"]


@pytest.mark.parametrize("path", ["", "/api", "/mcp", "/mcp/todos"])
def test_the_documents_are_404_problems_while_oauth_is_off(client, path):
    r = client.get(f"/.well-known/oauth-protected-resource{path}")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    assert "OAuth is not enabled" in r.json()["detail"]


@pytest.mark.parametrize(
    "path", ["/mcp/nope", "/mcp/TODOS", "/mcp/todos/tools", "/apis", "/mcp/" + "x" * 5000]
)
def test_an_unknown_resource_has_no_document(client, oauth_on, path):
    r = client.get(f"/.well-known/oauth-protected-resource{path}")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json", r.text
    assert "x" * 100 not in r.text


# -- REST challenges ------------------------------------------------------------------------------------------------


def test_with_oauth_off_the_401_and_403_keep_todays_challenges(client, account):
    r = client.get("/api/todos")
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == f'Bearer realm="agentmate", {APIKEY}'
    r = client.post(DISCOVER, json={}, headers=account.headers("knowledge:r"))
    assert r.status_code == 403 and "www-authenticate" not in r.headers
    assert r.json()["error"] == "insufficient_scope"
    assert r.json()["required_scopes"] == ["knowledge:r", "skills:r"]


def test_with_oauth_off_an_access_token_is_refused(client, account):
    token = grant(account, f"{ISSUER}/api", "todos:r")
    r = client.get("/api/todos", headers=token)
    assert r.status_code == 401 and "OAuth is not enabled" in r.json()["detail"]


def test_a_401_names_the_api_metadata_and_the_routes_scopes_and_still_offers_the_key_header(client, oauth_on):
    # Given OAuth is on, when a request carries no credential
    r = client.get("/api/todos")
    # Then the Bearer challenge points at the REST API's metadata with the route's scope, beside the ApiKey one
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == (
        f'Bearer realm="agentmate", resource_metadata="{WELL_KNOWN}/api", scope="todos:r", {APIKEY}'
    )
    # And a route any credential may call asks for every scope of the resource
    r = client.get("/api/auth/me")
    assert f'scope="{" ".join(SCOPES)}"' in r.headers["www-authenticate"]
    # And an unusable bearer token is an invalid_token
    r = client.post(DISCOVER, json={}, headers={"Authorization": "Bearer oat_not-a-token"})
    assert r.status_code == 401 and r.json()["detail"].startswith("invalid access token")
    assert r.headers["www-authenticate"] == (
        f'Bearer realm="agentmate", error="invalid_token", resource_metadata="{WELL_KNOWN}/api", '
        f'scope="knowledge:r skills:r", {APIKEY}'
    )


def test_the_jwt_only_routes_keep_their_bearer_challenge(client, oauth_on):
    r = client.post("/api/auth/logout-all")
    assert r.status_code == 401 and r.headers["www-authenticate"] == 'Bearer realm="agentmate"'


def test_a_missing_scope_is_a_403_naming_every_scope_the_route_needs(client, oauth_on, account):
    # Given a token holding one of the two scopes knowledge discovery needs
    token = grant(account, f"{ISSUER}/api", "knowledge:r")
    for headers in (token, account.headers("knowledge:r")):
        r = client.post(DISCOVER, json={}, headers=headers)
        # Then the 403 names both, in the body and in the challenge (what to ask for on the next authorization)
        assert r.status_code == 403 and r.headers["content-type"] == "application/problem+json"
        body = r.json()
        assert body["error"] == "insufficient_scope"
        assert body["required_scopes"] == ["knowledge:r", "skills:r"] and body["required_scope"] == "skills:r"
        assert body["detail"] == "insufficient scope: skills:r (this route needs knowledge:r and skills:r)"
        assert r.headers["www-authenticate"] == (
            'Bearer realm="agentmate", error="insufficient_scope", '
            'error_description="this route needs knowledge:r and skills:r", '
            f'resource_metadata="{WELL_KNOWN}/api", scope="knowledge:r skills:r"'
        )
    # And a route needing one scope names that one
    r = client.post("/api/todos", json={"title": "t"}, headers=grant(account, f"{ISSUER}/api", "todos:r"))
    assert r.status_code == 403 and r.json()["required_scopes"] == ["todos:rw"]
    assert 'scope="todos:rw"' in r.headers["www-authenticate"]


# -- tokens on REST -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("resource", [f"{ISSUER}/api", ISSUER])
def test_a_token_for_the_api_or_the_whole_server_works_on_rest_within_its_scopes(
    client, oauth_on, account, resource
):
    token = grant(account, resource, "todos:rw")
    made = client.post("/api/todos", json={"title": "via oauth"}, headers=token)
    assert made.status_code == 201, made.text
    listed = client.get("/api/todos", headers=token)
    assert listed.status_code == 200 and [t["title"] for t in listed.json()["items"]] == ["via oauth"]
    assert client.get("/api/notes", headers=token).status_code == 403


@pytest.mark.parametrize("resource", ["/mcp", "/mcp/todos", "/api/todos", "/apix"])
def test_a_token_for_another_resource_is_refused_on_rest(client, oauth_on, account, resource):
    r = client.get("/api/todos", headers=grant(account, f"{ISSUER}{resource}", "todos:rw"))
    assert r.status_code == 401, r.text
    assert r.json()["detail"].startswith("access token issued for another resource")
    assert 'error="invalid_token"' in r.headers["www-authenticate"]


def test_a_token_of_one_account_never_reads_another(client, oauth_on, account, other_account):
    mine = client.post("/api/todos", json={"title": "mine"}, headers=account.headers("todos:rw")).json()
    token = grant(other_account, f"{ISSUER}/api", "todos:rw")
    assert client.get(f"/api/todos/{mine['id']}", headers=token).status_code == 404
    assert client.get("/api/todos", headers=token).json()["items"] == []


def test_jwt_only_routes_refuse_an_oauth_token_like_a_key(client, oauth_on, account):
    token = grant(account, f"{ISSUER}/api", *SCOPES)
    r = client.post("/api/auth/logout-all", headers=token)
    assert r.status_code == 403 and r.json()["detail"].endswith("not an API key or OAuth token")
    assert client.get("/api/auth/me", headers=token).status_code == 200


def test_admin_routes_refuse_an_oauth_token_even_of_an_admin(
    client, oauth_on, account, other_account, owner_url
):
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE users SET role = 'admin' WHERE id = %s", (account.user_id,))
    reactivate = f"/api/admin/accounts/{other_account.account_id}/reactivate"
    r = client.post(reactivate, headers=grant(account, ISSUER, *SCOPES))
    assert (
        r.status_code == 403 and r.json()["detail"] == "admin access requires a JWT or a full-access API key"
    )
    assert client.post(reactivate, headers=account.jwt_headers).status_code == 200
