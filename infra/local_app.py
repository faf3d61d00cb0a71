"""One ASGI app for the local runtime: dispatches each request to the route group's app by path prefix."""

from __future__ import annotations

import importlib

from starlette.types import ASGIApp, Receive, Scope, Send

from agentmate.api.errors import endpoint_not_found, send_problem
from functions.routes import API_FALLBACK, ROUTE_GROUPS


class Dispatcher:
    def __init__(self, table: dict[str, ASGIApp]) -> None:
        # Longest prefix first so /api/memory/working can override /api/memory if ever needed.
        self.table = sorted(table.items(), key=lambda kv: len(kv[0]), reverse=True)
        self.lifespan_apps = list(dict.fromkeys(table.values()))

    def match(self, path: str) -> ASGIApp | None:
        for prefix, app in self.table:
            if path == prefix or path.startswith(prefix + "/"):
                return app
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self.match(scope.get("path", ""))
        if app is not None:
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        status, title, detail, extra = endpoint_not_found(scope.get("method", "GET"), scope.get("path", ""))
        await send_problem(send, status, title, detail, **extra)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        # Route-group apps run with lifespan off (as under Mangum); apps that need one (MCP) expose
        # ``startup``/``shutdown`` coroutines via the optional ``local_lifespan`` attribute.
        import contextlib

        stack = contextlib.AsyncExitStack()
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                for app in self.lifespan_apps:
                    ctx = getattr(app, "local_lifespan", None)
                    if ctx is not None:
                        await stack.enter_async_context(ctx())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await stack.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


# Long-lived (container) apps served on the same port as REST locally: module → path prefix.
CONTAINER_APPS: dict[str, str] = {"functions.mcp.app": "/mcp"}


def build_local_app(extra: dict[str, ASGIApp] | None = None, *, job_poller: bool = False) -> Dispatcher:
    """``job_poller``: also run the job queue's in-process poller (SQS's part locally) while the server runs."""
    table: dict[str, ASGIApp] = {}
    for module_name, prefixes in ROUTE_GROUPS.items():
        app = importlib.import_module(module_name).app
        for prefix in prefixes:
            table[prefix] = app
    for module_name, prefix in CONTAINER_APPS.items():
        if prefix not in (extra or {}):
            table[prefix] = importlib.import_module(module_name).app  # runs via its ``local_lifespan``
    table.update(extra or {})
    table.setdefault("/api", importlib.import_module(API_FALLBACK).app)  # longest prefix wins: a fallback
    dispatcher = Dispatcher(table)
    if job_poller:
        importlib.import_module(
            "functions.compile_worker.runners"
        )  # the same job kinds as the worker function
        from agentmate.core.db import get_database
        from agentmate.jobs.poller import Poller

        dispatcher.lifespan_apps.append(Poller(get_database()))  # entered via local_lifespan
    return dispatcher
