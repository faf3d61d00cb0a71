"""The system domain's documents: the schema of allowed values, the committed OpenAPI document, the agent
integration guide, the docs it links (``/api/docs/<name>``) and the llms.txt index (``router`` serves them). The MCP endpoints they list come from the one
table of MCP modules (``agentmate.core.mcp_modules``)."""

from __future__ import annotations

import importlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentmate.core.errors import FieldError, NotFound
from agentmate.core.mcp_modules import MCP_MODULES, MODULE_TABLE
from agentmate.core.scopes import DESCRIPTIONS, SCOPES

# Write models an agent fills in, by name → "module:Class".
SCHEMA_MODELS: dict[str, str] = {
    "todo": "agentmate.todos.schemas:TodoCreate",
    "todo_update": "agentmate.todos.schemas:TodoUpdate",
    "note": "agentmate.notes.schemas:NoteCreate",
    "note_update": "agentmate.notes.schemas:NoteUpdate",
    "note_append": "agentmate.notes.schemas:NoteAppend",
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
    "memory_entry_retire": "agentmate.memory.schemas:EntryRetire",
    "memory_supersede": "agentmate.memory.schemas:SupersedeRequest",
    "working_session": "agentmate.working.schemas:SessionCreate",
    "working_session_update": "agentmate.working.schemas:SessionUpdate",
    "working_item": "agentmate.working.schemas:ItemIn",
    "working_items": "agentmate.working.schemas:ItemsAppend",
    "skill_log": "agentmate.skills.schemas:SkillLogCreate",
    "skill_version": "agentmate.skills.schemas:SkillVersionCreate",
    "skill_source": "agentmate.packages.schemas:SourceInput",
    "skill_snapshot": "agentmate.skills.registry.schemas:SkillSnapshotPush",
    "skill_sync": "agentmate.skills.registry.schemas:SkillSyncRequest",
    "skill_compile": "agentmate.skills.compile.schemas:SkillCompileRequest",
    "skill_index": "agentmate.skills.search.schemas:SkillIndexRequest",
    "skill_search": "agentmate.skills.search.schemas:SkillSearchRequest",
    "skill_quality_run": "agentmate.skills.quality.schemas:SkillQualityRunRequest",
    "context_pack": "agentmate.context.schemas:PackRequest",
    "knowledge_source": "agentmate.packages.schemas:SourceInput",
    "knowledge_manifest": "agentmate.knowledge.manifest:KnowledgeManifest",  # the KNOWLEDGE.yaml of a package
    "knowledge_discover": "agentmate.knowledge.discovery.schemas:DiscoverRequest",
    "knowledge_resolution": "agentmate.knowledge.discovery.schemas:ResolutionCreate",
    "knowledge_snapshot": "agentmate.knowledge.sources.schemas:KnowledgeSnapshotPush",
    "knowledge_sync": "agentmate.knowledge.sources.schemas:KnowledgeSyncRequest",
    "knowledge_index": "agentmate.knowledge.search.schemas:KnowledgeIndexRequest",
    "knowledge_search": "agentmate.knowledge.search.schemas:KnowledgeSearchRequest",
    "knowledge_compile": "agentmate.knowledge.wiki.schemas:CompileRequest",
    "knowledge_wiki_index": "agentmate.knowledge.wiki.schemas:WikiIndexRequest",
    "knowledge_wiki_search": "agentmate.knowledge.wiki.schemas:WikiSearchRequest",
    "knowledge_wiki_lint": "agentmate.knowledge.quality.schemas:LintRequest",
    "knowledge_signal": "agentmate.knowledge.quality.schemas:SignalReport",
    "knowledge_validation_sweep": "agentmate.knowledge.quality.schemas:SweepRequest",
}


