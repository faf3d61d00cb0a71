"""Wraps a route group's app once per execution environment in Mangum plus the powertools decorators, and makes
it SnapStart-ready: the runtime hooks are handed to Lambda (``core.snapstart.install``) and the app is warmed
before the snapshot by one request that needs no database."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from mangum import Mangum
from mangum.adapter import DEFAULT_TEXT_MIME_TYPES
from mangum.types import LambdaCognitoIdentity, LambdaMobileClientContext

from agentmate.api.endpoints import one_request_at_a_time
from agentmate.core import snapstart
from agentmate.core.observability import flush_metrics, logger

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


_pinned: list[asyncio.Task[bool]] = []


def _keep_worker_threads() -> None:
    """Keep anyio's worker threads alive across invocations.

    Mangum runs each invocation as a new ``run_until_complete`` task, and anyio ties its worker threads to that
    "root" task, so every invocation started a fresh OS thread for FastAPI's sync dependencies and endpoints
    (about half of warm latency, bench/warm_invoke.py). Pinning the root to one never-ending task on the same
    loop lets the threads be reused. Uses an anyio internal, so it degrades to the default if that moves.
    """
    try:
        from anyio._backends._asyncio import _root_task
    except ImportError:  # pragma: no cover - anyio internals changed; default behaviour is still correct
        return
    loop = asyncio.get_event_loop()

    async def pin() -> None:
        task = loop.create_task(asyncio.Event().wait())
        _pinned.append(task)
        _root_task.set(task)

    loop.run_until_complete(pin())
    # The pinned workers are non-daemon threads: release them before the interpreter joins its threads at exit
    # (atexit runs too late for that), so scripts and tests still exit.
    threading._register_atexit(_release_worker_threads)  # type: ignore[attr-defined]


def _release_worker_threads() -> None:
    for task in _pinned:
        loop = task.get_loop()
        if task.done() or loop.is_closed() or loop.is_running():
            continue
        task.cancel()
        loop.run_until_complete(asyncio.gather(task, return_exceptions=True))


WARM_UP_PATH = "/api/_snapstart/warm-up"  # served by no route: answered 404 by the app, without the database


class _WarmUpContext:
    """A Lambda context (the attributes Mangum's type names); there is no invocation before the snapshot."""

    function_name = "snapstart-warm-up"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:snapstart-warm-up"
    memory_limit_in_mb = 1024
    aws_request_id = "snapstart-warm-up"
    log_group_name = "snapstart-warm-up"
    log_stream_name = "snapstart-warm-up"
    identity: LambdaCognitoIdentity | None = None
    client_context: LambdaMobileClientContext | None = None

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def warm_up_event() -> dict[str, Any]:
    """An HTTP API (payload 2.0) GET of ``WARM_UP_PATH``, without credentials."""
    return {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": WARM_UP_PATH,
        "rawQueryString": "",
        "headers": {"host": "snapstart.invalid", "x-forwarded-proto": "https", "x-forwarded-port": "443"},
        "requestContext": {
            "http": {"method": "GET", "path": WARM_UP_PATH, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1"},
            "routeKey": "$default",
            "stage": "$default",
            "requestId": "snapstart-warm-up",
        },
        "isBase64Encoded": False,
    }


def _request_id(event: dict[str, Any]) -> str | None:
    """API Gateway's request id, the correlation id: what ``correlation_paths.API_GATEWAY_HTTP``
    (``requestContext.requestId``) selects, read without a JMESPath evaluation per invocation."""
    request_context = event.get("requestContext")
    return request_context.get("requestId") if isinstance(request_context, dict) else None


def make_handler(app: FastAPI) -> Handler:
    asgi = Mangum(
        app,
        lifespan="off",
        api_gateway_base_path="/",
        text_mime_types=[*DEFAULT_TEXT_MIME_TYPES, "application/problem+json"],
    )

    @snapstart.warm_up
    def warm_up() -> None:
        """What the first request would do once per environment, done before the snapshot instead: the worker
        threads pinned, Mangum, the middleware and the problem renderer run once (deterministic, no database)."""
        if not _pinned:
            _keep_worker_threads()
        asgi(warm_up_event(), _WarmUpContext())

    snapstart.install()

    @logger.inject_lambda_context(clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        logger.set_correlation_id(_request_id(event))
        if not _pinned:  # on first invocation, not import: an importer may be inside a running loop
            _keep_worker_threads()
        try:
            with (
                one_request_at_a_time()
            ):  # sync endpoints run on the loop: no worker-thread hops (api/endpoints.py)
                return asgi(event, context)
        finally:
            flush_metrics()

    return handler
