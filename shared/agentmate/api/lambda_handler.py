"""Wraps a route group's app once per execution environment in Mangum plus the powertools decorators."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.logging import correlation_paths
from fastapi import FastAPI
from mangum import Mangum
from mangum.adapter import DEFAULT_TEXT_MIME_TYPES

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


def make_handler(app: FastAPI) -> Handler:
    asgi = Mangum(
        app,
        lifespan="off",
        api_gateway_base_path="/",
        text_mime_types=[*DEFAULT_TEXT_MIME_TYPES, "application/problem+json"],
    )

    @logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP, clear_state=True)
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if not _pinned:  # on first invocation, not import: an importer may be inside a running loop
            _keep_worker_threads()
        try:
            return asgi(event, context)
        finally:
            flush_metrics()

    return handler
