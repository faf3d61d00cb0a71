"""Postgres stopped (fast shutdown) and started again under MCP traffic, driven by the official MCP client over
Streamable HTTP: a tool call during the outage comes back promptly as a clear error with retry advice (never a
hang, never an internal detail), and after the start the same session and a new one work, with every
acknowledged write stored exactly once (counted by its idempotency key)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import psycopg
import pytest

from infra import localpg
from tests.conftest import make_account
from tests.e2e.conftest import mcp_session, serve

pytestmark = pytest.mark.anyio

MAX_ROUNDS = 50  # a bound on retries after the restart, not a timing threshold
HANG_GUARD_S = 60  # far above the 1 s connect budget: only a hang trips it
LEAKS = ("psycopg", "Traceback", "127.0.0.1", "OperationalError", "connection refused", "5432")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _create(session: Any, key: str) -> Any:
    with anyio.fail_after(HANG_GUARD_S):
        return await session.call_tool("todo_create", {"title": key, "idempotency_key": key})


def _stored_titles(port: int) -> list[str]:
    with psycopg.connect(localpg.url(port, "agentmate")) as conn:
        return [r[0] for r in conn.execute("SELECT title FROM todos ORDER BY title").fetchall()]


async def test_tool_calls_across_a_postgres_restart_fail_clearly_then_heal_and_every_ack_is_stored(
    client, own_cluster
):
    from agentmate.mcp.app import build_mcp_app

    # Given an account on a cluster of the test's own and an MCP server (the container's app) in front of it
    account = make_account(client)
    headers = account.headers("todos:rw")
    acknowledged: set[str] = set()
    with serve(build_mcp_app(), "uvicorn-mcp-fault") as base:
        url = f"{base}/mcp/todos"
        async with mcp_session(url, headers) as session:
            for i in range(3):
                key = f"before-{i}-{uuid.uuid4().hex[:8]}"
                result = await _create(session, key)
                assert not result.is_error, _text(result)
                acknowledged.add(key)

            # When Postgres stops (fast shutdown) while the session is open
            own_cluster.stop()
            refused: list[str] = []
            for i in range(3):
                key = f"during-{i}-{uuid.uuid4().hex[:8]}"
                # Then each call ends (the hang guard never trips) as a tool error that says to retry
                failure = await _call_during_outage(session, key)
                assert "database is unavailable" in failure and "retry" in failure, failure
                assert not any(leak in failure for leak in LEAKS), failure
                refused.append(key)

            # When it starts again, the same session works: the refused writes retried with the same keys, and
            # new ones
            own_cluster.start()
            pending = refused + [f"after-{i}-{uuid.uuid4().hex[:8]}" for i in range(3)]
            for _ in range(MAX_ROUNDS):
                if not pending:
                    break
                key = pending.pop(0)
                result = await _create(session, key)
                if result.is_error:
                    assert "database is unavailable" in _text(result), _text(result)
                    pending.append(key)
                else:
                    acknowledged.add(key)
            assert pending == []

            # And a retry of an acknowledged write answers the original todo, not a second one
            again = await _create(session, sorted(acknowledged)[0])
            assert not again.is_error and json.loads(_text(again))["title"] == sorted(acknowledged)[0]

        # And a new session works too
        async with mcp_session(url, headers) as fresh:
            key = f"fresh-{uuid.uuid4().hex[:8]}"
            result = await _create(fresh, key)
            assert not result.is_error, _text(result)
            acknowledged.add(key)

    # Then every acknowledged write is stored exactly once, and nothing else is
    assert _stored_titles(own_cluster.port) == sorted(acknowledged)


async def _call_during_outage(session: Any, key: str) -> str:
    """The words a client sees for a call during the outage: a tool error's text, or the JSON-RPC error the
    transport surfaces (an HTTP 503 before the tool runs, e.g. while the key is authenticated)."""
    from mcp.shared.exceptions import MCPError

    try:
        result = await _create(session, key)
    except MCPError as exc:
        # an HTTP 503 carries its status and when to retry, as REST's Retry-After
        assert exc.error.data["status"] == 503 and exc.error.data["retry_after"] >= 1, exc.error
        return str(exc.error.message)
    assert result.is_error, _text(result)
    return _text(result)