def _fields(js: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for name, prop in js.get("properties", {}).items():
        info: dict[str, Any] = {}
        options = prop.get("anyOf", [prop])
        for opt in options:
            if "$ref" in opt:
                opt = defs.get(opt["$ref"].split("/")[-1], {})
            for key in (
                "type",
                "enum",
                "maxLength",
                "minLength",
                "maximum",
                "minimum",
                "exclusiveMinimum",
                "format",
            ):
                if key in opt and key not in info:
                    info[key] = opt[key]
            if opt.get("type") == "array":
                items = opt.get("items", {})
                if "enum" in items:
                    info["items_enum"] = items["enum"]
                if "maxItems" in opt:
                    info["maxItems"] = opt["maxItems"]
                if "$ref" in items:  # an array of objects (e.g. evidence): the shape of one item
                    item = defs.get(items["$ref"].split("/")[-1], {})
                    info["items"] = {
                        "required": item.get("required", []),
                        "fields": _fields(item, defs),
                        "unknown_fields": "rejected",
                    }
        if {"type": "null"} in options:  # on an update: null clears the field
            info["nullable"] = True
        if "default" in prop:
            info["default"] = prop["default"]
        if prop.get("description"):
            info["description"] = prop["description"]
        fields[name] = info
    return fields


def _describe(model: type[BaseModel]) -> dict[str, Any]:
    js = model.model_json_schema()
    return {
        "required": js.get("required", []),
        "fields": _fields(js, js.get("$defs", {})),
        "unknown_fields": "rejected",
    }


# Scopes a key may hold although nothing uses them yet (their domain is not built).
UNUSED_SCOPES: dict[str, str] = {}


def _scope_entry(scope: str) -> dict[str, str]:
    entry = {"scope": scope, "description": DESCRIPTIONS[scope]}
    if scope in UNUSED_SCOPES:
        entry["note"] = UNUSED_SCOPES[scope]
    return entry


@lru_cache(maxsize=1)
def schema_document() -> dict[str, Any]:
    models: dict[str, Any] = {}
    for name, target in SCHEMA_MODELS.items():
        module_name, cls_name = target.split(":")
        # A path that no longer resolves fails loudly (test_served_docs): a silent skip hid moved modules.
        models[name] = _describe(getattr(importlib.import_module(module_name), cls_name))
    return {
        "scopes": [_scope_entry(s) for s in SCOPES],
        "models": models,
        "pagination": {"limit": {"minimum": 1, "maximum": 100, "default": 20}, "offset": {"minimum": 0}},
        "errors": "application/problem+json with errors[] of {field, message, allowed}",
    }


@lru_cache(maxsize=1)
def openapi_document() -> bytes:
    return (Path(__file__).resolve().parents[1] / "api" / "openapi.json").read_bytes()


def mcp_endpoints() -> list[str]:
    """The aggregate endpoint, then one per module."""
    return ["/mcp", *(f"/mcp/{m}" for m in MCP_MODULES)]


GUIDE_FILE = Path(__file__).resolve().parent / "agent-integration.md"  # a copy of docs/agent-integration.md


@lru_cache(maxsize=1)
def guide() -> bytes:
    return GUIDE_FILE.read_bytes()


# The docs the guide links, served at /api/docs/<name> and listed in llms.txt: copies of docs/<name> shipped as
# package data (`make guide` refreshes them; test_served_docs keeps them equal and every link in them resolving).
# Only the docs an agent reads: operators' and developers' docs (deploy, benchmarks, security) stay in the repository.
SERVED_DOCS: dict[str, str] = {
    "context-pack.md": "the context pack: layers, budgets with a worked example, truncation, scopes",
    "knowledge-wiki.md": "the wiki compiler: compile, builds, activate and roll back, wiki search, lint, review",
    "decisions.md": "why things are the way they are (the D-numbers the guide cites)",
    "agent-bootstrap.md": "the block to paste into a new agent's instructions (what the README points agents to)",
}
DOCS_DIR = Path(__file__).resolve().parent / "docs"


def doc(name: str) -> bytes:
    """One served doc; an unknown name is a 404 naming the served ones."""
    if name not in SERVED_DOCS:
        missing = NotFound("document", f"no served document {name!r}: /api/llms.txt lists the served docs")
        missing.errors = [FieldError("name", "not a served document", sorted(SERVED_DOCS))]
        raise missing
    return _doc_bytes(name)


@lru_cache(maxsize=len(SERVED_DOCS))
def _doc_bytes(name: str) -> bytes:
    return (DOCS_DIR / name).read_bytes()


def llms_txt(base: str) -> str:
    """The llms.txt text for a deployment reached at ``base``."""
    mcp = "\n".join(f"- [/mcp/{m.name}]({base}/mcp/{m.name}): tools for {m.purpose}" for m in MODULE_TABLE)
    docs = "\n".join(
        f"- [{name}]({base}/api/docs/{name}): {what} (Markdown)" for name, what in SERVED_DOCS.items()
    )
    return f"""# Agentmate

> A backend for AI agents: durable memory (journal events, evidence-backed memories, hybrid search,
> checkpoints and resume), working memory, a skills registry, a knowledge registry with a compiled wiki,
> the context pack, and todos, notes, reports, bookmarks and expenses, over REST and MCP. Every call needs an
> API key in the X-Api-Key header.

Read the agent integration guide first: every step has a check. Errors are application/problem+json naming
each bad field and its allowed values; /api/schema lists the allowed values.

## Docs

- [Agent integration guide]({base}/api/guide): connect, conventions, the memory loop, finding your session after a crash, MCP, skills, knowledge (Markdown)
{docs}
- [OpenAPI document]({base}/api/openapi.json): every REST route, field and rule
- [Allowed values]({base}/api/schema): enums, required fields and scopes of the write models
- [Health]({base}/api/health): liveness and the MCP endpoints (no key needed)

## MCP

- [/mcp]({base}/mcp): every tool the key's scopes allow (Streamable HTTP)
{mcp}
"""
