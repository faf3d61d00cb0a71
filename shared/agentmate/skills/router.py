"""Skill execution records (spec/001 "Skills"): logs, published versions, activation, stats and signals, and the
skills group's one router. MCP face: ``agentmate.mcp.tools.skills.records``."""

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, PageDep, RetrievalDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.api.routing import CONTENT_BODY_LIMIT, max_body
from agentmate.core.pagination import Page
from agentmate.core.schema_rules import NON_BLANK_TEXT
from agentmate.core.text import blank_to_none
from agentmate.skills import service
from agentmate.skills.schemas import (
    Outcome,
    SkillLog,
    SkillLogCreate,
    SkillSignals,
    SkillStats,
    SkillVersion,
    SkillVersionCreate,
    SkillVersionSummary,
    VersionPublished,
)

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
SkillNameQuery = Annotated[
    str,
    Query(min_length=1, max_length=200, pattern=NON_BLANK_TEXT, description="Exact skill name (not blank)"),
]


@router.post("/logs", status_code=201, response_model=SkillLog)
def add_log(
    body: SkillLogCreate, principal: SkillsWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Record one skill execution; skill_version_id (optional) must be a version of the same skill."""
    result = service.add_log(db, principal, body, idempotency_key)
    return created(result)


@router.get("/logs", response_model=Page[SkillLog])
def list_logs(
    principal: SkillsRead,
    db: DbDep,
    page: PageDep,
    skill_name: Annotated[str | None, Query(max_length=200)] = None,
    agent_id: Annotated[str | None, Query(max_length=200)] = None,
    outcome: Annotated[Outcome | None, Query()] = None,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    skill_version_id: Annotated[UUID | None, Query()] = None,
) -> Page[SkillLog]:
    """List skill executions, newest first."""
    return service.list_logs(
        db,
        principal,
        page,
        skill_name=blank_to_none(skill_name),
        agent_id=blank_to_none(agent_id),
        outcome=outcome,
        session_id=blank_to_none(session_id),
        skill_version_id=skill_version_id,
    )


@router.post(
    "/versions",
    status_code=201,
    response_model=VersionPublished,
    responses={
        200: {
            "model": VersionPublished,
            "description": "Replay: this skill already has this version with the same content",
        }
    },
    openapi_extra=max_body(CONTENT_BODY_LIMIT),
)
def publish_version(
    body: SkillVersionCreate, principal: SkillsWrite, db: DbDep, rt: RetrievalDep
) -> Response:
    """Publish a SKILL.md body as a version (201); the same body under the same label again is a 200 no-op.

    ``content_hash``, when given, must equal the hex sha256 of ``content`` (UTF-8, any case): a mismatch is a 400
    naming content_hash. Omit it to let the server compute it. ``activate: true`` activates the version once it
    compiles; ``index: true`` then indexes its card into skill search (reported in ``index``, or
    ``not_indexed_reason`` says why not)."""
    result = service.publish_version(db, rt, principal, body)
    return created(result, replay_status=200)


@router.get("/versions", response_model=Page[SkillVersionSummary])
def list_versions(
    principal: SkillsRead,
    db: DbDep,
    page: PageDep,
    skill_name: Annotated[str | None, Query(max_length=200)] = None,
    active: Annotated[
        bool | None, Query(description="Only active (true) or inactive (false) versions")
    ] = None,
) -> Page[SkillVersionSummary]:
    """List published versions (without bodies), newest first."""
    return service.list_versions(db, principal, page, skill_name=blank_to_none(skill_name), active=active)


@router.get("/versions/active", response_model=SkillVersion)
def active_version(principal: SkillsRead, db: DbDep, skill_name: SkillNameQuery) -> SkillVersion:
    """The active version of a skill, with its body; 404 when none is active."""
    return service.active_version(db, principal, skill_name)


@router.get("/versions/{version_id}", response_model=SkillVersion)
def get_version(version_id: UUID, principal: SkillsRead, db: DbDep) -> SkillVersion:
    """One version with its body."""
    return service.get_version(db, principal, version_id)


@router.post("/versions/{version_id}/activate", response_model=SkillVersion)
def activate_version(version_id: UUID, principal: SkillsWrite, db: DbDep) -> SkillVersion:
    """Make this the skill's only active version (idempotent)."""
    return service.activate_version(db, principal, version_id)


@router.get("/stats", response_model=SkillStats)
def skill_stats(principal: SkillsRead, db: DbDep, skill_name: SkillNameQuery) -> SkillStats:
    """Run counts, trigger rate and outcome rates of one skill, overall and per version."""
    return service.stats(db, principal, skill_name)


@router.get("/signals", response_model=SkillSignals)
def skill_signals(
    principal: SkillsRead,
    db: DbDep,
    skill_name: SkillNameQuery,
    limit: Annotated[int, Query(ge=1, le=service.MAX_SIGNALS, description="1..50")] = 10,
) -> SkillSignals:
    """Recent failures, partial runs and user corrections of one skill, newest first."""
    return service.signals(db, principal, skill_name, limit)


# The sub-domains' routes (registry: sources and ingest; compile; catalog; search; quality runs) live in their
# sub-packages; they are served as part of this router, in this order, so the skills group is one router (the
# function and the parity test read it).
def _include_sub_domains() -> None:
    from agentmate.skills.catalog.router import router as catalog_router
    from agentmate.skills.compile.router import router as compile_router
    from agentmate.skills.quality.router import router as quality_router
    from agentmate.skills.registry.router import router as registry_router
    from agentmate.skills.search.router import router as search_router

    for sub in (registry_router, compile_router, catalog_router, search_router, quality_router):
        router.routes.extend(sub.routes)


_include_sub_domains()
