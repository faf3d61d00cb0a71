"""Context pack tool (``/mcp/context``): the same service and per-layer rules as ``POST /api/context/pack``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import BeforeValidator, Field

from agentmate.context import schemas as c
from agentmate.context import service
from agentmate.context.schemas import Pack, PackRequest
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.registry import ToolSet
from agentmate.memory.schemas import ScopeType

tools = ToolSet(
    "context",
    instructions=(
        "The context pack: call context_pack once at the start of every task. It returns a budgeted, cited "
        "context in six layers, in this order: [SKILL] instructions, [KNOWLEDGE] citable evidence, [MEMORY] "
        "past experience (fallible: present evidence outranks it), [FACTS] live todos and notes, [WORKING] the "
        "working-memory session's latest raw items, [TASK] the goal plus the session's checkpoint or recent "
        "journal. Needs memory:r; each layer also needs its own scope, and a layer the key may not read (or one "
        "that failed) is empty with a note that is repeated in warnings. Budgets are characters (max_chars)."
    ),
)


@tools.tool("memory:r", rest="POST /api/context/pack", title="Assemble the context pack", hints=PackRequest)
def context_pack(
    task: Annotated[
        str,
        Field(
            min_length=1,
            max_length=c.MAX_TASK,
            description="What you are about to do (the TASK layer's goal)",
        ),
    ],
    query: Annotated[
        str | None, Field(max_length=c.MAX_QUERY, description="What to retrieve with; defaults to the task")
    ] = None,
    skill_name: Annotated[
        str | None, Field(max_length=c.MAX_SKILL_NAME, description="Pin the SKILL layer to this skill")
    ] = None,
    session_id: Annotated[
        str | None,
        Field(
            max_length=200,
            description="Your session id: TASK resumes its "
            "checkpoint or journal; WORKING shows the working-memory session "
            "with this id and joins the default layers",
        ),
    ] = None,
    knowledge_domain: Annotated[str | None, Field(max_length=c.MAX_DOMAIN)] = None,
    knowledge_source_ids: Annotated[list[UUID] | None, Field(max_length=c.MAX_SOURCE_IDS)] = None,
    memory_scope_type: Annotated[ScopeType | None, Field(description="MEMORY: only this scope type")] = None,
    memory_scope_key: Annotated[
        str | None,
        Field(max_length=500, description="MEMORY: only this scope key (requires memory_scope_type)"),
    ] = None,
    max_chars: Annotated[
        int,
        BeforeValidator(c.check_max_chars),  # one error with the range (not pydantic's "valid integer")
        Field(
            description=f"Budget in characters: {c.MIN_MAX_CHARS}..{c.MAX_MAX_CHARS}; 0 "
            f"= {c.DEFAULT_MAX_CHARS}"
        ),
    ] = c.DEFAULT_MAX_CHARS,
    top_k: Annotated[
        int,
        BeforeValidator(c.check_top_k),
        Field(description=f"Candidates per retrieval layer, 1..{c.MAX_TOP_K}; 0 = {c.DEFAULT_TOP_K}"),
    ] = c.DEFAULT_TOP_K,
    layers: Annotated[
        list[str] | None,
        Field(
            description="Any of SKILL, KNOWLEDGE, MEMORY, FACTS, WORKING, TASK "
            "(case-insensitive); omitted = all but WORKING, plus "
            "WORKING with a session_id"
        ),
    ] = None,
    render: Annotated[bool, Field(description="Also return the text form in rendered")] = False,
) -> Pack:
    """Assemble a budgeted, cited execution context for a task from six layers (SKILL, KNOWLEDGE, MEMORY,
    FACTS, WORKING, TASK), each cut to its share of max_chars at a paragraph or sentence boundary and reporting
    char_budget, chars_used, dropped and truncated. Each layer is authorised on its own; a refused, failing or
    unconfigured layer is empty with a note, repeated in warnings. Requires memory:r."""
    body = PackRequest.model_validate(
        {
            "task": task,
            "query": query,
            "skill_name": skill_name,
            "session_id": session_id,
            "knowledge_domain": knowledge_domain,
            "knowledge_source_ids": knowledge_source_ids or [],
            "memory_scope_type": memory_scope_type,
            "memory_scope_key": memory_scope_key,
            "max_chars": max_chars,
            "top_k": top_k,
            "layers": layers,
            "render": render,
        }
    )
    return service.pack(db(), retrieval(), principal(), body)
