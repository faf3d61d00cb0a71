"""MCP after issue 8's credential changes, with the official SDK client: an API key of a deleted account is
refused with its reason (no 500), a key that expired too; JWTs — valid or revoked — stay refused (MCP takes API
keys only)."""

from __future__ import annotations

import anyio
import psycopg
import pytest

from .conftest import mcp_session
from .test_mcp_auth_errors import HOW, _mcp_error

pytestmark = pytest.mark.anyio


async def _refusal(url: str, headers: dict[str, str]):
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with mcp_session(url, headers):
            pass
    return _mcp_error(caught.value).error


async def test_a_key_of_a_deleted_account_is_refused_with_its_reason(base_url, account):
    key = {"X-Api-Key": account.key("todos:rw")}
    # Given a key that works over MCP
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", key) as s:
            made = await s.call_tool("todo_create", {"title": "before deletion"})
    assert not made.is_error
    # When the account is deleted
    r = account.client.request(
        "DELETE", "/api/auth/account", json={"password": account.password}, headers=account.jwt_headers
    )
    assert r.status_code == 204, r.text
    # Then the same key is a 401 whose reason reaches the client
    error = await _refusal(f"{base_url}/mcp/todos", key)
    assert error.code == -32001 and error.message == f"invalid api key — {HOW}"


async def test_an_expired_key_is_refused_with_its_reason(base_url, account, owner_url):
    r = account.client.post(
        "/api/auth/apikeys", json={"name": "short-lived", "scopes": ["todos:r"]}, headers=account.jwt_headers
    )
    created = r.json()
    with psycopg.connect(owner_url) as conn:
        conn.execute(
            "UPDATE api_keys SET expires_at = now() - interval '1 second' WHERE id = %s", (created["id"],)
        )
    error = await _refusal(f"{base_url}/mcp/todos", {"X-Api-Key": created["key"]})
    assert error.code == -32001 and error.data["reason"].startswith("api key expired")


async def test_jwts_stay_refused_on_mcp_whether_current_or_revoked(base_url, account):
    current = account.client.post(
        "/api/auth/login", json={"email": account.email, "password": account.password}
    )
    assert account.client.post("/api/auth/logout-all", headers=account.jwt_headers).status_code == 204
    for token in (account.token, current.json()["token"]):  # both revoked by the sign-out
        error = await _refusal(f"{base_url}/mcp/todos", {"Authorization": f"Bearer {token}"})
        assert error.data["reason"] == "MCP endpoints accept API keys only, not JWTs"
    fresh = account.client.post(
        "/api/auth/login", json={"email": account.email, "password": account.password}
    )
    error = await _refusal(f"{base_url}/mcp/todos", {"Authorization": f"Bearer {fresh.json()['token']}"})
    assert error.data["reason"] == "MCP endpoints accept API keys only, not JWTs"


async def test_a_key_of_a_suspended_account_is_refused_with_its_reason_until_reactivated(
    base_url, account, owner_url
):
    key = {"X-Api-Key": account.key("todos:rw")}
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE accounts SET suspended_at = now() WHERE id = %s", (account.account_id,))
    error = await _refusal(f"{base_url}/mcp/todos", key)
    assert error.code == -32001 and error.data["reason"].startswith("account suspended")
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE accounts SET suspended_at = NULL WHERE id = %s", (account.account_id,))
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", key) as s:
            listed = await s.call_tool("todo_list", {})
    assert not listed.is_error
