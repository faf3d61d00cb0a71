"""Public discovery endpoints: health (with the MCP endpoints), the schema of allowed values, the OpenAPI document,
the agent integration guide, the docs it links (``/api/docs/<name>``) and an llms.txt index. The documents are assembled in ``service``, imported on first
use (the auth function serves these routes: its cold start does not load them)."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from agentmate.api.app import API_VERSION
from agentmate.api.endpoints import Router
from agentmate.system.schemas import Health

router = Router(prefix="/api", tags=["system"])

MARKDOWN = "text/markdown; charset=utf-8"


@router.get("/health", response_model=Health)
def health() -> Health:
    """Liveness plus where to look next. Always JSON: HTML here means a wrong base URL."""
    from agentmate.system import service

    return Health(
        status="ok",
        service="agentmate",
        version=API_VERSION,
        schema_url="/api/schema",
        openapi="/api/openapi.json",
        mcp_endpoints=service.mcp_endpoints(),
    )


@router.get("/openapi.json", response_class=Response, responses={200: {"content": {"application/json": {}}}})
def openapi_document() -> Response:
    """The OpenAPI document of the whole REST API (every route group), as committed in docs/openapi.json."""
    from agentmate.system import service

    return Response(service.openapi_document(), media_type="application/json")


@router.get("/schema")
def schema() -> dict[str, Any]:
    """Allowed values, required fields and scopes, so an agent can fill every field right the first time."""
    from agentmate.system import service

    return service.schema_document()


@router.get("/guide", response_class=Response, responses={200: {"content": {"text/markdown": {}}}})
def guide() -> Response:
    """The agent integration guide (Markdown): connect, conventions, the memory loop, crash recovery, MCP."""
    from agentmate.system import service

    return Response(service.guide(), media_type=MARKDOWN)


@router.get(
    "/docs/{name}",
    response_class=Response,
    responses={200: {"content": {"text/markdown": {}}}, 404: {"description": "Not a served document"}},
)
def served_doc(name: str) -> Response:
    """A doc the guide links (Markdown), e.g. ``context-pack.md``; ``/api/llms.txt`` lists every one."""
    from agentmate.system import service

    return Response(service.doc(name), media_type=MARKDOWN)


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@router.get("/llms.txt", response_class=Response, responses={200: {"content": {"text/plain": {}}}})
def llms_txt(request: Request) -> Response:
    """An llms.txt index (https://llmstxt.org): the guide, the OpenAPI document and the MCP endpoints."""
    from agentmate.system import service

    return Response(service.llms_txt(_base(request)), media_type="text/plain; charset=utf-8")
