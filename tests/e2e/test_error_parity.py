"""The same bad input gives the same error over REST and over MCP (issue 9 item 3): one table of inputs, each
sent to the REST route and to its MCP tool twin (the official client over the in-memory transport, acting as
the same account), asserting the same fields and messages from both."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import anyio
import pytest
from mcp import Client

from agentmate.context.schemas import PackRequest
from agentmate.core.principal import Principal
from agentmate.core.validation import declared_fields
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as

SERVERS = build_servers(registry.load())
NUL = "must not contain NUL (U+0000) characters"


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    tool: str
    arguments: dict[str, Any]
    fields: dict[str, str]  # field → message, as both transports must report it
    query: dict[str, Any] | None = None
    body: dict[str, Any] | None = None
    allowed: dict[str, list[Any]] = field(default_factory=dict)  # field → allowed, in both transports
    meant: dict[str, str] = field(default_factory=dict)  # field → likely_meant (REST's member; MCP's message)
    mcp_allowed: dict[str, list[Any]] | None = None  # where the tool's arguments differ from the REST body's


TODO_FIELDS = ["description", "due_date", "priority", "status", "tags", "title"]
PACK_FIELDS = declared_fields(PackRequest)
RETRIEVED_FIELDS = [
    "chunk_id",
    "document_id",
    "heading_path",
    "path",
    "query_id",
    "revision_id",
    "score",
    "source_id",
]


CASES = [
    # Driver data errors (Postgres refuses NUL in text): translated once, in core.dberrors.
    Case(
        "todo search q with NUL",
        "GET",
        "/api/todos/search",
        "todo_search",
        {"q": "a\x00b"},
        {"q": NUL},
        query={"q": "a\x00b"},
    ),
    Case(
        "todo list q with NUL",
        "GET",
        "/api/todos",
        "todo_list",
        {"q": "a\x00b"},
        {"q": NUL},
        query={"q": "a\x00b"},
    ),
    Case(
        "report list q with NUL",
        "GET",
        "/api/reports",
        "report_list",
        {"q": "x\x00"},
        {"q": NUL},
        query={"q": "x\x00"},
    ),
    Case(
        "knowledge catalog query with NUL",
        "GET",
        "/api/knowledge/catalog",
        "knowledge_catalog_list",
        {"query": "a\x00"},
        {"query": NUL},
        query={"query": "a\x00"},
    ),
    Case(
        "knowledge catalog domain with NUL",
        "GET",
        "/api/knowledge/catalog",
        "knowledge_catalog_list",
        {"domain": "a\x00"},
        {"domain": NUL},
        query={"domain": "a\x00"},
    ),
    # Validation in the schema and in the service.
    Case(
        "todo title with NUL",
        "POST",
        "/api/todos",
        "todo_create",
        {"title": "a\x00"},
        {"title": NUL},
        body={"title": "a\x00"},
    ),
    Case(
        "skill log bound to another skill's version",
        "POST",
        "/api/skills/logs",
        "skill_log_add",
        {"skill_name": "other", "outcome": "success", "skill_version_id": "{version}"},
        {"skill_version_id": "belongs to skill 'parity', not 'other'"},
        body={"skill_name": "other", "outcome": "success", "skill_version_id": "{version}"},
    ),
    Case(
        "unknown skill version",
        "POST",
        "/api/skills/logs",
        "skill_log_add",
        {"skill_name": "parity", "outcome": "success", "skill_version_id": str(uuid.UUID(int=7))},
        {"skill_version_id": "unknown skill version in this account"},
        body={"skill_name": "parity", "outcome": "success", "skill_version_id": str(uuid.UUID(int=7))},
    ),
    # K4: discovery and resolution runs (the same use cases behind both transports).
    Case(
        "discover an unknown skill version",
        "POST",
        "/api/knowledge/discover",
        "knowledge_discover",
        {"skill_version_id": str(uuid.UUID(int=7))},
        {"skill_version_id": "unknown skill version in this account"},
        body={"skill_version_id": str(uuid.UUID(int=7))},
    ),
    Case(
        "record a run of an unknown skill version",
        "POST",
        "/api/knowledge/resolutions",
        "knowledge_resolution_record",
        RUN := {
            "skill_version_id": str(uuid.UUID(int=7)),
            "requirement_id": "r",
            "discovery_fingerprint": "0" * 64,
            "discovery_status": "matched",
        },
        {"skill_version_id": "unknown skill version in this account"},
        body=RUN,
    ),
    Case(
        "a run echoing a body",
        "POST",
        "/api/knowledge/resolutions",
        "knowledge_resolution_record",
        {**RUN, "retrieved": [{"path": "a.md", "content": "text"}]},
        {
            "retrieved[0].content": "unknown field (a resolution run keeps references only: ids, paths and scores, "
            "never bodies)"
        },
        body={**RUN, "retrieved": [{"path": "a.md", "content": "text"}]},
        allowed={"retrieved[0].content": RETRIEVED_FIELDS},
    ),
    # Issue 23 item 7: every unknown field names the field it most likely stands for, in the same words.
    Case(
        "a misspelt todo field",
        "POST",
        "/api/todos",
        "todo_create",
        {"title": "t", "titel": "t"},
        {"titel": "unknown field (did you mean title?)"},
        body={"title": "t", "titel": "t"},
        allowed={"titel": TODO_FIELDS},
        meant={"titel": "title"},
        mcp_allowed={"titel": sorted([*TODO_FIELDS, "idempotency_key"])},
    ),
    Case(
        "a pack budget in camel case",
        "POST",
        "/api/context/pack",
        "context_pack",
        {"task": "t", "maxChars": 2000},
        {"maxChars": "unknown field (did you mean max_chars?)"},
        body={"task": "t", "maxChars": 2000},
        allowed={"maxChars": PACK_FIELDS},
        meant={"maxChars": "max_chars"},
    ),
    Case(
        "a hinted pack field names the field meant",
        "POST",
        "/api/context/pack",
        "context_pack",
        {"task": "t", "max_tokens": 2000},
        {"max_tokens": "unknown field (use max_chars: budgets are in characters, not tokens)"},
        body={"task": "t", "max_tokens": 2000},
        allowed={"max_tokens": PACK_FIELDS},
        meant={"max_tokens": "max_chars"},
    ),
    Case(
        "a pack budget that is neither 0 nor in range",
        "POST",
        "/api/context/pack",
        "context_pack",
        {"task": "t", "max_chars": "big"},
        {"max_chars": "must be an integer 500..200000 (0 or omitted = 12000)"},
        body={"task": "t", "max_chars": "big"},
        allowed={"max_chars": [0, "500..200000"]},
    ),
    # Issue 23 trial: the MCP tool explains an unknown argument with the REST body model's hint.
    Case(
        "a build_id on wiki lint",
        "POST",
        "/api/knowledge/wiki/lint",
        "knowledge_wiki_lint",
        LINT := {"source_id": str(uuid.UUID(int=7)), "build_id": str(uuid.UUID(int=8))},
        {"build_id": "unknown field (lint always runs over the source's active build; send source_id)"},
        body=LINT,
        allowed={"build_id": ["source_id"]},
        meant={"build_id": "source_id"},
    ),
    Case(
        "a source_id on knowledge search",
        "POST",
        "/api/knowledge/search",
        "knowledge_search",
        SEARCH := {"query": "refund", "source_id": str(uuid.UUID(int=7))},
        {"source_id": "unknown field (use source_ids (a list of at most 16))"},
        body=SEARCH,
        allowed={
            "source_id": ["domain", "include_content", "min_similarity", "query", "source_ids", "top_k"]
        },
        meant={"source_id": "source_ids"},
    ),
]


def _fill(value: Any, version: str) -> Any:
    if isinstance(value, dict):
        return {k: _fill(v, version) for k, v in value.items()}
    return version if value == "{version}" else value


def _mcp_text(case: Case) -> str:
    allowed = case.allowed if case.mcp_allowed is None else case.mcp_allowed
    return "Validation failed: " + "; ".join(
        f"{f}: {m}" + (" (allowed: " + ", ".join(map(str, allowed[f])) + ")" if f in allowed else "")
        for f, m in case.fields.items()
    )


async def _call_tool(principal: Principal, tool: str, arguments: dict[str, Any]) -> Any:
    with anyio.fail_after(10), acting_as(principal):
        async with Client(SERVERS["/mcp"]) as client:
            return await client.call_tool(tool, arguments)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rest_and_mcp_report_the_same_fields_and_messages(client, account, case: Case):
    h = account.headers()
    published = client.post(
        "/api/skills/versions",
        json={"skill_name": "parity", "version": "1", "content": "# parity"},
        headers=h,
    )
    assert published.status_code == 201, published.text
    version = published.json()["id"]

    r = client.request(
        case.method, case.path, params=_fill(case.query, version), json=_fill(case.body, version), headers=h
    )
    assert r.status_code == 400, r.text
    assert r.headers["content-type"] == "application/problem+json"
    rest = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert rest == case.fields
    for e in r.json()["errors"]:
        assert e.get("allowed") == case.allowed.get(e["field"]), e
        assert e.get("likely_meant") == case.meant.get(e["field"]), e

    principal = Principal(
        account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt"
    )
    # In a thread of its own: anyio.run on the main thread would leave it without an event loop (Mangum needs one).
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(
            anyio.run, _call_tool, principal, case.tool, _fill(case.arguments, version)
        ).result()
    assert result.is_error
    assert result.content[0].text == _mcp_text(case)
