"""The MCP ASGI app: one stateless Streamable HTTP server per module plus the aggregate ``/mcp``.

Request path, in order:
1. Route: ``/mcp`` or ``/mcp/<module>``, with or without a trailing slash (no redirect); anything else
   under ``/mcp`` is a 404 listing the endpoints.
2. Authenticate the API key or OAuth access token (401 before any MCP processing, ``initialize`` included;
   ``agentmate.mcp.auth``) and bind the ``Principal`` for the tools (``agentmate.mcp.context``). Every refusal at this level (unknown endpoint, 401,
   413, 404 session) is a JSON-RPC error object as ``application/json`` (``rpc_error``): MCP clients show
   those to their user, while a problem+json body reaches them as a generic "server returned an error".
3. Session id: a presented ``Mcp-Session-Id`` must be one this platform issued for this key, or for this OAuth
   user and client (else 404, as for an expired session); an ``initialize`` answer carries a fresh one (``agentmate.mcp.session``).
4. Step-up: a ``tools/call`` by an OAuth token that lacks the tool's scopes is an HTTP 403 with
   ``WWW-Authenticate: Bearer error="insufficient_scope", scope="<the tool's scopes>"`` (MCP authorization,
   2026-07-28: only the scopes this operation needs), so the client can authorize again for them. An API key
   cannot step up: its refusal stays a tool error (``agentmate.mcp.server``).
5. The SDK's session manager (stateless, JSON responses, Host/Origin allowlist from settings).

The servers' session managers run in the app's lifespan. Under uvicorn the app receives the ASGI lifespan
itself; mounted in the local runtime's dispatcher it is entered through ``local_lifespan``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

import anyio.to_thread
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Message, Receive, Scope, Send

from agentmate.auth.oauth.challenge import INSUFFICIENT_SCOPE, bearer_challenge
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.db import get_database
from agentmate.core.errors import ServiceUnavailable, Unauthorized
from agentmate.core.mcp_modules import aggregate_instructions
from agentmate.core.observability import logger
from agentmate.core.principal import Principal
from agentmate.core.settings import HttpSettings, get_http_settings
from agentmate.mcp import registry, session
from agentmate.mcp.auth import HOW, OAUTH_HOW, authenticate, challenges, header, resource_of
from agentmate.mcp.context import acting_as
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.server import AgentmateMCP, build_tools

PREFIX = "/mcp"
SESSION_HEADER = b"mcp-session-id"

# Derived from the one table of MCP modules, so it names every module.
AGGREGATE_INSTRUCTIONS = aggregate_instructions()


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def transport_security(settings: HttpSettings) -> TransportSecuritySettings:
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=_split(settings.mcp_allowed_hosts),
        allowed_origins=_split(settings.mcp_allowed_origins),
    )


def build_servers(toolsets: dict[str, ToolSet]) -> dict[str, AgentmateMCP]:
    """``/mcp`` (every tool, listed by scope) and ``/mcp/<module>`` (the module's tools), sharing tool objects."""
    specs = [spec for ts in toolsets.values() for spec in ts.specs]
    built = build_tools(specs)
    servers = {
        PREFIX: AgentmateMCP(
            "agentmate", specs, instructions=AGGREGATE_INSTRUCTIONS, list_by_scope=True, built=built
        )
    }
    for name, toolset in toolsets.items():
        servers[f"{PREFIX}/{name}"] = AgentmateMCP(
            f"agentmate-{name}",
            toolset.specs,
            instructions=toolset.instructions,
            list_by_scope=False,
            built=built,
        )
    return servers


async def _respond(
    send: Send,
    status: int,
    body: dict[str, Any],
    *,
    content_type: bytes,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(payload)).encode()),
                (b"cache-control", b"private, no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


# JSON-RPC codes for refusals at the HTTP level (the implementation-defined server-error range).
UNAUTHORIZED = -32001
FORBIDDEN = -32043
NOT_FOUND = -32004
TOO_LARGE = -32013
UNAVAILABLE = -32003
INVALID_REQUEST = -32600


async def rpc_error(
    send: Send,
    status: int,
    code: int,
    message: str,
    *,
    request_id: Any = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
    **data: Any,
) -> None:
    """The one renderer of HTTP-level MCP refusals: a JSON-RPC error object as ``application/json``, which MCP
    clients (the official SDK, the Inspector) show their user, unlike a problem+json body."""
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": message, "data": {"status": status, **data}},
    }
    await _respond(send, status, body, content_type=b"application/json", headers=headers)


