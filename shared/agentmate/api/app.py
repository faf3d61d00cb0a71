"""Builds a route group's FastAPI app: the same function is used by each Lambda and by the local runtime."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentmate.api.deps import (
    credential_slot,
    hold_refusal,
    known_refusal,
    release_lease,
    request_credential,
)
from agentmate.api.errors import PROBLEM, Problem, domain_problem, install_error_handlers
from agentmate.api.openapi_limits import authenticated_operations, state_limit_responses
from agentmate.api.openapi_rules import state_text_rules
from agentmate.api.routing import ContractMiddleware

API_TITLE = "Agentmate"
API_VERSION = "1.0.0"


class NoStoreMiddleware:
    """Tenant content must never sit in a shared cache: every /api response is private, no-store."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"cache-control" for k, _ in headers):
                    headers.append((b"cache-control", b"private, no-store"))
                message["headers"] = headers
                if message.get("status") == 429:
                    await hold_refusal(headers)
            await send(message)

        credential = request_credential(scope)
        refused = known_refusal(credential)
        if refused is not None:
            await domain_problem(refused)(scope, receive, send_with_header)
            return
        async with credential_slot(credential):
            try:
                await self.app(scope, receive, send_with_header)
            finally:
                await release_lease(scope)  # an expensive request's concurrency slot (api/deps.py took it)


def _operation_id(route: APIRoute) -> str:
    tag = route.tags[0] if route.tags else "default"
    return f"{tag}-{route.name}"


def _problem_components(schemas: dict[str, Any]) -> None:
    """The Problem schemas that PROBLEM_RESPONSES refers to, as FastAPI writes a response model's schema (its
    OpenAPI model drops None values, e.g. ``default: null``)."""
    if "Problem" in schemas:
        return
    from pydantic.json_schema import models_json_schema

    _, definitions = models_json_schema(
        [(Problem, "serialization")], ref_template="#/components/schemas/{model}"
    )
    schemas.update(_without_none(definitions["$defs"]))


def _without_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _is_oauth_error(media: dict[str, Any]) -> bool:
    return str(media.get("schema", {}).get("$ref", "")).endswith("/OAuthError")


def _problem_openapi(app: FastAPI) -> None:
    """Document errors as they are served: problem+json, 400 for validation (never FastAPI's 422)."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = original()
        _problem_components(schema.setdefault("components", {}).setdefault("schemas", {}))
        for path_item in schema.get("paths", {}).values():
            for operation in path_item.values():
                responses = operation.get("responses", {})
                responses.pop("422", None)
                for code, response in responses.items():
                    content = response.get("content", {})
                    if code.startswith(("4", "5")) and "application/json" in content:
                        if _is_oauth_error(content["application/json"]):
                            continue  # OAuth's own error shape (RFC 6749 §5.2), served as application/json
                        content[PROBLEM] = content.pop("application/json")
        for name in ("HTTPValidationError", "ValidationError"):
            schema.get("components", {}).get("schemas", {}).pop(name, None)
        state_text_rules(schema)
        state_limit_responses(schema, authenticated_operations(app))
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def build_app(routers: Iterable[APIRouter], *, title: str = API_TITLE) -> FastAPI:
    app = FastAPI(
        title=title,
        version=API_VERSION,
        # The combined document of every group is served by the system router at /api/openapi.json.
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=_operation_id,
        redirect_slashes=False,  # ContractMiddleware serves /x/ as /x instead of a 307 with no body
    )
    for router in routers:
        app.include_router(router)
    install_error_handlers(app)
    _problem_openapi(app)
    app.add_middleware(ContractMiddleware, fastapi_app=app)
    app.add_middleware(NoStoreMiddleware)
    return app
