"""K4 tools: discover a skill's knowledge contract and record/read resolution runs, over
``agentmate.knowledge.discovery`` (``discover``, ``resolutions``): the use cases and scopes of the REST routes
(discover and recording also need skills:r).
REST twin: ``agentmate.knowledge.discovery.router``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.text import blank_to_none
from agentmate.knowledge.discovery import discover, resolutions
from agentmate.knowledge.discovery.schemas import (
    MAX_ECHOES,
    MAX_SELECTED,
    CandidateEcho,
    CitationRef,
    DiscoverRequest,
    DiscoverResponse,
    DiscoveryStatus,
    Fingerprint,
    RequirementId,
    ResolutionCreate,
    ResolutionRun,
    ResolutionSummary,
    RetrievedRef,
    SelectedBase,
)
from agentmate.mcp.context import db, principal
from agentmate.mcp.schemas import IdempotencyKey, Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools

VersionId = Annotated[
    UUID,
    Field(
        description="A skill version of this account whose compiled SKILL.md declares a "
        "knowledge: contract (skill_version_get_active gives it)"
    ),
]


@tools.tool(
    "knowledge:r",
    also=("skills:r",),
    rest="POST /api/knowledge/discover",
    title="Discover knowledge",
    hints=DiscoverRequest,
)
def knowledge_discover(
    skill_version_id: VersionId, requirement_id: RequirementId | None = None
) -> DiscoverResponse:
    """Resolve a skill version's knowledge contract against this account's catalog: per requirement a status
    (matched, ambiguous, no_metadata_match, no_authorized_knowledge, pinned_resolved, pinned_missing), ranked
    candidates with the matched terms, the retrieval budgets, the contract's fallback guidance, and a
    discovery_fingerprint to pass to knowledge_resolution_record. Needs knowledge:r and skills:r."""
    body = DiscoverRequest(skill_version_id=skill_version_id, requirement_id=requirement_id)
    return discover.discover(db(), principal(), body)


@tools.tool(
    "knowledge:rw",
    also=("skills:r",),
    rest="POST /api/knowledge/resolutions",
    title="Record a knowledge resolution",
    hints=ResolutionCreate,
)
def knowledge_resolution_record(
    skill_version_id: VersionId,
    requirement_id: RequirementId,
    discovery_fingerprint: Fingerprint,
    discovery_status: Annotated[
        DiscoveryStatus, Field(description="The status discovery gave this requirement")
    ],
    selected: Annotated[
        list[SelectedBase],
        Field(
            max_length=MAX_SELECTED,
            description=(
                "The bases the execution used (source_id, optional revision_id); may be empty when it proceeded per the "
                "fallback"
            ),
        ),
    ] = [],  # noqa: B006 (the SDK copies arguments per call)
    candidates: Annotated[list[CandidateEcho], Field(max_length=MAX_ECHOES)] = [],  # noqa: B006
    retrieved: Annotated[
        list[RetrievedRef],
        Field(
            max_length=MAX_ECHOES,
            description=("References of what was retrieved (ids, paths, scores), never bodies"),
        ),
    ] = [],  # noqa: B006
    citations: Annotated[list[CitationRef], Field(max_length=MAX_ECHOES)] = [],  # noqa: B006
    session_id: Annotated[str, Field(max_length=200, description="The agent session")] = "",
    selection_reason: Annotated[str, Field(max_length=2000)] = "",
    confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
    idempotency_key: IdempotencyKey = None,
) -> ResolutionRun:
    """Record what one execution resolved for one requirement, append-only: the server fills contract_identity,
    verifies every selected base in this account, and keeps candidates/retrieved/citations as bounded
    references. A retry with the same idempotency_key returns the original run. Needs knowledge:rw and skills:r."""
    body = ResolutionCreate(
        skill_version_id=skill_version_id,
        requirement_id=requirement_id,
        discovery_fingerprint=discovery_fingerprint,
        discovery_status=discovery_status,
        selected=selected,
        candidates=candidates,
        retrieved=retrieved,
        citations=citations,
        session_id=session_id,
        selection_reason=selection_reason,
        confidence=confidence,
        idempotency_key=idempotency_key,
    )
    return resolutions.record(db(), principal(), body).value


@tools.tool("knowledge:r", rest="GET /api/knowledge/resolutions", title="List knowledge resolutions")
def knowledge_resolutions_list(
    skill_version_id: Annotated[UUID | None, Field(description="Runs of this skill version")] = None,
    session_id: Annotated[str | None, Field(max_length=200, description="Runs of this agent session")] = None,
    source_id: Annotated[
        UUID | None, Field(description="Runs whose selected set contains this source")
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[ResolutionSummary]:
    """Resolution run summaries, newest first, with candidate/selected/retrieved/citation counts."""
    return resolutions.list_runs(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        skill_version_id=skill_version_id,
        session_id=blank_to_none(session_id),
        source_id=source_id,
    )


@tools.tool("knowledge:r", rest="GET /api/knowledge/resolutions/{run_id}", title="Get a knowledge resolution")
def knowledge_resolution_get(
    run_id: Annotated[UUID, Field(description="A resolution run id")],
) -> ResolutionRun:
    """One resolution run in full: contract identity, discovery anchor, candidates, verified selections,
    retrieved references and citations."""
    return resolutions.get_run(db(), principal(), run_id)
