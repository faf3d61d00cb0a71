"""MCP over real HTTP: the official SDK client against uvicorn on loopback (see conftest.base_url)."""

from __future__ import annotations

import uuid
from pathlib import Path

import anyio
import httpx
import pytest

from agentmate.mcp import registry

from .conftest import mcp_session
from .spec_tools import SPEC_TOOLS

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-03-26",
        "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


GUIDE = Path(__file__).resolve().parents[2] / "docs" / "agent-integration.md"


def _documented_extras(served: set[str], spec: set[str]) -> set[str]:
    """Served tools beyond the spec that the guide does not list (must be none)."""
    guide = GUIDE.read_text(encoding="utf-8")
    return {name for name in served - spec if f"`{name}`" not in guide}


async def test_each_module_endpoint_lists_the_spec_tool_names_and_documents_the_rest(base_url, account):
    key = account.key()
    with anyio.fail_after(20):
        for module in registry.MODULES:
            async with mcp_session(f"{base_url}/mcp/{module}", {"X-Api-Key": key}) as s:
                names = {t.name for t in (await s.list_tools()).tools}
            assert set(SPEC_TOOLS[module]) <= names, module
            assert _documented_extras(names, set(SPEC_TOOLS[module])) == set(), module


async def test_aggregate_endpoint_lists_every_tool_a_full_access_key_may_call(base_url, account):
    key = account.key()
    with anyio.fail_after(20):
        per_module: set[str] = set()
        for module in registry.MODULES:
            async with mcp_session(f"{base_url}/mcp/{module}", {"X-Api-Key": key}) as s:
                per_module |= {t.name for t in (await s.list_tools()).tools}
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": key}) as s:
            init_names = {t.name for t in (await s.list_tools()).tools}
    assert init_names == per_module
    assert {name for module in registry.MODULES for name in SPEC_TOOLS[module]} <= init_names


async def test_tools_describe_allowed_values_in_schema_and_text(base_url, account):
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": account.key("todos:r")}) as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
    create = tools["todo_create"]
    assert create.input_schema["properties"]["status"]["enum"] == [
        "pending",
        "in_progress",
        "done",
        "cancelled",
    ]
    assert create.input_schema["properties"]["priority"]["enum"] == ["low", "medium", "high"]
    assert create.input_schema["required"] == ["title"]
    assert "in_progress" in create.description and "todos:rw" in create.description
    assert create.output_schema is not None and "id" in create.output_schema["properties"]
    assert tools["todo_get"].annotations.read_only_hint is True
    assert tools["todo_delete"].annotations.destructive_hint is True


async def test_todo_tools_round_trip_with_structured_results(base_url, account):
    # Given a key with todos:rw
    headers = {"X-Api-Key": account.key("todos:rw")}
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/todos", headers) as s:
            # When a todo is created with messy tags
            created = await s.call_tool(
                "todo_create",
                {
                    "title": "Ship MCP",
                    "priority": "high",
                    "tags": [" Work ", "URGENT", "work"],
                    "due_date": "2026-12-01T10:00:00Z",
                },
            )
            assert not created.is_error, text(created)
            todo = created.structured_content
            # Then the result is structured and normalised like REST
            assert todo["tags"] == ["work", "urgent"] and todo["status"] == "pending"
            assert todo["due_date"].startswith("2026-12-01T10:00:00")
            assert todo["id"] in text(created)
            # And it reads back, lists, searches, updates and deletes
            got = await s.call_tool("todo_get", {"id": todo["id"]})
            assert got.structured_content == todo
            await s.call_tool("todo_create", {"title": "Other errand", "status": "done"})
            listed = (await s.call_tool("todo_list", {"tags": ["WORK"]})).structured_content
            assert [t["id"] for t in listed["items"]] == [todo["id"]] and listed["total"] == 1
            done = (await s.call_tool("todo_list", {"status": "done", "limit": 5})).structured_content
            assert [t["title"] for t in done["items"]] == ["Other errand"] and done["limit"] == 5
            found = (await s.call_tool("todo_search", {"q": "ship"})).structured_content
            assert [t["id"] for t in found["items"]] == [todo["id"]]
            updated = await s.call_tool(
                "todo_update", {"id": todo["id"], "status": "in_progress", "clear_due_date": True}
            )
            assert not updated.is_error, text(updated)
            assert updated.structured_content["status"] == "in_progress"
            assert updated.structured_content["due_date"] is None
            assert updated.structured_content["title"] == "Ship MCP"
            deleted = await s.call_tool("todo_delete", {"id": todo["id"]})
            assert deleted.structured_content == {"id": todo["id"], "deleted": True}
            # And a deleted todo is "todo not found" for get, update and delete
            for name, args in [("todo_get", {}), ("todo_update", {"title": "x"}), ("todo_delete", {})]:
                gone = await s.call_tool(name, {"id": todo["id"], **args})
                assert gone.is_error and text(gone) == "todo not found", name


