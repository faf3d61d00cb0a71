"""MCP is observed like REST (issue 9 item 11): the same business metrics from the same use cases, and the same
log keys (correlation id, account id) on what a tool call logs; an unexpected failure is logged with its
traceback and answered without internals."""

from __future__ import annotations

import io
import json
import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
from mcp import Client

from agentmate.core import observability
from agentmate.core.principal import Principal
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as
from agentmate.mcp.server import UNEXPECTED_TEXT

SERVERS = build_servers(registry.load())


def _principal(account: Any) -> Principal:
    return Principal(account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt")


def _call(
    principal: Principal, tool: str, arguments: dict[str, Any], correlation_id: str | None = None
) -> Any:
    async def run() -> Any:
        with anyio.fail_after(10), acting_as(principal, correlation_id):
            async with Client(SERVERS["/mcp"]) as client:
                return await client.call_tool(tool, arguments)

    with ThreadPoolExecutor(1) as pool:  # anyio.run on the main thread would unset its event loop
        return pool.submit(anyio.run, run).result()


def test_a_create_counts_the_same_metric_over_rest_and_mcp_and_replays_count_nothing(
    client, account, monkeypatch
):
    counted: list[tuple[str, float]] = []
    monkeypatch.setattr(observability, "count", lambda name, value=1: counted.append((name, value)))
    h = account.headers("todos:rw")
    for _ in range(2):
        assert client.post(
            "/api/todos", json={"title": "rest"}, headers={**h, "Idempotency-Key": "r1"}
        ).is_success
    for _ in range(2):
        result = _call(_principal(account), "todo_create", {"title": "mcp", "idempotency_key": "m1"})
        assert not result.is_error, result.content
    assert counted == [("TodoCreated", 1), ("TodoCreated", 1)]


def test_what_a_tool_call_logs_carries_the_correlation_and_account_ids(client, account, monkeypatch):
    from agentmate.todos import service

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr(service, "get", broken)
    # Lines rendered by the Powertools formatter as they are emitted (the keys bound during the call included).
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(observability.logger.registered_formatter)
    logging.getLogger(observability.logger.name).addHandler(handler)
    try:
        result = _call(_principal(account), "todo_get", {"id": str(uuid.uuid4())}, correlation_id="corr-123")
    finally:
        logging.getLogger(observability.logger.name).removeHandler(handler)
    assert result.is_error and result.content[0].text == UNEXPECTED_TEXT
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    logged = [line for line in lines if line["message"] == "unhandled error in MCP tool"]
    assert len(logged) == 1
    assert logged[0]["correlation_id"] == "corr-123" and logged[0]["account_id"] == account.account_id
    assert logged[0]["tool"] == "todo_get" and "secret-internal-detail" in logged[0]["exception"]
