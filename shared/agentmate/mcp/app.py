"""The MCP ASGI app: one stateless Streamable HTTP server per module plus the aggregate ``/mcp``.

Request path, in order:
1. Route: ``/mcp`` or ``/mcp/<module>``, with or without a trailing slash (no redirect); anything else
   under ``/mcp`` is a 404 problem listing the endpoints.
2. Authenticate the API key (401 problem+json before any MCP processing, ``initialize`` included) and bind
   the ``Principal`` for the tools (``agentmate.mcp.context``).
3. Session id: a presented ``Mcp-Session-Id`` must be one this platform issued for this key (else 404, as
   for an expired session); an ``initialize`` answer carries a fresh one (``agentmate.mcp.session``).
4. The SDK's session manager (stateless, JSON responses, Host/Origin allowlist from settings).

The servers' session managers run in the app's lifespan. Under uvicorn the app receives the ASGI lifespan
itself; mounted in the local runtime's dispatcher it is entered through ``local_lifespan``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from agentmate.api.errors import send_problem
from agentmate.core.db import get_database
from agentmate.core.errors import Unauthorized
from agentmate.core.observability import logger
from agentmate.core.settings import get_settings
from agentmate.mcp import registry, session
from agentmate.mcp.auth import authenticate, header
from agentmate.mcp.context import acting_as
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.server import AgentmateMCP, build_tools

PREFIX = "/mcp"
SESSION_HEADER = b"mcp-session-id"

AGGREGATE_INSTRUCTIONS = (
    "Agentmate: every tool the API key's scopes allow, across modules (todos, notes, reports, bookmarks, "
    "expenses, memory, skills). Tools outside the key's scopes are not listed. Each module also has its "
    "own endpoint, /mcp/<module>, with just its tools."
)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def transport_security() -> TransportSecuritySettings:
    settings = get_settings()
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=_split(settings.mcp_allowed_hosts),
        allowed_origins=_split(settings.mcp_allowed_origins),
    )


def build_servers(toolsets: dict[str, ToolSet]) -> dict[str, AgentmateMCP]:
    """``/mcp`` (every tool, listed by scope) and ``/mcp/<module>`` (the module's tools), sharing tool objects."""
    specs = [spec for ts in toolsets.values() for spec in ts.specs]
    built = build_tools(specs)
    servers = {PREFIX: AgentmateMCP("agentmate", specs, instructions=AGGREGATE_INSTRUCTIONS, list_by_scope=True,
                                    built=built)}
    for name, toolset in toolsets.items():
        servers[f"{PREFIX}/{name}"] = AgentmateMCP(
            f"agentmate-{name}", toolset.specs, instructions=toolset.instructions, list_by_scope=False, built=built,
        )
    return servers


async def _respond(send: Send, status: int, body: dict[str, Any], *, content_type: bytes,
                   headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", content_type), (b"content-length", str(len(payload)).encode()),
        (b"cache-control", b"private, no-store"), *headers,
    ]})
    await send({"type": "http.response.body", "body": payload})


_problem = send_problem  # the one problem+json renderer (agentmate.api.errors)


async def _buffer_body(receive: Receive, limit: int) -> tuple[bytes | None, Receive]:
    """Read the whole request body (``None`` past ``limit``) and a ``receive`` that replays it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None, receive
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


def _is_initialize(body: bytes) -> bool:
    if b'"initialize"' not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False
    return isinstance(message, dict) and message.get("method") == "initialize"


class McpApp:
    """ASGI app serving ``/mcp`` and ``/mcp/<module>`` (see the module docstring)."""

    def __init__(self, servers: dict[str, AgentmateMCP]) -> None:
        self.servers = servers
        self.endpoints = sorted(servers)
        self._managers: dict[str, StreamableHTTPSessionManager] = {}
        self._running = False

    @asynccontextmanager
    async def local_lifespan(self) -> AsyncIterator[None]:
        """Run every server's session manager (fresh ones per run, so the app can be started again)."""
        if self._running:
            raise RuntimeError("this MCP app is already running; build another with build_mcp_app()")
        self._running = True
        try:
            security = transport_security()
            async with AsyncExitStack() as stack:
                managers: dict[str, StreamableHTTPSessionManager] = {}
                for path, server in self.servers.items():
                    server.streamable_http_app(streamable_http_path="/", stateless_http=True,
                                               json_response=True, transport_security=security)
                    managers[path] = server.session_manager
                    await stack.enter_async_context(server.session_manager.run())
                await anyio.to_thread.run_sync(_warm_database)
                self._managers = managers
                try:
                    yield
                finally:
                    self._managers = {}
        finally:
            self._running = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path = scope["path"].rstrip("/") or "/"
        if path not in self.servers:
            await _problem(send, 404, "Not Found", f"no such MCP endpoint: {scope['path']}",
                           endpoints=self.endpoints, hint="MCP endpoints: " + ", ".join(self.endpoints))
            return
        manager = self._managers.get(path)
        if manager is None:
            await _problem(send, 503, "Service Unavailable", "the MCP server is starting or stopping")
            return
        try:
            caller = await authenticate(scope)
        except Unauthorized as exc:
            await _problem(send, 401, "Unauthorized", exc.detail,
                           headers=[(b"www-authenticate", b'ApiKey header="X-Api-Key"')])
            return
        if scope["method"] == "GET":
            # Stateless: no server-initiated stream to offer (the MCP spec's answer is 405).
            await _problem(send, 405, "Method Not Allowed", "this MCP server sends no server-initiated "
                           "messages: POST JSON-RPC requests", headers=[(b"allow", b"POST, DELETE")])
            return

        secret = get_settings().resolved_jwt_secret()
        presented = header(scope, SESSION_HEADER)
        if presented is not None and not session.verify(secret, presented, caller.key_id):
            await _respond(send, 404, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Session not found: initialize again (a session id only works with "
                                           "the API key it was issued to)"}}, content_type=b"application/json")
            return
        new_session: str | None = None
        if scope["method"] == "POST" and presented is None:
            body, receive = await _buffer_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
            if body is None:
                await _problem(send, 413, "Content Too Large",
                               f"request body exceeds {DEFAULT_MAX_REQUEST_BODY_SIZE} bytes")
                return
            if _is_initialize(body):
                new_session = session.mint(secret, caller.key_id)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {k.lower() for k, _ in headers}
                if b"cache-control" not in names:
                    headers.append((b"cache-control", b"private, no-store"))
                if new_session is not None and message["status"] == 200 and SESSION_HEADER not in names:
                    headers.append((SESSION_HEADER, new_session.encode()))
                message = {**message, "headers": headers}
            await send(message)

        with acting_as(caller):
            await manager.handle_request(scope, receive, send_with_headers)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup
        started = False
        try:
            async with self.local_lifespan():
                started = True
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown
        except Exception as exc:
            if started:
                raise
            logger.exception("MCP app failed to start")
            await send({"type": "lifespan.startup.failed", "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


def _warm_database() -> None:
    """Open the connection pool at start-up so the first tool call does not pay for it (non-fatal)."""
    try:
        get_database().pool  # noqa: B018 - opens the pool
    except Exception:
        logger.warning("database not reachable at MCP start-up; connecting on first use", exc_info=True)


def build_mcp_app(modules: dict[str, str] | None = None) -> McpApp:
    """A fresh app (own servers and session managers) over ``registry.MODULES`` or ``modules``."""
    return McpApp(build_servers(registry.load(modules)))