async def test_todo_create_is_retry_safe_with_an_idempotency_key(base_url, account):
    headers = {"X-Api-Key": account.key("todos:rw")}
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", headers) as s:
            args = {"title": "once", "idempotency_key": "mcp-retry-1"}
            first = (await s.call_tool("todo_create", args)).structured_content
            again = (await s.call_tool("todo_create", args)).structured_content
            changed = await s.call_tool("todo_create", {**args, "title": "twice"})
            count = (await s.call_tool("todo_list", {})).structured_content["total"]
    assert first == again and count == 1
    assert changed.is_error and "idempotency key was already used" in text(changed)


async def test_invalid_arguments_are_tool_errors_naming_the_field_and_allowed_values(base_url, account):
    headers = {"X-Api-Key": account.key("todos:rw")}
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", headers) as s:
            bad_enum = await s.call_tool(
                "todo_create", {"title": "x", "status": "nope", "priority": "urgent"}
            )
            bad_limit = await s.call_tool("todo_list", {"limit": 1000})
            bad_id = await s.call_tool("todo_get", {"id": "not-a-uuid"})
            both = await s.call_tool(
                "todo_update",
                {"id": str(uuid.uuid4()), "due_date": "2026-01-01T00:00:00Z", "clear_due_date": True},
            )
            missing = await s.call_tool("todo_create", {})
    assert bad_enum.is_error
    assert (
        "status: must be one of the allowed values (allowed: pending, in_progress, done, cancelled)"
        in text(bad_enum)
    )
    assert "priority: must be one of the allowed values (allowed: low, medium, high)" in text(bad_enum)
    assert bad_limit.is_error and "limit:" in text(bad_limit)
    assert bad_id.is_error and "id:" in text(bad_id)
    assert both.is_error and "clear_due_date" in text(both)
    assert missing.is_error and "title: field required" in text(missing)


async def test_unknown_arguments_are_refused_not_dropped(base_url, account):
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": account.key("todos:rw")}) as s:
            result = await s.call_tool("todo_create", {"title": "x", "colour": "red"})
            count = (await s.call_tool("todo_list", {})).structured_content["total"]
    assert result.is_error and "colour: unknown field (allowed: description, due_date" in text(result)
    assert count == 0  # nothing was created with the argument silently dropped


async def test_a_tool_outside_the_keys_scopes_is_refused_naming_the_scope(base_url, account):
    # Given a read-only todos key
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": account.key("todos:r")}) as s:
            # When it writes
            refused = await s.call_tool("todo_create", {"title": "nope"})
            refused_bad_args = await s.call_tool("todo_delete", {"id": "not-a-uuid"})
            # Then the write is refused naming todos:rw, before argument validation; reads work
            allowed = await s.call_tool("todo_list", {})
    assert refused.is_error and "insufficient scope" in text(refused) and "todos:rw" in text(refused)
    assert refused_bad_args.is_error and "todos:rw" in text(refused_bad_args)
    assert not allowed.is_error


async def test_the_aggregate_lists_only_tools_within_the_keys_scopes(base_url, account):
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("todos:r")}) as s:
            read_only = {t.name for t in (await s.list_tools()).tools}
            refused = await s.call_tool("todo_create", {"title": "nope"})
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("manage_keys")}) as s:
            nothing = [t.name for t in (await s.list_tools()).tools]
            refused_read = await s.call_tool("todo_list", {})
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": account.key("manage_keys")}) as s:
            module_list = {t.name for t in (await s.list_tools()).tools}
    assert read_only == {"todo_get", "todo_list", "todo_search", "todos_tags"}
    assert refused.is_error and "todos:rw" in text(refused)
    assert nothing == []
    assert refused_read.is_error and "todos:r " in text(refused_read)
    # module endpoints list their whole surface: spec/001's tools and the tag roster (todos_tags)
    assert module_list == {*SPEC_TOOLS["todos"], "todos_tags"}


async def test_another_accounts_todo_is_not_found_through_mcp(base_url, account, other_account):
    with anyio.fail_after(10):
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": other_account.key("todos:rw")}) as s:
            theirs = (await s.call_tool("todo_create", {"title": "private"})).structured_content
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            results = [
                await s.call_tool(name, {"id": theirs["id"], **extra})
                for name, extra in [("todo_get", {}), ("todo_update", {"title": "mine"}), ("todo_delete", {})]
            ]
            listed = (await s.call_tool("todo_search", {"q": "private"})).structured_content
    assert all(r.is_error and text(r) == "todo not found" for r in results)
    assert listed["total"] == 0


