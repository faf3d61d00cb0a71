"""RFC 9457 problem+json for every error, with ``errors[]`` listing every invalid field at once.

The one place that knows HTTP for domain errors: ``STATUS`` maps each ``ErrorKind`` to a status and title, and
``problem_body`` is the one problem+json shape (REST routes, the local runtime's 404 and the MCP endpoint's
HTTP-level errors all render through it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentmate.core.errors import DomainError, ErrorKind, FieldError, RateLimited
from agentmate.core.observability import logger

PROBLEM = "application/problem+json"
NOT_FOUND_HINT = ("GET /api/openapi.json lists every endpoint, GET /api/schema the allowed values, "
                  "GET /api/health the MCP endpoints")
_CHALLENGE = 'Bearer realm="agentmate", ApiKey realm="agentmate" header="X-Api-Key"'
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")

# The single kind → (status, title) map.
STATUS: dict[ErrorKind, tuple[int, str]] = {
    ErrorKind.INVALID: (400, "Validation failed"),
    ErrorKind.UNAUTHORIZED: (401, "Unauthorized"),
    ErrorKind.FORBIDDEN: (403, "Forbidden"),
    ErrorKind.NOT_FOUND: (404, "Not Found"),
    ErrorKind.CONFLICT: (409, "Conflict"),
    ErrorKind.TOO_LARGE: (413, "Content Too Large"),
    ErrorKind.RATE_LIMITED: (429, "Too Many Requests"),
    ErrorKind.NOT_IMPLEMENTED: (501, "Not Implemented"),
    ErrorKind.UNAVAILABLE: (503, "Service Unavailable"),
}

_HINTS = {
    "content": "event content belongs inside payload",
    "kind": "evidence uses source_type/source_id",
    "ref": "evidence uses source_type/source_id",
}


class ProblemField(BaseModel):
    field: str
    message: str
    allowed: list[Any] | None = None


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[ProblemField] = []


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"model": Problem, "description": desc}
    for code, desc in {
        400: "Invalid input; errors[] names every bad field",
        401: "Missing or invalid credentials",
        403: "Insufficient scope",
        404: "Not found",
        409: "Conflict",
        413: "Request body over the endpoint's limit (x-max-request-bytes on the operation, else 1 MiB)",
    }.items()
}


def problem_body(status: int, title: str, detail: str, errors: list[dict[str, Any]] | None = None,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one problem+json shape."""
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status, "detail": detail,
                            "errors": errors or []}
    if extra:
        body.update(extra)
    return body


def problem(status: int, title: str, detail: str, errors: list[dict[str, Any]] | None = None,
            extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(problem_body(status, title, detail, errors, extra), status_code=status,
                        media_type=PROBLEM, headers=headers)


def status_of(exc: DomainError) -> int:
    return STATUS[exc.kind][0]


def error_headers(exc: DomainError) -> dict[str, str] | None:
    if exc.kind is ErrorKind.UNAUTHORIZED:
        return {"WWW-Authenticate": _CHALLENGE}
    if isinstance(exc, RateLimited):
        return {"Retry-After": str(exc.retry_after)}
    return None


def domain_problem(exc: DomainError) -> JSONResponse:
    status, title = STATUS[exc.kind]
    return problem(status, title, exc.detail, [e.as_dict() for e in exc.errors], exc.extra, error_headers(exc))


async def send_problem(send: Send, status: int, title: str, detail: str, *,
                       headers: Iterable[tuple[bytes, bytes]] = (), **extra: Any) -> None:
    """problem+json straight onto an ASGI ``send`` (for the plain-ASGI dispatchers outside FastAPI)."""
    payload = json.dumps(problem_body(status, title, detail, extra=extra)).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", PROBLEM.encode()), (b"content-length", str(len(payload)).encode()),
        (b"cache-control", b"private, no-store"), *headers,
    ]})
    await send({"type": "http.response.body", "body": payload})


def endpoint_not_found(method: str, path: str) -> tuple[int, str, str, dict[str, Any]]:
    return 404, "Not Found", f"no such endpoint: {method} {path}", {"hint": NOT_FOUND_HINT}


def _field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    name = ""
    for p in parts:
        name += f"[{p}]" if p.isdigit() else (f".{p}" if name else p)
    return name or "body"


def pydantic_errors(raw: list[dict[str, Any]]) -> list[FieldError]:
    out: list[FieldError] = []
    for err in raw:
        loc = tuple(err.get("loc", ()))
        field = _field_name(loc)
        kind = err.get("type", "")
        ctx = err.get("ctx") or {}
        allowed: list[Any] | None = None
        message = str(err.get("msg", "invalid value"))
        if kind in ("literal_error", "enum"):
            allowed = _QUOTED.findall(str(ctx.get("expected", ""))) or None
            message = "must be one of the allowed values"
        elif kind == "extra_forbidden":
            message = "unknown field"
            last = str(loc[-1]) if loc else ""
            if last in _HINTS:
                message += f" ({_HINTS[last]})"
        elif kind in ("empty_patch", "not_nullable"):  # agentmate.core.patch: updatable fields / enum values
            allowed = list(ctx.get("allowed", [])) or None
        elif kind == "missing":
            message = "field required"
        elif kind == "json_invalid":
            field, message = "body", "request body is not valid JSON"
        elif message.startswith("Value error, "):
            message = message[len("Value error, "):]
        out.append(FieldError(field, message, allowed))
    return out


class CatchAllMiddleware:
    """Anything unexpected becomes a logged 500 problem+json *answered* here. Starlette's ServerErrorMiddleware
    would render it too but then re-raise, and the server closes the keep-alive connection under the client."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            logger.exception("unhandled error")
            if started:
                raise  # the response is half sent: nothing valid can follow on this connection
            await send_problem(send, 500, "Internal Server Error", "internal server error")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        return domain_problem(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = pydantic_errors(list(exc.errors()))
        detail = "invalid fields: " + ", ".join(dict.fromkeys(e.field for e in errors))
        return problem(400, "Validation failed", detail, [e.as_dict() for e in errors])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            status, title, detail, extra = endpoint_not_found(request.method, request.url.path)
            return problem(status, title, detail, extra=extra)
        if exc.status_code == 405:
            return problem(405, "Method Not Allowed", f"{request.method} is not allowed on {request.url.path}",
                           headers=dict(exc.headers or {}))
        return problem(exc.status_code, "Error", str(exc.detail))

    # Innermost of the middlewares (added first), so NoStore and the rest still see the 500.
    app.add_middleware(CatchAllMiddleware)
