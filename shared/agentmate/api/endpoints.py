"""Where a route's plain ``def`` endpoint runs: every router of the API is a ``Router``, whose routes take this
decision for each request.

FastAPI runs a sync endpoint on a worker thread and then, because the endpoint was sync, validates its return value
on a second worker thread. A Lambda execution environment serves one request at a time, so there the two hops buy
nothing and were most of what the todos handler paid over a minimal FastAPI handler (bench/warm_invoke.py
--framework). The Lambda handler marks its invocation (``one_request_at_a_time``) and a sync endpoint then runs
right on the event loop. Anywhere else (uvicorn, the tests' client) it still runs on a worker thread, so a slow
query never holds up other requests; only its response is validated on the loop, which is CPU work in pydantic's
core either way.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from fastapi import APIRouter
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

T = TypeVar("T")

_ONE_AT_A_TIME: ContextVar[bool] = ContextVar("agentmate_one_request_at_a_time", default=False)


@contextmanager
def one_request_at_a_time() -> Iterator[None]:
    """Marks the requests served inside the block as the process's only ones (a Lambda invocation): Mangum runs the
    app in a task that copies this context."""
    token = _ONE_AT_A_TIME.set(True)
    try:
        yield
    finally:
        _ONE_AT_A_TIME.reset(token)


def serving_one_request() -> bool:
    return _ONE_AT_A_TIME.get()


async def call_blocking(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """``fn`` on this thread while the process serves one request at a time, else on a worker thread."""
    if _ONE_AT_A_TIME.get():
        return fn(*args, **kwargs)
    return await run_in_threadpool(fn, *args, **kwargs)


def awaitable_endpoint(endpoint: Callable[..., Any]) -> Callable[..., Any]:
    """A plain ``def`` endpoint as a coroutine that runs it through ``call_blocking``; FastAPI still reads the
    parameters from the original (``inspect.signature`` follows ``__wrapped__``). Anything else is returned as is."""
    if (
        not inspect.isfunction(endpoint)
        or inspect.iscoroutinefunction(endpoint)
        or inspect.isgeneratorfunction(endpoint)
        or inspect.isasyncgenfunction(endpoint)
    ):
        return endpoint

    @functools.wraps(endpoint)
    async def run(**values: Any) -> Any:
        return await call_blocking(endpoint, **values)

    return run


class Route(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, awaitable_endpoint(endpoint), **kwargs)


class Router(APIRouter):
    """``APIRouter`` whose routes are ``Route``s."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("route_class", Route)
        super().__init__(**kwargs)