@pytest.mark.parametrize(
    ("path", "server"),
    [
        ("/mcp/todos", "agentmate-todos"),
        ("/mcp/todos/", "agentmate-todos"),
        ("/mcp", "agentmate"),
        ("/mcp/", "agentmate"),
    ],
)
async def test_endpoints_answer_with_and_without_a_trailing_slash(base_url, account, path, server):
    async with httpx.AsyncClient(base_url=base_url, follow_redirects=False) as http:
        r = await http.post(path, json=INIT, headers={**MCP_HEADERS, "X-Api-Key": account.key("todos:r")})
    assert r.status_code == 200, r.text
    assert r.json()["result"]["serverInfo"]["name"] == server


@pytest.mark.parametrize("path", ["/mcp/nope", "/mcp/todos/extra", "/mcp/knowledgebase"])
async def test_unknown_mcp_paths_are_json_rpc_404s_listing_the_endpoints(base_url, path):
    async with httpx.AsyncClient(base_url=base_url) as http:
        r = await http.post(path, json=INIT, headers=MCP_HEADERS)
    assert r.status_code == 404
    assert r.headers["content-type"] == "application/json"
    error = r.json()["error"]
    assert "/mcp/todos" in error["data"]["endpoints"] and "/mcp/todos" in error["message"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"X-Api-Key": "ak_" + "0" * 64},
        {"Authorization": "Bearer ak_not-a-key"},
        {"X-Api-Key": ""},
    ],
    ids=["missing", "unknown", "bad-bearer-key", "blank"],
)
async def test_initialize_without_a_valid_key_is_a_401_json_rpc_error(base_url, headers):
    async with httpx.AsyncClient(base_url=base_url) as http:
        for path in ("/mcp/todos", "/mcp"):
            r = await http.post(path, json={**INIT, "id": 7}, headers={**MCP_HEADERS, **headers})
            assert r.status_code == 401, r.text
            assert r.headers["content-type"] == "application/json"
            assert r.headers["www-authenticate"] == 'ApiKey header="X-Api-Key"'
            body = r.json()
            assert body["jsonrpc"] == "2.0" and body["id"] == 7 and "mcp-session-id" not in r.headers
            assert body["error"]["code"] == -32001 and body["error"]["data"]["status"] == 401
            assert body["error"]["message"].startswith(body["error"]["data"]["reason"])
            assert (
                "send an API key in the X-Api-Key header (or Authorization: Bearer ak_…)"
                in body["error"]["message"]
            )


async def test_a_jwt_is_refused_on_mcp(base_url, account):
    async with httpx.AsyncClient(base_url=base_url) as http:
        r = await http.post("/mcp/todos", json=INIT, headers={**MCP_HEADERS, **account.jwt_headers})
    assert r.status_code == 401 and "API keys only" in r.json()["error"]["message"]


async def test_the_sdk_client_is_refused_with_a_401_before_initialize(base_url):
    from mcp.shared.exceptions import MCPError

    # The SDK surfaces the HTTP 401 on initialize as an MCPError (inside its task groups).
    with anyio.fail_after(10), pytest.raises(BaseException) as caught:
        async with mcp_session(f"{base_url}/mcp/todos", {"X-Api-Key": "ak_wrong"}):
            pass
    assert isinstance(caught.value, MCPError) or (
        isinstance(caught.value, BaseExceptionGroup) and caught.group_contains(MCPError)
    )


@pytest.mark.parametrize("how", ["bearer", "query"])
async def test_the_key_may_come_as_a_bearer_token_or_query_parameter(base_url, account, how):
    key = account.key("todos:rw")
    url, headers = f"{base_url}/mcp/todos", {"Authorization": f"Bearer {key}"}
    if how == "query":
        url, headers = f"{base_url}/mcp/todos?api_key={key}", {}
    with anyio.fail_after(10):
        async with mcp_session(url, headers) as s:
            made = await s.call_tool("todo_create", {"title": f"via {how}"})
    assert not made.is_error and made.structured_content["title"] == f"via {how}"


async def test_the_spec_curl_handshake_works_statelessly(base_url, account):
    key = account.key("todos:r")
    async with httpx.AsyncClient(base_url=base_url) as http:
        # 1. initialize — the Mcp-Session-Id response header is the session
        init = await http.post("/mcp/todos", json=INIT, headers={**MCP_HEADERS, "X-Api-Key": key})
        assert init.status_code == 200 and init.headers["content-type"].startswith("application/json")
        sid = init.headers["mcp-session-id"]
        assert init.json()["result"]["protocolVersion"] == "2025-03-26"
        # 2. list tools with the session
        headers = {**MCP_HEADERS, "X-Api-Key": key, "Mcp-Session-Id": sid}
        notified = await http.post(
            "/mcp/todos", headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )
        listed = await http.post(
            "/mcp/todos",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
        )
        # and the same session id is honoured by the aggregate endpoint (any replica, no server state)
        other_endpoint = await http.post(
            "/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
        )
    assert notified.status_code == 202
    assert listed.status_code == 200, listed.text
    assert sorted(t["name"] for t in listed.json()["result"]["tools"]) == sorted(
        [*SPEC_TOOLS["todos"], "todos_tags"]
    )
    assert listed.headers["cache-control"] == "private, no-store"
    assert other_endpoint.status_code == 200


