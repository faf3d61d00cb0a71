"""Skill tools (``/mcp/skills``, the spec's 16): execution records (logs, versions, stats, signals) over
``agentmate.skills.service`` and the registry (sync, catalog, search, L1/L2 loads, compile, index, quality runs)
over ``agentmate.skills.registry`` — the same services and scopes as the REST routes."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import IdempotencyKey, Limit, Offset
from agentmate.skills import schemas as s
from agentmate.skills import service
from agentmate.skills.registry import service as registry
from agentmate.skills.registry.schemas import (
    SkillCatalogItem,
    SkillCompileReport,
    SkillCompileRequest,
    SkillIndexReport,
    SkillIndexRequest,
    SkillIngestResult,
    SkillInstructions,
    SkillQualityRun,
    SkillQualityRunRequest,
    SkillResource,
    SkillResourceContent,
    SkillSearchRequest,
    SkillSearchResponse,
    SkillSyncRequest,
)
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

tools = ToolSet(
    "skills",
    instructions=(
        "Skill execution records of the account that owns the API key: log each run of a skill "
        "(skill_log_add), publish SKILL.md versions and read the active one, and read per-skill stats and "
        "improvement signals. Reading needs skills:r, writing skills:rw. outcome is one of success, failure, "
        "partial, user_corrected. Bind a log to skill_version_id (from skill_version_get_active) so memory "
        "attribution and quality telemetry can use it. To find and load a skill: skill_search (or "
        "skill_catalog_list) → skill_version_instructions → skill_version_resources / skill_resource_get."
    ),
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
        skill_name=_blank(skill_name),
        outcome=outcome,
        agent_id=_blank(agent_id),
        session_id=_blank(session_id),
        skill_version_id=skill_version_id,
    )


@tools.tool("skills:rw", rest="POST /api/skills/versions", title="Publish a skill version")
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
    activate: Annotated[bool, Field(description="Make this the skill's active version")] = False,
) -> VersionPublished:
    """Publish a SKILL.md body as a version of a skill (activate=true also makes it the active one).
    Publishing the same body under the same label again returns the existing version with created=false;
    the same label with a different body is refused. Requires skills:rw."""
    body = SkillVersionCreate(
        skill_name=skill_name,
        version=version,
        content=content,
        content_hash=content_hash,
        change_summary=change_summary,
        agent_id=agent_id,
        eval_pass_rate=eval_pass_rate,
        activate=activate,
    )
    return service.publish_version(db(), principal(), body).value


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


# -- registry ----------------------------------------------------------------------------------------------------

VersionId = Annotated[UUID, Field(description="A skill version id (from skill_search or skill_catalog_list)")]


@tools.tool("skills:rw", rest="POST /api/skills/sources/{source_id}/sync", title="Sync a git skill source")
def skill_source_sync(
    source_id: Annotated[UUID, Field(description="A git skill source id")],
    ref: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=255,
            description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
        ),
    ] = None,
    activate: Annotated[bool, Field(description="Make the ingested version the active one")] = False,
    index: Annotated[bool, Field(description="Also index the active card into skill search")] = False,
) -> SkillIngestResult:
    """Resolve a ref of a registered git skill source to an immutable commit and ingest the package at it.
    Replaying an unchanged package returns the existing revision (created=false). A failure marks the source
    error and leaves no revision. Requires skills:rw."""
    return registry.sync_source(
        db(), retrieval(), principal(), source_id, SkillSyncRequest(ref=ref, activate=activate, index=index)
    )


@tools.tool("skills:r", rest="POST /api/skills/search", title="Search skills")
def skill_search(
    query: Annotated[str, Field(min_length=1, max_length=1000, description="What the task needs")],
    top_k: Annotated[int, Field(ge=1, le=50, description="Hits, 1..50 (default 5)")] = 5,
    include_content: Annotated[bool, Field(description="Also load each hit's L1 instructions")] = False,
    min_similarity: Annotated[
        float | None,
        Field(
            ge=-1,
            le=1,
            description="Drop hits whose raw vector similarity is below this unless every query word matched",
        ),
    ] = None,
) -> SkillSearchResponse:
    """Semantic + lexical search over the indexed L0 cards of active skills. Returns {items: [{skill_version_id,
    skill_name, version, score, channels, lexical_score, vector_score, lexical_matched, card, instructions}],
    total, degraded}; instructions only with include_content=true. Requires skills:r."""
    return registry.search(
        db(),
        retrieval(),
        principal(),
        SkillSearchRequest(
            query=query, top_k=top_k, include_content=include_content, min_similarity=min_similarity
        ),
    )


@tools.tool("skills:rw", rest="POST /api/skills/index", title="Index active skill cards")
def skill_index_active(
    skill_name: Annotated[
        str | None, Field(min_length=1, max_length=200, description="Only this skill (default: all)")
    ] = None,
) -> SkillIndexReport:
    """Index the L0 cards of active skill versions into skill search (cards only, never instructions).
    Over 200 versions the run is queued instead: `job` is set (read it at GET /api/knowledge/jobs/{id}).
    Requires skills:rw."""
    return registry.index_active(db(), retrieval(), principal(), SkillIndexRequest(skill_name=skill_name))


@tools.tool("skills:r", rest="GET /api/skills/catalog", title="List the skill catalog")
def skill_catalog_list(
    query: Annotated[
        str | None, Field(max_length=200, description="Substring of name or description")
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[SkillCatalogItem]:
    """Active skills' L0 cards ordered by skill name: description, triggers, capabilities, constraints,
    dependencies, resource counts. compiled=false marks a basic card (no artifact yet). Requires skills:r."""
    return registry.catalog(db(), principal(), PageParams(limit=limit, offset=offset), _blank(query))


@tools.tool("skills:rw", rest="POST /api/skills/compile", title="Compile skill versions")
def skill_compile(
    skill_version_id: Annotated[
        UUID | None, Field(description="One version; omit to backfill every active version")
    ] = None,
) -> SkillCompileReport:
    """Compile (or recompile) one version's L0 card, L1 instructions and L2 manifest, or backfill every active
    version. Failures are reported per version with their problems. A backfill over 200 versions is queued
    instead: `job` is set (read it at GET /api/knowledge/jobs/{id}). Requires skills:rw."""
    return registry.compile_versions(
        db(), principal(), SkillCompileRequest(skill_version_id=skill_version_id)
    )


@tools.tool(
    "skills:r", rest="GET /api/skills/versions/{version_id}/instructions", title="Load skill instructions"
)
def skill_version_instructions(skill_version_id: VersionId) -> SkillInstructions:
    """L1: the SKILL.md instructions of a version (the body after the frontmatter) plus its name,
    description, allowed tools and knowledge contract. Requires skills:r."""
    return registry.instructions(db(), principal(), skill_version_id)


@tools.tool("skills:r", rest="GET /api/skills/versions/{version_id}/resources", title="List skill resources")
def skill_version_resources(
    skill_version_id: VersionId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[SkillResource]:
    """L2: the version's resource manifest (file_id, path, kind, mime_type, size_bytes, indexable,
    text_available), without content; load one with skill_resource_get. Requires skills:r."""
    return registry.resources(db(), principal(), skill_version_id, PageParams(limit=limit, offset=offset))


@tools.tool(
    "skills:r",
    rest="GET /api/skills/versions/{version_id}/resources/{file_id}",
    title="Load one skill resource",
)
def skill_resource_get(
    skill_version_id: VersionId,
    file_id: Annotated[UUID, Field(description="A file_id from skill_version_resources")],
) -> SkillResourceContent:
    """One text resource of a version with its content (binary resources have no text). Requires skills:r."""
    return registry.resource(db(), principal(), skill_version_id, file_id)


@tools.tool(
    "skills:rw", rest="POST /api/skills/versions/{version_id}/quality-runs", title="Run skill quality checks"
)
def skill_quality_run(
    skill_version_id: VersionId,
    baseline_version_id: Annotated[
        UUID | None, Field(description="An earlier version of the same skill to compare against")
    ] = None,
) -> SkillQualityRun:
    """Run the offline deterministic quality checks (lint, eval, optional baseline comparison, version-bound
    telemetry) and store the report as an audit row. Each check has severity blocker, error or warning.
    Requires skills:rw."""
    return registry.run_quality(
        db(), principal(), skill_version_id, SkillQualityRunRequest(baseline_version_id=baseline_version_id)
    )


@tools.tool("skills:r", rest="GET /api/skills/quality-runs/{run_id}", title="Get a skill quality report")
def skill_quality_get(run_id: Annotated[UUID, Field(description="A quality run id")]) -> SkillQualityRun:
    """One quality run with its full report. Requires skills:r."""
    return registry.get_quality_run(db(), principal(), run_id)


def _blank(value: str | None) -> str | None:
    return (value or "").strip() or None
