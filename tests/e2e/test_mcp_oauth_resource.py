"""The MCP endpoints as OAuth protected resources (issue 24 §2), with the official SDK client: a 401's challenges
with OAuth on and off, access tokens bound to the endpoint's resource (``{issuer}/mcp`` serves every module and
the aggregate, ``{issuer}/mcp/todos`` only that module, ``{issuer}/api`` no MCP endpoint), the step-up 403 of a
``tools/call`` outside the grant's scopes, and legacy session ids bound to the grant."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx
import pytest

from agentmate.core.scopes import SCOPES
from tests.integration.test_oauth_resource import grant

from .conftest import mcp_session
from .test_mcp import INIT, MCP_HEADERS
from .test_mcp_auth_errors import _mcp_error

pytestmark = pytest.mark.anyio

APIKEY = 'ApiKey header="X-Api-Key"'
MCP_SCOPES = " ".join(s for s in SCOPES if s != "manage_keys")


def _clear_settings() -> None:
    from agentmate.auth.settings import get_auth_settings

    get_auth_settings.cache_clear()


@pytest.fixture
def issuer(base_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """OAuth on, with the served base URL as the issuer (the app reads its settings per request)."""
    monkeypatch.setenv("OAUTH_ISSUER_URL", base_url)
    _clear_settings()
    yield base_url
    monkeypatch.delenv("OAUTH_ISSUER_URL")
    _clear_settings()


async def _refusal(url: str, headers: dict[str, str]):
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with mcp_session(url, headers):
            pass
    return _mcp_error(caught.value).error


async def _initialize(url: str, headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient() as http:
        return await http.post(url, json=INIT, headers={**MCP_HEADERS, **headers})


def _call(name: str, arguments: dict) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


# -- challenges -----------------------------------------------------------------------------------------------------


async def test_with_oauth_off_a_401_offers_only_the_api_key_and_tokens_are_refused(base_url, account):
    r = await _initialize(f"{base_url}/mcp/todos", {})
    assert r.status_code == 401 and r.headers["www-authenticate"] == APIKEY
    token = grant(account, f"{base_url}/mcp/todos", "todos:r")
    error = await _refusal(f"{base_url}/mcp/todos", token)
    assert error.data["reason"] == "OAuth is not enabled on this server: send an API key"


@pytest.mark.parametrize(
    ("path", "scope"), [("/mcp/todos", "todos:r todos:rw"), ("/mcp", MCP_SCOPES), ("/mcp/", MCP_SCOPES)]
)
async def test_a_401_names_the_endpoints_metadata_and_scopes_beside_the_api_key(issuer, path, scope):
    # Given OAuth is on, when initialize carries no credential
    r = await _initialize(f"{issuer}{path}", {})
    # Then the Bearer challenge names this endpoint's resource metadata and scopes, and the ApiKey one follows
    resource_path = path.rstrip("/")
    assert r.status_code == 401, r.text
    assert r.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{issuer}/.well-known/oauth-protected-resource{resource_path}", '
        f'scope="{scope}", {APIKEY}'
    )
    error = r.json()["error"]
    assert error["code"] == -32001 and error["data"]["reason"] == "missing credentials"
    # And the metadata it names is served, for this very endpoint (what the SDK client checks, RFC 8707)
    from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url

    async with httpx.AsyncClient() as http:
        document = (await http.get(f"{issuer}/.well-known/oauth-protected-resource{resource_path}")).json()
    assert (
        document["resource"] == f"{issuer}{resource_path}" and document["scopes_supported"] == scope.split()
    )
    assert check_resource_allowed(resource_url_from_server_url(f"{issuer}{path}"), document["resource"])
    assert "authorize with OAuth" in error["message"] and "X-Api-Key" in error["message"]
    # And an unusable token is an invalid_token
    r = await _initialize(f"{issuer}{path}", {"Authorization": "Bearer oat_not-a-token"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith('Bearer error="invalid_token", ')
    assert r.json()["error"]["data"]["reason"].startswith("invalid access token")


async def test_with_oauth_on_keys_still_work_and_jwts_stay_refused(issuer, account):
    with anyio.fail_after(10):
        async with mcp_session(f"{issuer}/mcp/todos", account.headers("todos:rw")) as s:
            made = await s.call_tool("todo_create", {"title": "by key"})
    assert not made.is_error
    error = await _refusal(f"{issuer}/mcp/todos", account.jwt_headers)
    assert error.data["reason"] == "MCP endpoints accept API keys and OAuth access tokens, not JWTs"


# -- audience -------------------------------------------------------------------------------------------------------


async def test_a_token_for_one_module_serves_that_module_only(issuer, account, client):
    token = grant(account, f"{issuer}/mcp/todos", "todos:rw")
    # It works on /mcp/todos
    with anyio.fail_after(10):
        async with mcp_session(f"{issuer}/mcp/todos", token) as s:
            made = await s.call_tool("todo_create", {"title": "via oauth"})
    assert not made.is_error and made.structured_content["title"] == "via oauth"
    # And is refused on another module, on the aggregate endpoint and on the REST API
    for path in ("/mcp/notes", "/mcp"):
        error = await _refusal(f"{issuer}{path}", token)
        assert error.code == -32001
        assert error.data["reason"].startswith("access token issued for another resource"), error
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{issuer}/api/todos", headers=token)
    assert r.status_code == 401 and "another resource" in r.json()["detail"]


async def test_a_token_for_mcp_serves_every_module_and_the_aggregate_but_not_rest(issuer, account):
    token = grant(account, f"{issuer}/mcp", "todos:rw", "notes:r")
    with anyio.fail_after(20):
        async with mcp_session(f"{issuer}/mcp/todos", token) as s:
            assert not (await s.call_tool("todo_create", {"title": "t"})).is_error
        async with mcp_session(f"{issuer}/mcp/notes", token) as s:
            assert not (await s.call_tool("note_list", {})).is_error
        async with mcp_session(f"{issuer}/mcp", token) as s:
            listed = {t.name for t in (await s.list_tools()).tools}
    # (the aggregate lists only the tools the grant's scopes allow)
    assert "todo_create" in listed and "note_list" in listed and "note_create" not in listed
    assert not any(name.startswith("memory_") for name in listed)
    async with httpx.AsyncClient() as http:
        r = await http.get(f"{issuer}/api/todos", headers=token)
    assert r.status_code == 401


async def test_a_token_for_the_rest_api_serves_no_mcp_endpoint(issuer, account):
    token = grant(account, f"{issuer}/api", "todos:rw")
    error = await _refusal(f"{issuer}/mcp/todos", token)
    assert error.data["reason"].startswith("access token issued for another resource")


async def test_a_token_of_one_account_never_reads_another_over_mcp(issuer, account, other_account):
    with anyio.fail_after(10):
        async with mcp_session(f"{issuer}/mcp/todos", account.headers("todos:rw")) as s:
            mine = (await s.call_tool("todo_create", {"title": "mine"})).structured_content
        async with mcp_session(f"{issuer}/mcp/todos", grant(other_account, issuer, "todos:r")) as s:
            got = await s.call_tool("todo_get", {"id": mine["id"]})
            listed = await s.call_tool("todo_list", {})
    assert got.is_error and "not found" in got.content[0].text
    assert listed.structured_content["items"] == []


# -- step-up --------------------------------------------------------------------------------------------------------


async def test_a_tool_outside_the_grants_scopes_is_a_403_step_up_naming_its_scopes(issuer, account):
    token = grant(account, f"{issuer}/mcp", "todos:r", "knowledge:r")
    # With the official client: the call fails with insufficient_scope and the scopes it needs
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with mcp_session(f"{issuer}/mcp/todos", token) as s:
            assert not (await s.call_tool("todo_list", {})).is_error
            await s.call_tool("todo_create", {"title": "t"})
    error = _mcp_error(caught.value).error
    assert error.code == -32043 and error.message.startswith(
        "insufficient_scope: todo_create requires todos:rw"
    )
    assert error.data["error"] == "insufficient_scope" and error.data["required_scopes"] == ["todos:rw"]
    # Over HTTP: 403 with the Bearer challenge naming only what this call needs (both scopes for discovery)
    async with httpx.AsyncClient() as http:
        r = await http.post(
            f"{issuer}/mcp/knowledge",
            json=_call("knowledge_discover", {"skill_version_id": "00000000-0000-0000-0000-000000000000"}),
            headers={**MCP_HEADERS, **token},
        )
    assert r.status_code == 403, r.text
    assert r.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", error_description="knowledge_discover requires knowledge:r and '
        f'skills:r", resource_metadata="{issuer}/.well-known/oauth-protected-resource/mcp/knowledge", '
        'scope="knowledge:r skills:r"'
    )
    assert r.json()["id"] == 5 and r.json()["error"]["data"]["required_scopes"] == ["knowledge:r", "skills:r"]


async def test_an_api_key_without_the_scope_still_gets_a_tool_error(issuer, account):
    with anyio.fail_after(10):
        async with mcp_session(f"{issuer}/mcp/todos", account.headers("todos:r")) as s:
            refused = await s.call_tool("todo_create", {"title": "t"})
    assert refused.is_error and "insufficient scope" in refused.content[0].text


# -- sessions -------------------------------------------------------------------------------------------------------


async def test_a_session_id_is_bound_to_the_user_and_client_it_was_issued_to(issuer, account, other_account):
    first = grant(account, f"{issuer}/mcp/todos", "todos:r")
    # a second grant of the same user to the same client (a step-up or a re-authorization mid-session)
    second = grant(account, f"{issuer}/mcp/todos", "todos:r", "todos:rw")
    elsewhere = grant(
        account, f"{issuer}/mcp/todos", "todos:r", client_id="https://other.example/client.json"
    )
    theirs = grant(other_account, f"{issuer}/mcp/todos", "todos:r")
    init = await _initialize(f"{issuer}/mcp/todos", first)
    assert init.status_code == 200, init.text
    session = {"Mcp-Session-Id": init.headers["mcp-session-id"]}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    answers = {}
    async with httpx.AsyncClient() as http:
        for name, credential in [
            ("same", first),
            ("step-up", second),
            ("another client", elsewhere),
            ("another user", theirs),
            ("key", account.headers("todos:r")),
        ]:
            r = await http.post(
                f"{issuer}/mcp/todos", json=listing, headers={**MCP_HEADERS, **credential, **session}
            )
            answers[name] = r.status_code
            if r.status_code == 404:
                assert "OAuth user and client" in r.json()["error"]["message"]
    assert answers == {"same": 200, "step-up": 200, "another client": 404, "another user": 404, "key": 404}
