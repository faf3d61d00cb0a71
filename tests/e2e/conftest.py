"""End-to-end fixtures: the local runtime (REST + MCP on one port) served by uvicorn on 127.0.0.1 in a
background thread, and MCP client helpers built on the official SDK client."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@contextmanager
def serve(app: Any, name: str) -> Iterator[str]:
    """Serve ``app`` with uvicorn on 127.0.0.1:<free port> in a background thread; yields the base URL."""
    import uvicorn

    server = uvicorn.Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", ws="none", lifespan="on", access_log=False
        )
    )
    thread = threading.Thread(target=server.run, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:  # start-up only: uvicorn has no readiness event
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """The local runtime (every REST route group) with a fresh MCP app at ``/mcp``, as one uvicorn server."""
    from agentmate.mcp.app import build_mcp_app
    from infra.local_app import build_local_app

    with serve(build_local_app(extra={"/mcp": build_mcp_app()}), "uvicorn-e2e") as url:
        yield url


@pytest.fixture(scope="session")
def replica_url() -> Iterator[str]:
    """A second, independent MCP app (as the container runs it: ``functions.mcp.app`` alone)."""
    from agentmate.mcp.app import build_mcp_app

    with serve(build_mcp_app(), "uvicorn-replica") as url:
        yield url


@asynccontextmanager
async def mcp_session(url: str, headers: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """An initialized ``mcp.ClientSession`` over the SDK's Streamable HTTP client transport."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers or {}, timeout=15) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