async def test_any_replica_honours_a_session_id_another_one_issued(base_url, replica_url, account):
    key = account.key("todos:r")
    async with httpx.AsyncClient() as http:
        init = await http.post(f"{base_url}/mcp/todos", json=INIT, headers={**MCP_HEADERS, "X-Api-Key": key})
        headers = {**MCP_HEADERS, "X-Api-Key": key, "Mcp-Session-Id": init.headers["mcp-session-id"]}
        listed = await http.post(
            f"{replica_url}/mcp/todos",
            headers=headers,
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        )
        ended = await http.delete(f"{replica_url}/mcp/todos", headers=headers)
    assert listed.status_code == 200 and len(listed.json()["result"]["tools"]) == len(SPEC_TOOLS["todos"]) + 1
    assert ended.status_code == 405  # stateless: there is no server-side session to terminate


async def test_a_session_id_is_bound_to_the_key_it_was_issued_to(base_url, account, other_account):
    async with httpx.AsyncClient(base_url=base_url) as http:
        init = await http.post("/mcp/todos", json=INIT, headers={**MCP_HEADERS, "X-Api-Key": account.key()})
        sid = init.headers["mcp-session-id"]
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        foreign = await http.post(
            "/mcp/todos",
            json=body,
            headers={**MCP_HEADERS, "X-Api-Key": other_account.key(), "Mcp-Session-Id": sid},
        )
        forged = await http.post(
            "/mcp/todos",
            json=body,
            headers={**MCP_HEADERS, "X-Api-Key": account.key(), "Mcp-Session-Id": "made-up"},
        )
        cold = await http.post("/mcp/todos", json=body, headers={**MCP_HEADERS, "X-Api-Key": account.key()})
    assert foreign.status_code == 404 and foreign.json()["error"]["message"].startswith("Session not found")
    assert forged.status_code == 404
    assert cold.status_code == 200 and "mcp-session-id" not in cold.headers  # stateless: no session needed


async def test_get_offers_no_event_stream(base_url, account):
    async with httpx.AsyncClient(base_url=base_url) as http:
        r = await http.get("/mcp/todos", headers={"Accept": "text/event-stream", "X-Api-Key": account.key()})
    assert r.status_code == 405 and r.headers["allow"] == "POST, DELETE"


async def test_host_and_origin_outside_the_allowlist_are_refused(base_url, account):
    headers = {**MCP_HEADERS, "X-Api-Key": account.key("todos:r")}
    async with httpx.AsyncClient(base_url=base_url) as http:
        bad_host = await http.post("/mcp/todos", json=INIT, headers={**headers, "Host": "evil.example"})
        bad_origin = await http.post(
            "/mcp/todos", json=INIT, headers={**headers, "Origin": "https://evil.example"}
        )
        good_origin = await http.post(
            "/mcp/todos", json=INIT, headers={**headers, "Origin": "http://localhost:3000"}
        )
    assert bad_host.status_code == 421
    assert bad_origin.status_code == 403
    assert good_origin.status_code == 200


async def test_a_2026_protocol_client_works_without_a_handshake(base_url, account):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    with anyio.fail_after(10):
        async with httpx2.AsyncClient(headers={"X-Api-Key": account.key("todos:rw")}) as http:
            async with Client(streamable_http_client(f"{base_url}/mcp/todos", http_client=http)) as c:
                made = await c.call_tool("todo_create", {"title": "modern"})
                refused = await c.call_tool("todo_get", {"id": str(uuid.uuid4())})
    assert not made.is_error and made.structured_content["title"] == "modern"
    assert refused.is_error and text(refused) == "todo not found"


def test_the_local_runtime_serves_mcp_on_the_rest_port(client, account):
    # The session-scoped TestClient runs the local dispatcher, whose lifespan enters the MCP app's.
    r = client.post("/mcp/todos", json=INIT, headers={**MCP_HEADERS, "X-Api-Key": account.key("todos:r")})
    assert r.status_code == 200 and r.headers["mcp-session-id"]
    assert client.post("/mcp/todos", json=INIT, headers=MCP_HEADERS).status_code == 401
    assert client.get("/api/todos", headers=account.headers("todos:r")).status_code == 200
