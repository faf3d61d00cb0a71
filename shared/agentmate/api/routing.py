"""HTTP rules applied before FastAPI routes a request, so they hold on every path of a route group.

1. **Trailing slash**: ``/api/todos/`` is served as ``/api/todos`` (no 307 with an empty body; docs/decisions.md).
   A trailing slash that leaves a path parameter empty is a 404 problem, not a 405 of the shorter path:
   ``DELETE /api/knowledge/sources/`` is ``DELETE /api/knowledge/sources/{source_id}`` with no id (issue 23).
2. **Methods**: a path whose template exists but not for the method answers 405 problem+json with an ``Allow``
   listing every method of that template (Starlette lists only the first route it tried). A static path such as
   ``/api/todos/search`` is never taken for ``/api/todos/{todo_id}``: ``PATCH /api/todos/search`` is a 405, not
   a 400 about a malformed UUID.
3. **Body size**: a body over the route's limit (``max_body(...)`` on the route, else the
   ``max_request_body_bytes`` setting) answers 413 problem+json before anything parses it: a declared
   ``Content-Length`` is checked first, and a streamed body is counted as it arrives.
4. **No U+0000**: a query parameter or JSON body string holding U+0000 is a 400 naming each such field.
5. **No unknown query parameters**: a query parameter the operation does not declare is a 400 naming it, with the
   parameters it takes (and the likeliest one meant), as unknown body fields are: ``?session=`` on a list that
   filters by ``session_id`` would otherwise be ignored and answer every row.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, cast
from urllib.parse import parse_qsl

from fastapi import FastAPI, params
from fastapi.dependencies.utils import get_flat_params
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentmate.api.errors import endpoint_not_found, send_problem
from agentmate.core.records import NUL_MESSAGE
from agentmate.core.settings import get_http_settings
from agentmate.core.validation import likely_meant, suggestions

BODY_LIMIT_KEY = "x-max-request-bytes"


# Routes whose bodies carry a 1 MiB text (notes, reports, bookmarks, skill versions): JSON escaping makes the
# body larger than the text (\uXXXX for every non-ASCII character from ensure_ascii clients: up to 3x).
CONTENT_BODY_LIMIT = 4 * 1024 * 1024
# Lambda's request payload limit: the most any route can take (working-memory batches of up to 5 MiB).
LAMBDA_BODY_LIMIT = 6_000_000


def max_body(limit: int) -> dict[str, Any]:
    """``openapi_extra`` for a route that accepts bodies up to ``limit`` bytes instead of the default, e.g.
    ``@router.post("/snapshots", openapi_extra=max_body(6_000_000))``; the OpenAPI states the limit."""
    return {BODY_LIMIT_KEY: limit}


@dataclass(frozen=True)
class Template:
    path: str
    regex: re.Pattern[str]
    static: bool
    methods: frozenset[str]
    limits: dict[str, int]  # method -> body limit override
    queries: dict[str, frozenset[str]]  # method -> the query parameters it declares

    @property
    def lax(self) -> re.Pattern[str]:
        """The template with empty path parameters allowed (``/api/x/`` for ``/api/x/{id}``)."""
        return _regex(self.path, "[^/]*")


class _Route(Protocol):
    """What the templates read of a route: an ``APIRoute``, or FastAPI's ``RouteContext`` wrapping one."""

    @property
    def path_format(self) -> str: ...

    @property
    def methods(self) -> Collection[str] | None: ...


def _routes(app: FastAPI) -> Iterable[_Route]:
    from fastapi import routing

    contexts = (
        routing.iter_route_contexts(app.routes) if hasattr(routing, "iter_route_contexts") else app.routes
    )
    for route in contexts:
        original = getattr(route, "original_route", route)
        if isinstance(original, APIRoute):
            yield cast(_Route, route)


def _regex(path: str, parameter: str = "[^/]+") -> re.Pattern[str]:
    segments = (parameter if seg.startswith("{") else re.escape(seg) for seg in path.split("/"))
    return re.compile("^" + "/".join(segments) + "$")


def templates(app: FastAPI) -> list[Template]:
    """Every path template of ``app`` with all its methods, static templates first."""
    methods: dict[str, set[str]] = {}
    limits: dict[str, dict[str, int]] = {}
    queries: dict[str, dict[str, frozenset[str]]] = {}
    for route in _routes(app):
        path = route.path_format
        original = cast(APIRoute, getattr(route, "original_route", route))  # _routes yields APIRoutes only
        extra = original.openapi_extra or {}
        declared = frozenset(
            f.alias for f in get_flat_params(original.dependant) if isinstance(f.field_info, params.Query)
        )
        for method in route.methods or ():
            methods.setdefault(path, set()).add(method)
            queries.setdefault(path, {})[method] = declared
            if BODY_LIMIT_KEY in extra:
                limits.setdefault(path, {})[method] = int(extra[BODY_LIMIT_KEY])
    out = [
        Template(
            path=path,
            regex=_regex(path),
            static="{" not in path,
            methods=frozenset(m),
            limits=limits.get(path, {}),
            queries=queries[path],
        )
        for path, m in methods.items()
    ]
    return sorted(out, key=lambda t: not t.static)  # stable: route order otherwise


