"""MCP refusals reach the person behind the client: the official SDK client and the MCP Inspector CLI show the
reason of a 401 (missing, invalid or revoked key) instead of a generic error or an OAuth prompt."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from .conftest import mcp_session

pytestmark = pytest.mark.anyio

HOW = "send an API key in the X-Api-Key header (or Authorization: Bearer ak_…)"
# Pinned so the run is reproducible; it warns about node < 22 (EBADENGINE) but runs on the machines' node 20.
INSPECTOR = "@modelcontextprotocol/inspector@2.12.0"


def _mcp_error(caught: BaseException) -> MCPError:
    if isinstance(caught, MCPError):
        return caught
    assert isinstance(caught, BaseExceptionGroup), repr(caught)
    found = caught.subgroup(lambda e: isinstance(e, MCPError))
    assert found is not None, repr(caught)
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    assert isinstance(found, MCPError)
    return found


def _revoked_key(account) -> str:
    r = account.client.post(
        "/api/auth/apikeys", json={"name": "to revoke", "scopes": []}, headers=account.jwt_headers
    )
    assert r.status_code == 201, r.text
    created = r.json()
    r = account.client.delete(f"/api/auth/apikeys/{created['id']}", headers=account.jwt_headers)
    assert r.status_code == 204, r.text
    return created["key"]


@pytest.mark.parametrize("case", ["missing", "invalid", "revoked", "jwt"])
async def test_the_official_client_shows_the_reason_of_a_401(base_url, account, case):
    headers = {
        "missing": {},
        "invalid": {"X-Api-Key": "ak_" + "0" * 64},
        "revoked": {"X-Api-Key": _revoked_key(account)} if case == "revoked" else {},
        "jwt": account.jwt_headers,
    }[case]
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with mcp_session(f"{base_url}/mcp/todos", headers):
            pass
    error = _mcp_error(caught.value)
    reason = {
        "missing": "missing API key",
        "invalid": "invalid api key",
        "revoked": "invalid api key",
        "jwt": "MCP endpoints accept API keys only, not JWTs",
    }[case]
    assert error.error.code == -32001
    assert error.error.message == f"{reason} — {HOW}"
    assert error.error.data["reason"] == reason


def _inspector() -> list[str]:
    """The Inspector CLI via npx, installed into a cache on first use; skips when npx or the package is missing."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed")
    probe = subprocess.run(
        [npx, "--yes", INSPECTOR, "--cli", "--help"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "npm_config_update_notifier": "false"},
        check=False,
    )
    if probe.returncode != 0 or "--stored-auth-only" not in probe.stdout:
        pytest.skip(f"{INSPECTOR} could not be installed: {probe.stderr.strip()[-300:]}")
    return [npx, "--yes", INSPECTOR, "--cli"]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "npm_config_update_notifier": "false", "BROWSER": "none"},
        check=False,
    )


def test_the_inspector_cli_lists_tools_with_a_key_and_says_why_without_one(base_url, account):
    inspector = _inspector()
    url = f"{base_url}/mcp/todos"
    listed = _run(
        [
            *inspector,
            url,
            "--transport",
            "http",
            "--header",
            f"X-Api-Key: {account.key('todos:r')}",
            "--method",
            "tools/list",
        ]
    )
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert {"todo_create", "todo_list", "todo_update"} <= names

    refused = _run([*inspector, url, "--transport", "http", "--stored-auth-only", "--method", "tools/list"])
    # Without --stored-auth-only the Inspector answers any 401 by starting interactive OAuth.
    assert refused.returncode != 0 and refused.stdout == "", refused.stdout
    error = json.loads(refused.stderr.strip().splitlines()[-1])["error"]
    assert "missing API key — send an API key in the X-Api-Key header" in error["message"], error