def _request_id(body: bytes | None) -> Any:
    """The id of a single JSON-RPC request (null for a batch, a notification or an unreadable body)."""
    if not body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    request_id = message.get("id") if isinstance(message, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


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


async def _read_body(
    scope: Scope, receive: Receive, send: Send, limit: int
) -> tuple[bytes | None, Receive] | None:
    """Body limit: a POST's whole body (and a ``receive`` that replays it) or None after a 413; other methods
    have no body to read."""
    if scope["method"] != "POST":
        return None, receive
    body, receive = await _buffer_body(receive, limit)
    if body is None:
        await rpc_error(send, 413, TOO_LARGE, f"request body exceeds {limit} bytes", limit=limit)
        return None
    return body, receive


async def _authenticated(
    scope: Scope, send: Send, request_id: Any, settings: AuthSettings
) -> Principal | None:
    """Authenticate the API key or OAuth token, before any MCP processing (``initialize`` included); None after
    a 401, or a 503 with ``Retry-After`` while the database is unreachable."""
    try:
        return await authenticate(scope, settings)
    except ServiceUnavailable as exc:  # the database is down: the client is told to retry, as REST's 503
        retry = exc.retry_after or 1
        await rpc_error(
            send,
            503,
            UNAVAILABLE,
            exc.detail,
            request_id=request_id,
            retry_after=retry,
            headers=[(b"retry-after", str(retry).encode())],
        )
        return None
    except Unauthorized as exc:
        oauth = bool(settings.oauth_issuer_url)
        await rpc_error(
            send,
            401,
            UNAUTHORIZED,
            f"{exc.detail} — {OAUTH_HOW if oauth else HOW}",
            request_id=request_id,
            reason=exc.detail,
            header="X-Api-Key",
            scheme="ApiKey",
            headers=challenges(scope, settings),
        )
        return None


def _tool_called(body: bytes | None) -> str | None:
    """The tool a single ``tools/call`` request names (None for anything else)."""
    if not body or b"tools/call" not in body:
        return None
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "tools/call":
        return None
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    return name if isinstance(name, str) else None


async def _step_up(
    scope: Scope,
    send: Send,
    server: AgentmateMCP,
    body: bytes | None,
    caller: Principal,
    request_id: Any,
    settings: AuthSettings,
) -> bool:
    """True after answering 403 ``insufficient_scope`` to an OAuth caller's ``tools/call`` of a tool whose scopes
    its grant lacks; the challenge names the scopes that tool needs."""
    resource = resource_of(scope, settings)
    if caller.via != "oauth" or resource is None:
        return False
    spec = server.specs.get(_tool_called(body) or "")
    if spec is None or all(caller.can(s) for s in spec.scopes):
        return False
    needs = " and ".join(spec.scopes)
    challenge = bearer_challenge(
        settings.oauth_issuer_url,
        resource,
        spec.scopes,
        error=INSUFFICIENT_SCOPE,
        description=f"{spec.name} requires {needs}",
    )
    await rpc_error(
        send,
        403,
        FORBIDDEN,
        f"insufficient_scope: {spec.name} requires {needs} (this token has: {', '.join(caller.scopes)}); "
        "authorize again asking for these scopes",
        request_id=request_id,
        error=INSUFFICIENT_SCOPE,
        required_scopes=list(spec.scopes),
        headers=[(b"www-authenticate", challenge.encode())],
    )
    return True


async def _refuse_stream(send: Send) -> None:
    # Stateless: no server-initiated stream to offer (the MCP spec's answer is 405).
    await rpc_error(
        send,
        405,
        INVALID_REQUEST,
        "this MCP server sends no server-initiated messages: POST JSON-RPC requests",
        headers=[(b"allow", b"POST, DELETE")],
    )


@dataclass(frozen=True, slots=True)
class _Session:
    new_session: str | None
    """The id to issue with the answer (an ``initialize`` presenting none), else None."""


def session_owner(caller: Principal) -> UUID | None:
    """What a session id is bound to: the API key, or for an OAuth caller its user and client. Not the grant: a
    step-up or a re-authorization (MCP authorization) gives the same user and client a new grant mid-session,
    and the official client does not initialize again after a 404, so a grant-bound session would end there."""
    if caller.via != "oauth":
        return caller.key_id
    return uuid5(
        NAMESPACE_URL, f"agentmate-oauth-session:{caller.account_id}:{caller.user_id}:{caller.client_id}"
    )


async def _session(
    scope: Scope, send: Send, body: bytes | None, key_id: UUID | None, request_id: Any, secret: str
) -> _Session | None:
    """Session id: a presented one must be one this platform issued for this key or OAuth user and client (None
    after a 404, as for an expired session); an ``initialize`` without one gets a fresh id."""
    presented = header(scope, SESSION_HEADER)
    if presented is not None and not session.verify(secret, presented, key_id):
        await rpc_error(
            send,
            404,
            INVALID_REQUEST,
            "Session not found: initialize again (a session id only works with the API key, or the OAuth user "
            "and client, it was issued to)",
            request_id=request_id,
        )
        return None
    if body is not None and presented is None and _is_initialize(body):
        return _Session(session.mint(secret, key_id))
    return _Session(None)


def _with_headers(send: Send, new_session: str | None) -> Send:
    """Headers: ``cache-control: private, no-store`` on every answer, and a new session id on a 200."""

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

    return send_with_headers


class McpApp:
    """ASGI app serving ``/mcp`` and ``/mcp/<module>`` (see the module docstring)."""

    def __init__(
        self,
        servers: dict[str, AgentmateMCP],
        *,
        http: HttpSettings | None = None,
        auth: AuthSettings | None = None,
    ) -> None:
        self.servers = servers
        # Settings given, or the execution environment's (read on first use, as the tools read theirs).
        self._http = http
        self._auth = auth
        self.endpoints = sorted(servers)
        self._managers: dict[str, StreamableHTTPSessionManager] = {}
        self._running = False

    @property
    def http(self) -> HttpSettings:
        return self._http or get_http_settings()

    @property
    def auth(self) -> AuthSettings:
        return self._auth or get_auth_settings()

    @asynccontextmanager
    async def local_lifespan(self) -> AsyncIterator[None]:
        """Run every server's session manager (fresh ones per run, so the app can be started again)."""
        if self._running:
            raise RuntimeError("this MCP app is already running; build another with build_mcp_app()")
        self._running = True
        try:
            security = transport_security(self.http)
            async with AsyncExitStack() as stack:
                managers: dict[str, StreamableHTTPSessionManager] = {}
                for path, server in self.servers.items():
                    server.streamable_http_app(
                        streamable_http_path="/",
                        stateless_http=True,
                        json_response=True,
                        transport_security=security,
                    )
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
        # Each step answers the refusal itself and returns None; the steps run in the module docstring's order.
        manager = await self._manager(scope, send)
        if manager is None:
            return
        read = await _read_body(scope, receive, send, self.http.max_request_body_bytes)
        if read is None:
            return
        body, receive = read
        request_id = _request_id(body)
        caller = await _authenticated(scope, send, request_id, self.auth)
        if caller is None:
            return
        if scope["method"] == "GET":
            await _refuse_stream(send)
            return
        secret = self.auth.resolved_jwt_secret()
        checked = await _session(scope, send, body, session_owner(caller), request_id, secret)
        if checked is None:
            return
        server = self.servers[scope["path"].rstrip("/") or "/"]
        if await _step_up(scope, send, server, body, caller, request_id, self.auth):
            return
        # The gateway's request id when there is one, as REST's correlation id is API Gateway's.
        with acting_as(caller, header(scope, b"x-request-id") or header(scope, b"x-amzn-trace-id")):
            await manager.handle_request(scope, receive, _with_headers(send, checked.new_session))

    async def _manager(self, scope: Scope, send: Send) -> StreamableHTTPSessionManager | None:
        """Route: the endpoint's session manager (404 for an unknown endpoint, 503 while none runs)."""
        path = scope["path"].rstrip("/") or "/"
        if path not in self.servers:
            await rpc_error(
                send,
                404,
                NOT_FOUND,
                f"no such MCP endpoint: {scope['path']}; MCP endpoints: " + ", ".join(self.endpoints),
                endpoints=self.endpoints,
            )
            return None
        manager = self._managers.get(path)
        if manager is None:
            await rpc_error(send, 503, UNAVAILABLE, "the MCP server is starting or stopping: retry shortly")
        return manager

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
