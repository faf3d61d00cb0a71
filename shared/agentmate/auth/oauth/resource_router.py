"""RFC 9728 protected-resource metadata: one document per resource this server protects, at the well-known path
inserted before the resource's path (``/.well-known/oauth-protected-resource/mcp/todos`` describes
``{issuer}/mcp/todos``). A client that met a 401 reads it to find the authorization server and the scopes to ask
for. 404 while OAuth is off. Light: built as plain JSON, no SDK import (the auth function's cold start)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends
from fastapi.responses import JSONResponse

from agentmate.api.endpoints import Router
from agentmate.auth import audience
from agentmate.auth.oauth.challenge import WELL_KNOWN
from agentmate.auth.settings import AuthSettings, get_auth_settings
from agentmate.core.errors import NotFound
from agentmate.core.mcp_modules import MCP_MODULES
from agentmate.core.scopes import SCOPES

GUIDE_PATH = "/api/guide"
# Public and the same for every caller; short, so that turning OAuth off or on is seen soon.
CACHE_CONTROL = "public, max-age=300"

_PROBLEM = {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "resource",
        "authorization_servers",
        "scopes_supported",
        "bearer_methods_supported",
        "resource_name",
        "resource_documentation",
    ],
    "properties": {
        "resource": {"type": "string", "format": "uri", "description": "The protected resource's identifier"},
        "authorization_servers": {
            "type": "array",
            "items": {"type": "string", "format": "uri"},
            "description": "The issuer of the authorization server (RFC 8414 metadata at its well-known path)",
        },
        "scopes_supported": {
            "type": "array",
            "items": {"type": "string", "enum": list(SCOPES)},
            "description": "The scopes a token for this resource may carry",
        },
        "bearer_methods_supported": {"type": "array", "items": {"type": "string", "enum": ["header"]}},
        "resource_name": {"type": "string"},
        "resource_documentation": {"type": "string", "format": "uri"},
    },
}
_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The resource's metadata (RFC 9728 §2)",
        "content": {"application/json": {"schema": _DOCUMENT_SCHEMA}},
    },
    404: {"description": "OAuth is off, or no such resource", "content": _PROBLEM},
}

router = Router(prefix=WELL_KNOWN, tags=["oauth"])


async def _settings() -> AuthSettings:
    return get_auth_settings()


SettingsDep = Annotated[AuthSettings, Depends(_settings)]


def _document(settings: AuthSettings, path: str, name: str) -> JSONResponse:
    issuer = audience.canonical(settings.oauth_issuer_url)
    if not issuer:
        raise NotFound(detail="OAuth is not enabled on this server: use an API key (X-Api-Key)")
    resource = f"{issuer}{path}"
    body = {
        "resource": resource,
        "authorization_servers": [issuer],
        "scopes_supported": list(audience.scopes_for_resource(issuer, resource)),
        "bearer_methods_supported": ["header"],
        "resource_name": name,
        "resource_documentation": f"{issuer}{GUIDE_PATH}",
    }
    return JSONResponse(body, headers={"Cache-Control": CACHE_CONTROL, "Access-Control-Allow-Origin": "*"})


@router.get("", response_class=JSONResponse, responses=_RESPONSES)
async def protected_resource_metadata(settings: SettingsDep) -> JSONResponse:
    """Protected-resource metadata for the whole server (resource = the issuer: the REST API and every MCP
    endpoint)."""
    return _document(settings, "", "Agentmate")


@router.get("/api", response_class=JSONResponse, responses=_RESPONSES)
async def api_resource_metadata(settings: SettingsDep) -> JSONResponse:
    """Protected-resource metadata for the REST API (``{issuer}/api``)."""
    return _document(settings, "/api", "Agentmate REST API")


@router.get("/mcp", response_class=JSONResponse, responses=_RESPONSES)
async def mcp_resource_metadata(settings: SettingsDep) -> JSONResponse:
    """Protected-resource metadata for the aggregate MCP endpoint and every module under it (``{issuer}/mcp``)."""
    return _document(settings, "/mcp", "Agentmate MCP (every module)")


@router.get("/mcp/{module}", response_class=JSONResponse, responses=_RESPONSES)
async def mcp_module_resource_metadata(module: str, settings: SettingsDep) -> JSONResponse:
    """Protected-resource metadata for one MCP module's endpoint (``{issuer}/mcp/<module>``)."""
    if module not in MCP_MODULES:
        raise NotFound(detail="no such MCP module; modules: " + ", ".join(MCP_MODULES))
    return _document(settings, f"/mcp/{module}", f"Agentmate MCP: {module}")
