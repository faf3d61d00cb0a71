"""The caller of the current MCP request.

The auth middleware resolves the API key once per HTTP request and binds the ``Principal`` here. Context
variables follow the request into the SDK's per-request tasks and into the worker threads sync tools run
in, so a tool reads its caller with ``principal()`` and never sees another request's. The names of the
arguments a call carried are bound the same way (``sent_arguments``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from agentmate.core.db import Database, get_database
from agentmate.core.errors import Unauthorized
from agentmate.core.observability import logger
from agentmate.core.principal import Principal

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.retrieval.service import Retrieval

_principal: ContextVar[Principal | None] = ContextVar("agentmate_mcp_principal", default=None)
_sent: ContextVar[frozenset[str] | None] = ContextVar("agentmate_mcp_sent_arguments", default=None)


def principal_or_none() -> Principal | None:
    return _principal.get()


def principal() -> Principal:
    """The authenticated caller; a request that reached a tool without one is refused."""
    found = _principal.get()
    if found is None:
        raise Unauthorized("missing credentials: send X-Api-Key, Authorization: Bearer ak_…, or ?api_key=")
    return found


def db() -> Database:
    return get_database()


def retrieval() -> Retrieval:
    """The execution environment's Retrieval (imported on first use, as over REST)."""
    from agentmate.retrieval.service import get_retrieval

    return get_retrieval()


@contextmanager
def acting_as(caller: Principal | None, correlation_id: str | None = None) -> Iterator[None]:
    """Bind ``caller`` for the duration of the block (the middleware; in-memory tests), and put the same log keys
    on every line logged meanwhile as REST does (``correlation_id``, ``account_id``). Powertools keeps these
    "thread-safe" keys in a context variable, so concurrent requests of the container never mix them."""
    token = _principal.set(caller)
    keys = {"correlation_id": correlation_id or uuid.uuid4().hex}
    if caller is not None:
        keys["account_id"] = str(caller.account_id)
    logger.thread_safe_append_keys(**keys)
    try:
        yield
    finally:
        logger.thread_safe_remove_keys(keys)
        _principal.reset(token)


def sent_arguments() -> frozenset[str] | None:
    """The argument names the client actually sent in this ``tools/call`` (``None`` outside one)."""
    return _sent.get()


@contextmanager
def arguments_sent(names: Iterable[str]) -> Iterator[None]:
    """Bind the names of the arguments a ``tools/call`` carried, so update tools can tell an explicit
    ``null`` from an omitted argument (both arrive as ``None`` in a parameter that defaults to ``None``)."""
    token = _sent.set(frozenset(names))
    try:
        yield
    finally:
        _sent.reset(token)
