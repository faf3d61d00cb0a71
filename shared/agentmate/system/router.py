"""Public discovery endpoints: health (with the MCP endpoints) and the schema of allowed values."""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Response
from pydantic import BaseModel

from agentmate.api.app import API_VERSION
from agentmate.core.scopes import DESCRIPTIONS, SCOPES

router = APIRouter(prefix="/api", tags=["system"])

MCP_MODULES = ("todos", "notes", "reports", "bookmarks", "expenses", "memory", "skills", "context")

# Write models an agent fills in, by name → "module:Class". Modules not present yet are skipped.
SCHEMA_MODELS: dict[str, str] = {
    "todo": "agentmate.todos.schemas:TodoCreate",
    "todo_update": "agentmate.todos.schemas:TodoUpdate",
    "note": "agentmate.notes.schemas:NoteCreate",
    "note_update": "agentmate.notes.schemas:NoteUpdate",
    "report": "agentmate.reports.schemas:ReportCreate",
    "report_update": "agentmate.reports.schemas:ReportUpdate",
    "bookmark": "agentmate.bookmarks.schemas:BookmarkCreate",
    "bookmark_update": "agentmate.bookmarks.schemas:BookmarkUpdate",
    "expense": "agentmate.expenses.schemas:ExpenseCreate",
    "expense_update": "agentmate.expenses.schemas:ExpenseUpdate",
    "memory_event": "agentmate.memory.schemas:EventCreate",
    "memory_entry": "agentmate.memory.schemas:EntryCreate",
    "memory_search": "agentmate.memory.schemas:SearchRequest",
    "memory_feedback": "agentmate.memory.schemas:FeedbackCreate",
    "memory_checkpoint": "agentmate.memory.schemas:CheckpointCreate",
    "working_session": "agentmate.working.schemas:SessionCreate",
    "working_session_update": "agentmate.working.schemas:SessionUpdate",
    "working_item": "agentmate.working.schemas:ItemIn",
    "skill_log": "agentmate.skills.schemas:SkillLogCreate",
    "skill_version": "agentmate.skills.schemas:SkillVersionCreate",
    "context_pack": "agentmate.context.schemas:PackRequest",
}


class Health(BaseModel):
    status: str
    service: str
    version: str
    schema_url: str
    openapi: str
    mcp_endpoints: list[str]


@router.get("/health", response_model=Health)
def health() -> Health:
    """Liveness plus where to look next. Always JSON: HTML here means a wrong base URL."""
    return Health(
        status="ok", service="agentmate", version=API_VERSION, schema_url="/api/schema",
        openapi="/api/openapi.json", mcp_endpoints=["/mcp", *(f"/mcp/{m}" for m in MCP_MODULES)],
    )


def _describe(model: type[BaseModel]) -> dict[str, Any]:
    js = model.model_json_schema()
    defs = js.get("$defs", {})
    fields: dict[str, Any] = {}
    for name, prop in js.get("properties", {}).items():
        info: dict[str, Any] = {}
        options = prop.get("anyOf", [prop])
        for opt in options:
            if "$ref" in opt:
                opt = defs.get(opt["$ref"].split("/")[-1], {})
            for key in ("type", "enum", "maxLength", "minLength", "maximum", "minimum", "exclusiveMinimum", "format"):
                if key in opt and key not in info:
                    info[key] = opt[key]
            if opt.get("type") == "array" and "enum" in opt.get("items", {}):
                info["items_enum"] = opt["items"]["enum"]
        if "default" in prop:
            info["default"] = prop["default"]
        if prop.get("description"):
            info["description"] = prop["description"]
        fields[name] = info
    return {"required": js.get("required", []), "fields": fields, "unknown_fields": "rejected"}


@lru_cache(maxsize=1)
def _schema() -> dict[str, Any]:
    models: dict[str, Any] = {}
    for name, target in SCHEMA_MODELS.items():
        module_name, cls_name = target.split(":")
        try:
            model = getattr(importlib.import_module(module_name), cls_name)
        except (ImportError, AttributeError):
            continue
        models[name] = _describe(model)
    return {
        "scopes": [{"scope": s, "description": DESCRIPTIONS[s]} for s in SCOPES],
        "models": models,
        "pagination": {"limit": {"minimum": 1, "maximum": 100, "default": 20}, "offset": {"minimum": 0}},
        "errors": "application/problem+json with errors[] of {field, message, allowed}",
    }


@lru_cache(maxsize=1)
def _openapi_document() -> bytes:
    return (Path(__file__).resolve().parents[1] / "api" / "openapi.json").read_bytes()


@router.get("/openapi.json", response_class=Response, responses={200: {"content": {"application/json": {}}}})
def openapi_document() -> Response:
    """The OpenAPI document of the whole REST API (every route group), as committed in docs/openapi.json."""
    return Response(_openapi_document(), media_type="application/json")


@router.get("/schema")
def schema() -> dict[str, Any]:
    """Allowed values, required fields and scopes, so an agent can fill every field right the first time."""
    return _schema()
