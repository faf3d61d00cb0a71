"""End-to-end fixtures: the local runtime (REST + MCP on one port) served by uvicorn on 127.0.0.1 in a
background thread, and MCP client helpers built on the official SDK client."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    """``http://127.0.0.1:<free port>`` serving every REST route group and a fresh MCP app at ``/mcp``."""
    import uvicorn

    from agentmate.mcp.app import build_mcp_app
    from infra.local_app import build_local_app

    app = build_local_app(extra={"/mcp": build_mcp_app()})
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", ws="none",
                                           lifespan="on", access_log=False))
    thread = threading.Thread(target=server.run, name="uvicorn-e2e", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


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
