"""The skills registry's tools (sync, search, index, catalog, compile, L1/L2 loads, quality runs) over the
sub-packages' services, the same services and scopes as their REST twins: ``agentmate.skills.registry.router``,
``search.router``, ``catalog.router``, ``compile.router``, ``quality.router``. One module, not one per sub-package:
the tools stay in the order of the tool list."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.text import blank_to_none
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.skills._toolset import tools
from agentmate.skills.catalog import service as catalog
from agentmate.skills.catalog.schemas import (
    SkillCatalogItem,
    SkillInstructions,
    SkillResource,
    SkillResourceContent,
)
from agentmate.skills.compile import backfill
from agentmate.skills.compile.schemas import SkillCompileReport, SkillCompileRequest
from agentmate.skills.quality import service as quality
from agentmate.skills.quality.schemas import SkillQualityRun, SkillQualityRunRequest
from agentmate.skills.registry import service as registry
from agentmate.skills.registry.schemas import SkillIngestResult, SkillSyncRequest
from agentmate.skills.search import service as search_service
from agentmate.skills.search.schemas import (
    SkillIndexReport,
    SkillIndexRequest,
    SkillSearchRequest,
    SkillSearchResponse,
)

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


@tools.tool("skills:r", rest="POST /api/skills/search", title="Search skills", hints=SkillSearchRequest)
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
    return search_service.search(
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
    return search_service.index_active(
        db(), retrieval(), principal(), SkillIndexRequest(skill_name=skill_name)
    )


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
    return catalog.catalog(db(), principal(), PageParams(limit=limit, offset=offset), blank_to_none(query))


@tools.tool("skills:rw", rest="POST /api/skills/compile", title="Compile skill versions")
def skill_compile(
    skill_version_id: Annotated[
        UUID | None, Field(description="One version; omit to backfill every active version")
    ] = None,
) -> SkillCompileReport:
    """Compile (or recompile) one version's L0 card, L1 instructions and L2 manifest, or backfill every active
    version. Failures are reported per version with their problems. A backfill over 200 versions is queued
    instead: `job` is set (read it at GET /api/knowledge/jobs/{id}). Requires skills:rw."""
    return backfill.compile_versions(
        db(), principal(), SkillCompileRequest(skill_version_id=skill_version_id)
    )


@tools.tool(
    "skills:r", rest="GET /api/skills/versions/{version_id}/instructions", title="Load skill instructions"
)
def skill_version_instructions(skill_version_id: VersionId) -> SkillInstructions:
    """L1: the SKILL.md instructions of a version (the body after the frontmatter) plus its name,
    description, allowed tools and knowledge contract. Requires skills:r."""
    return catalog.instructions(db(), principal(), skill_version_id)


@tools.tool("skills:r", rest="GET /api/skills/versions/{version_id}/resources", title="List skill resources")
def skill_version_resources(
    skill_version_id: VersionId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[SkillResource]:
    """L2: the version's resource manifest (file_id, path, kind, mime_type, size_bytes, indexable,
    text_available), without content; load one with skill_resource_get. Requires skills:r."""
    return catalog.resources(db(), principal(), skill_version_id, PageParams(limit=limit, offset=offset))


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
    return catalog.resource(db(), principal(), skill_version_id, file_id)


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
    return quality.run_quality(
        db(), principal(), skill_version_id, SkillQualityRunRequest(baseline_version_id=baseline_version_id)
    )


@tools.tool("skills:r", rest="GET /api/skills/quality-runs/{run_id}", title="Get a skill quality report")
def skill_quality_get(run_id: Annotated[UUID, Field(description="A quality run id")]) -> SkillQualityRun:
    """One quality run with its full report. Requires skills:r."""
    return quality.get_quality_run(db(), principal(), run_id)
