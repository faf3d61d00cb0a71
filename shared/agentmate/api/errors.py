"""RFC 9457 problem+json for every error, with ``errors[]`` listing every invalid field at once."""

from __future__ import annotations

import re
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentmate.core.errors import DomainError, FieldError
from agentmate.core.observability import logger

PROBLEM = "application/problem+json"
NOT_FOUND_HINT = ("GET /api/openapi.json lists every endpoint, GET /api/schema the allowed values, "
                  "GET /api/health the MCP endpoints")
_CHALLENGE = 'Bearer realm="agentmate", ApiKey realm="agentmate" header="X-Api-Key"'
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")

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
    }.items()
}


def problem(status: int, title: str, detail: str, errors: list[dict[str, Any]] | None = None,
            extra: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    body["errors"] = errors or []
    if extra:
        body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


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
        elif kind == "missing":
            message = "field required"
        elif kind == "json_invalid":
            field, message = "body", "request body is not valid JSON"
        elif message.startswith("Value error, "):
            message = message[len("Value error, "):]
        out.append(FieldError(field, message, allowed))
    return out


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(_: Request, exc: DomainError) -> JSONResponse:
        headers = {"WWW-Authenticate": _CHALLENGE} if exc.status == 401 else None
        return problem(exc.status, exc.title, exc.detail, [e.as_dict() for e in exc.errors], exc.extra, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = pydantic_errors(list(exc.errors()))
        detail = "invalid fields: " + ", ".join(dict.fromkeys(e.field for e in errors))
        return problem(400, "Validation failed", detail, [e.as_dict() for e in errors])

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return problem(404, "Not Found", f"no such endpoint: {request.method} {request.url.path}",
                           extra={"hint": NOT_FOUND_HINT})
        if exc.status_code == 405:
            return problem(405, "Method Not Allowed", f"{request.method} is not allowed on {request.url.path}",
                           headers=dict(exc.headers or {}))
        return problem(exc.status_code, "Error", str(exc.detail))

    @app.exception_handler(psycopg.DataError)
    async def _data(_: Request, exc: psycopg.DataError) -> JSONResponse:
        # Input Postgres cannot store or compare (e.g. U+0000 in text, an out-of-range number) is the
        # client's to fix; schemas reject the known cases by field, this is the safety net.
        logger.info("rejected input the database cannot hold", extra={"error_class": type(exc).__name__})
        return problem(400, "Validation failed", "a value cannot be stored: text must not contain NUL (U+0000) "
                       "characters and numbers must be in range")

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error")
        return problem(500, "Internal Server Error", "internal server error")
