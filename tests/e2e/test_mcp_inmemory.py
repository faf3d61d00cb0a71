"""The servers in memory (``mcp.Client(server)``, no HTTP): scope-filtered listing and the refusals that need
no database. The HTTP tests cover everything else."""

from __future__ import annotations

import uuid

import anyio
import pytest
from mcp import Client

from agentmate.core.principal import Principal
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as

pytestmark = pytest.mark.anyio

SERVERS = build_servers(registry.load())


def key(*scopes: str) -> Principal:
    return Principal(
        account_id=uuid.uuid4(), user_id=uuid.uuid4(), via="api_key", key_id=uuid.uuid4(), scopes=scopes
    )


async def test_the_aggregate_lists_tools_by_the_callers_scopes_and_rw_implies_r():
    with anyio.fail_after(5), acting_as(key("notes:rw", "expenses:r")):
        async with Client(SERVERS["/mcp"]) as client:
            names = {t.name for t in (await client.list_tools()).tools}
    assert names == {spec.name for spec in registry.load()["notes"].specs} | {
        "expense_get",
        "expense_list",
        "expense_summary",
        "expenses_tags",
    }


async def test_without_a_principal_nothing_is_listed_or_callable():
    with anyio.fail_after(5):
        async with Client(SERVERS["/mcp"]) as client:
            assert (await client.list_tools()).tools == []
            result = await client.call_tool("todo_list", {})
    assert result.is_error and "unauthorized" in result.content[0].text


async def test_scope_is_checked_before_arguments_and_names_the_scope():
    with anyio.fail_after(5), acting_as(key("memory:r")):
        async with Client(SERVERS["/mcp/memory"]) as client:
            result = await client.call_tool("memory_record", {"bogus": 1})
    assert result.is_error
    assert result.content[0].text.startswith("insufficient scope: memory_record requires memory:rw")