class _TooLarge(Exception):
    pass


class ContractMiddleware:
    """The rules of the module docstring, around one route group's FastAPI app."""

    def __init__(self, app: ASGIApp, fastapi_app: FastAPI) -> None:
        self.app = app
        self.fastapi_app = fastapi_app
        self._templates: list[Template] | None = None

    @property
    def table(self) -> list[Template]:
        if self._templates is None:  # built on first request: routes may be added after the middleware
            self._templates = templates(self.fastapi_app)
        return self._templates

    def match(self, path: str) -> Template | None:
        for template in self.table:
            if template.regex.match(path):
                return template
        return None

    def empty_parameter(self, path: str, method: str) -> bool:
        """Whether ``path`` is a template of ``method`` with its last path parameters empty."""
        return any(method in t.methods and t.lax.match(path) is not None for t in self.table if not t.static)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        sent = path
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/") or "/"
            scope = {**scope, "path": path, "raw_path": path.encode()}
        template = self.match(path)
        method: str = scope["method"]
        if template is None:
            await self.app(scope, receive, send)
            return
        if method not in template.methods:
            if sent != path and self.empty_parameter(sent, method):
                status, title, detail, extra = endpoint_not_found(method, sent)
                await send_problem(send, status, title, detail + " (an empty path parameter)", **extra)
                return
            allow = ", ".join(sorted(template.methods))
            await send_problem(
                send,
                405,
                "Method Not Allowed",
                f"{method} is not allowed on {path}; allowed: {allow}",
                headers=[(b"allow", allow.encode())],
                allowed=sorted(template.methods),
            )
            return
        unknown = _unknown_query(scope.get("query_string", b""), template.queries.get(method, frozenset()))
        if unknown:
            await send_problem(
                send,
                400,
                "Validation failed",
                "invalid fields: " + ", ".join(e["field"] for e in unknown),
                errors=unknown,
            )
            return
        limit = template.limits.get(method, get_http_settings().max_request_body_bytes)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _too_large(send, limit)
            return
        try:
            body, receive = await _buffered(receive, limit)
        except _TooLarge:
            await _too_large(send, limit)
            return
        nul = _nul_fields(scope.get("query_string", b""), body)
        if nul:
            await send_problem(
                send,
                400,
                "Validation failed",
                "invalid fields: " + ", ".join(nul),
                errors=[{"field": f, "message": NUL_MESSAGE} for f in nul],
            )
            return
        await self.app(scope, receive, send)


def _unknown_query(query: bytes, declared: frozenset[str]) -> list[dict[str, Any]]:
    """One error per query parameter the operation does not declare, naming the one likely meant."""
    if not query:
        return []
    names = dict.fromkeys(name for name, _ in parse_qsl(query.decode("latin-1"), keep_blank_values=True))
    errors: list[dict[str, Any]] = []
    for name in names:
        if name in declared:
            continue
        meant = likely_meant(name, declared)
        if meant:
            message = f"unknown query parameter (use {meant})"
        elif declared:
            message = "unknown query parameter"
        else:
            message = "unknown query parameter: this operation takes none"
        # Named as the NUL rule names fields: U+0000 escaped (the Problem schema's strings never hold it)
        error: dict[str, Any] = {"field": name.replace("\x00", "\\u0000"), "message": message}
        if declared:
            error["allowed"] = sorted(declared)
        if meant:
            error["likely_meant"] = suggestions(name, declared)[0]
        errors.append(error)
    return errors


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _too_large(send: Send, limit: int) -> None:
    await send_problem(
        send,
        413,
        "Content Too Large",
        f"request body exceeds this endpoint's limit of {limit} bytes",
        limit=limit,
    )


def _nul_fields(query: bytes, body: bytes) -> list[str]:
    """Query parameters and JSON body fields whose text holds U+0000 (which Postgres cannot store): refused
    here, once for every route, as the OpenAPI's no-NUL patterns say."""
    found: list[str] = []
    if b"%00" in query:
        found += [
            name
            for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True)
            if "\x00" in value or "\x00" in name
        ]
    if b"\\u0000" in body:
        try:
            found += _nul_paths(json.loads(body), "")
        except ValueError:
            pass  # not JSON: FastAPI reports it
    return list(dict.fromkeys(found))


def _nul_paths(value: Any, at: str) -> list[str]:
    if isinstance(value, str):
        return [at or "body"] if "\x00" in value else []
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nul_paths(v, f"{at}[{i}]")]
    if isinstance(value, dict):
        out: list[str] = []
        for k, v in value.items():
            name = f"{at}.{k}" if at else str(k)
            if "\x00" in str(k):
                out.append(name.replace("\x00", "\\u0000"))
            out += _nul_paths(v, name)
        return out
    return []


async def _buffered(receive: Receive, limit: int) -> tuple[bytes, Receive]:
    """Read the whole body (raising ``_TooLarge`` past ``limit``) and return a ``receive`` that replays it."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            trailing: Message | None = message
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body", False):
            trailing = None
            break
    body = b"".join(chunks)
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if trailing is not None:
        pending.append(trailing)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return body, replay
