"""RFC 9457 problem+json for every error, with ``errors[]`` listing every invalid field at once.

The one place that knows HTTP for domain errors: ``STATUS`` maps each ``ErrorKind`` to a status and title, and
``problem_body`` is the one problem+json shape (REST routes, the local runtime's 404 and the MCP endpoint's
HTTP-level errors all render through it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.utils import get_flat_params
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentmate.core.errors import DomainError, ErrorKind, JwtRequired, RateLimited, ServiceUnavailable
from agentmate.core.observability import logger
from agentmate.core.validation import models_in, pydantic_errors

PROBLEM = "application/problem+json"
NOT_FOUND_HINT = (
    "GET /api/openapi.json lists every endpoint, GET /api/schema the allowed values, "
    "GET /api/health the MCP endpoints"
)
_APIKEY_CHALLENGE = 'ApiKey realm="agentmate" header="X-Api-Key"'
_CHALLENGE = f'Bearer realm="agentmate", {_APIKEY_CHALLENGE}'
_JWT_CHALLENGE = 'Bearer realm="agentmate"'
# The ``request.state`` attribute where the auth dependencies (``api.deps``) leave the OAuth ``Bearer`` challenge of
# a refusal while OAuth is on; the DomainError handler sends it.
CHALLENGE_STATE = "www_authenticate"

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


class ProblemField(BaseModel):
    field: str = Field(description="The invalid field: a body path (items[0].title), query or path parameter")
    message: str = Field(description="What is wrong and, where known, the fix")
    allowed: list[Any] | None = Field(
        default=None,
        description="The allowed values, range or (for an unknown field) the field names the operation takes",
    )
    likely_meant: str | None = Field(
        default=None,
        description="For an unknown field: the allowed field it most likely stands for (the message says "
        '"did you mean …?" or the model\'s hint); absent when nothing is close',
    )


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[ProblemField] = []


# Documented on every route as a schema reference rather than ``"model": Problem``: FastAPI builds a pydantic
# TypeAdapter per route for each modelled response, which was a third of a function's route-building cost at
# import (issue 9, docs/benchmarks.md); api.app adds the Problem schemas to the OpenAPI components instead.
PROBLEM_SCHEMA_REF = {"$ref": "#/components/schemas/Problem"}
PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    code: {"description": desc, "content": {PROBLEM: {"schema": PROBLEM_SCHEMA_REF}}}
    for code, desc in {
        400: "Invalid input; errors[] names every bad field",
        401: "Missing or invalid credentials",
        403: "Insufficient scope",
        404: "Not found",
        409: "Conflict",
        413: "Request body over the endpoint's limit (x-max-request-bytes on the operation, else 1 MiB)",
    }.items()
}


def problem_body(
    status: int,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The one problem+json shape. ``extra`` adds members; it can never replace the core ones (a domain's own
    ``status`` field once overwrote the HTTP status)."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "errors": errors or [],
    }
    for name, value in (extra or {}).items():
        body.setdefault(name, value)
    return body


def problem(
    status: int,
    title: str,
    detail: str,
    errors: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(
        problem_body(status, title, detail, errors, extra),
        status_code=status,
        media_type=PROBLEM,
        headers=headers,
    )


def status_of(exc: DomainError) -> int:
    return STATUS[exc.kind][0]


def error_headers(exc: DomainError, bearer_challenge: str | None = None) -> dict[str, str] | None:
    """``bearer_challenge``: the OAuth ``Bearer`` challenge the auth dependencies left for this request (OAuth on):
    on a 401 it replaces the bare ``Bearer`` one, and the ``ApiKey`` challenge still tells a key's client how to
    send it; on an ``insufficient_scope`` 403 it is the only challenge (RFC 6750 §3.1)."""
    if exc.kind is ErrorKind.UNAUTHORIZED:
        if isinstance(exc, JwtRequired):
            return {"WWW-Authenticate": _JWT_CHALLENGE}
        if bearer_challenge:
            return {"WWW-Authenticate": f"{bearer_challenge}, {_APIKEY_CHALLENGE}"}
        return {"WWW-Authenticate": _CHALLENGE}
    if (
        exc.kind is ErrorKind.FORBIDDEN
        and bearer_challenge
        and exc.extra.get("error") == "insufficient_scope"
    ):
        return {"WWW-Authenticate": bearer_challenge}
    if isinstance(exc, RateLimited | ServiceUnavailable) and exc.retry_after is not None:
        return {"Retry-After": str(exc.retry_after)}
    return None


def domain_problem(exc: DomainError, bearer_challenge: str | None = None) -> JSONResponse:
    status, title = STATUS[exc.kind]
    return problem(
        status,
        title,
        exc.detail,
        [e.as_dict() for e in exc.errors],
        exc.extra,
        error_headers(exc, bearer_challenge),
    )


async def send_problem(
    send: Send,
    status: int,
    title: str,
    detail: str,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: Iterable[tuple[bytes, bytes]] = (),
    **extra: Any,
) -> None:
    """problem+json straight onto an ASGI ``send`` (for the plain-ASGI dispatchers outside FastAPI)."""
    payload = json.dumps(problem_body(status, title, detail, errors, extra)).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", PROBLEM.encode()),
                (b"content-length", str(len(payload)).encode()),
                (b"cache-control", b"private, no-store"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


def endpoint_not_found(method: str, path: str) -> tuple[int, str, str, dict[str, Any]]:
    return 404, "Not Found", f"no such endpoint: {method} {path}", {"hint": NOT_FOUND_HINT}


def _body_model(request: Request) -> type[BaseModel] | None:
    """The model a route validates its body into (for the model-owned field hints)."""
    body_field = getattr(request.scope.get("route"), "body_field", None)
    annotation = getattr(getattr(body_field, "field_info", None), "annotation", None)
    models = models_in(annotation) if annotation is not None else []
    return models[0] if models else None


def _param_annotations(request: Request) -> dict[str, Any]:
    """The route's query, path and header parameters by name (for the allowed values of a missing enum)."""
    dependant = getattr(request.scope.get("route"), "dependant", None)
    if dependant is None:
        return {}
    return {f.alias: f.field_info.annotation for f in get_flat_params(dependant)}


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
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        return domain_problem(exc, getattr(request.state, CHALLENGE_STATE, None))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = pydantic_errors(list(exc.errors()), _body_model(request), _param_annotations(request))
        detail = "invalid fields: " + ", ".join(dict.fromkeys(e.field for e in errors))
        return problem(400, "Validation failed", detail, [e.as_dict() for e in errors])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            status, title, detail, extra = endpoint_not_found(request.method, request.url.path)
            return problem(status, title, detail, extra=extra)
        if exc.status_code == 405:
            return problem(
                405,
                "Method Not Allowed",
                f"{request.method} is not allowed on {request.url.path}",
                headers=dict(exc.headers or {}),
            )
        return problem(exc.status_code, "Error", str(exc.detail))

    # Innermost of the middlewares (added first), so NoStore and the rest still see the 500.
    app.add_middleware(CatchAllMiddleware)
