"""Skill execution records (logs, versions, stats, signals) over ``agentmate.skills.service``, the same service and
scopes as the REST twin ``agentmate.skills.router``."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.text import blank_to_none
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.schemas import IdempotencyKey, Limit, Offset
from agentmate.mcp.tools.skills._toolset import tools
from agentmate.skills import schemas as s
from agentmate.skills import service
from agentmate.skills.schemas import (
    Outcome,
    SkillLog,
    SkillLogCreate,
    SkillSignals,
    SkillStats,
    SkillVersion,
    SkillVersionCreate,
    VersionPublished,
)

SkillName = Annotated[s.SkillName, Field(description="Exact skill name, 1..200 characters")]
OutcomeArg = Annotated[Outcome, Field(description="One of: success, failure, partial, user_corrected")]
Short = Annotated[str, Field(max_length=200)]


@tools.tool("skills:rw", rest="POST /api/skills/logs", title="Log a skill run")
def skill_log_add(
    skill_name: SkillName,
    outcome: OutcomeArg,
    skill_version_id: Annotated[
        UUID | None,
        Field(description="A published version of the same skill in this account (its label is then used)"),
    ] = None,
    skill_version: Annotated[
        str,
        Field(max_length=100, description="Legacy version label, used when skill_version_id is not given"),
    ] = "",
    agent_id: Annotated[Short, Field(description="Which agent ran the skill")] = "",
    session_id: Annotated[Short, Field(description="The agent session it ran in")] = "",
    trigger_text: Annotated[str, Field(max_length=10_000, description="What triggered it")] = "",
    was_triggered: Annotated[
        bool, Field(description="false when the skill should have run but did not")
    ] = True,
    failure_reason: Annotated[str, Field(max_length=10_000)] = "",
    user_correction: Annotated[str, Field(max_length=10_000, description="What the user corrected")] = "",
    tool_calls: Annotated[
        list[Any] | None, Field(max_length=500, description="JSON array of the tool calls made")
    ] = None,
    duration_ms: Annotated[int | None, Field(ge=0, le=86_400_000)] = None,
    idempotency_key: IdempotencyKey = None,
) -> SkillLog:
    """Record one execution of a skill. outcome: success | failure | partial | user_corrected. Prefer
    skill_version_id (a version of the same skill, e.g. from skill_version_get_active) over the legacy
    skill_version label. Pass idempotency_key so a retry does not log the run twice. Requires skills:rw."""
    body = SkillLogCreate(
        skill_name=skill_name,
        outcome=outcome,
        skill_version_id=skill_version_id,
        skill_version=skill_version,
        agent_id=agent_id,
        session_id=session_id,
        trigger_text=trigger_text,
        was_triggered=was_triggered,
        failure_reason=failure_reason,
        user_correction=user_correction,
        tool_calls=tool_calls or [],
        duration_ms=duration_ms,
    )
    return service.add_log(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("skills:r", rest="GET /api/skills/logs", title="List skill runs")
def skill_logs_list(
    skill_name: Annotated[str, Field(max_length=200, description="Exact skill name")] | None = None,
    outcome: Annotated[
        Outcome | None, Field(description="success, failure, partial or user_corrected")
    ] = None,
    agent_id: Annotated[str, Field(max_length=200)] | None = None,
    session_id: Annotated[str, Field(max_length=200)] | None = None,
    skill_version_id: UUID | None = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[SkillLog]:
    """List skill executions newest first, optionally filtered by skill_name, outcome (success | failure |
    partial | user_corrected), agent_id, session_id and skill_version_id. Returns {items, total, limit,
    offset}. Requires skills:r."""
    return service.list_logs(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        skill_name=blank_to_none(skill_name),
        outcome=outcome,
        agent_id=blank_to_none(agent_id),
        session_id=blank_to_none(session_id),
        skill_version_id=skill_version_id,
    )


@tools.tool(
    "skills:rw", rest="POST /api/skills/versions", title="Publish a skill version", hints=SkillVersionCreate
)
def skill_version_publish(
    skill_name: SkillName,
    version: Annotated[str, Field(min_length=1, max_length=100, description="Version label, e.g. 1.2.0")],
    content: Annotated[
        str, Field(min_length=1, max_length=1_000_000, description="The SKILL.md body, verbatim")
    ],
    content_hash: Annotated[
        str | None, Field(description="sha256 hex of content; omit to let the server compute it")
    ] = None,
    change_summary: Annotated[str, Field(max_length=5000)] = "",
    agent_id: Annotated[Short, Field(description="Which agent published it")] = "",
    eval_pass_rate: Annotated[float | None, Field(ge=0, le=1, description="0..1")] = None,
    activate: Annotated[
        bool, Field(description="Make this the skill's active version once it compiles (see activated)")
    ] = False,
    index: Annotated[
        bool,
        Field(
            description="Also index the card into skill search after the commit (an active version only: "
            "combine with activate; see index and not_indexed_reason)"
        ),
    ] = False,
) -> VersionPublished:
    """Publish a SKILL.md body as a version of a skill. activate=true makes it the active one only when its
    compile produced no blocker (frontmatter with name and description is required): otherwise activated=false
    and not_activated_reason says why; the version is kept either way.
    Publishing the same body under the same label again returns the existing version with created=false;
    the same label with a different body is refused. index=true (with activate=true) also makes it findable by
    skill_search at once; unknown frontmatter keys come back as compile.warnings. Requires skills:rw."""
    body = SkillVersionCreate(
        skill_name=skill_name,
        version=version,
        content=content,
        content_hash=content_hash,
        change_summary=change_summary,
        agent_id=agent_id,
        eval_pass_rate=eval_pass_rate,
        activate=activate,
        index=index,
    )
    return service.publish_version(db(), retrieval(), principal(), body).value


@tools.tool("skills:r", rest="GET /api/skills/versions/active", title="Get the active skill version")
def skill_version_get_active(skill_name: SkillName) -> SkillVersion:
    """The active version of a skill with its SKILL.md body and id (use the id as skill_version_id when
    logging runs). Refused with "skill … has no active version" when none is active. Requires skills:r."""
    return service.active_version(db(), principal(), skill_name)


@tools.tool("skills:r", rest="GET /api/skills/stats", title="Skill statistics")
def skill_stats(skill_name: SkillName) -> SkillStats:
    """Run counts, trigger rate and outcome rates (success, failure, partial, user_corrected) of one skill,
    overall and per version. Requires skills:r."""
    return service.stats(db(), principal(), skill_name)


@tools.tool("skills:r", rest="GET /api/skills/signals", title="Skill improvement signals")
def skill_signals(
    skill_name: SkillName,
    limit: Annotated[int, Field(ge=1, le=service.MAX_SIGNALS, description="1..50 (default 10)")] = 10,
) -> SkillSignals:
    """Recent failures, partial runs and user corrections of one skill, newest first: what to improve.
    Requires skills:r."""
    return service.signals(db(), principal(), skill_name, limit)
