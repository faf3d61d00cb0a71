"""Skill sources and their ingest (spec/001 "Skills"): register, list, delete, revisions, snapshots, git sync.
MCP face: ``agentmate.mcp.tools.skills.registry``."""

from typing import TYPE_CHECKING
from uuid import UUID

from fastapi import Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, PageDep, RetrievalDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.routing import LAMBDA_BODY_LIMIT, max_body
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.packages.schemas import Revision, Source, SourceInput
from agentmate.skills.registry.schemas import SkillIngestResult, SkillSnapshotPush, SkillSyncRequest

if TYPE_CHECKING:
    from agentmate.skills.registry import service as registry
else:  # the use cases load on the first request that needs them
    registry = lazy_module("agentmate.skills.registry.service")

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
Reader = SkillsRead
Writer = SkillsWrite


def _ingested(result: SkillIngestResult) -> JSONResponse:
    return JSONResponse(result.model_dump(mode="json"), status_code=201 if result.created else 200)


@router.post("/sources", status_code=201, response_model=Source, responses={200: {"model": Source}})
def register_source(body: SourceInput, principal: Writer, db: DbDep) -> JSONResponse:
    """Register a git (server-pull) or local (client-push) skill source; 200 when the name already names this
    package (default_ref is updated), 409 when it names a different one."""
    up = registry.register_source(db, principal, body)
    return JSONResponse(up.source.model_dump(mode="json"), status_code=201 if up.created else 200)


@router.get("/sources", response_model=Page[Source])
def list_sources(principal: Reader, db: DbDep, page: PageDep) -> Page[Source]:
    """List skill sources, newest first."""
    return registry.list_sources(db, principal, page)


@router.get("/sources/{source_id}", response_model=Source)
def get_source(source_id: UUID, principal: Reader, db: DbDep) -> Source:
    """One skill source with its status, last error and active revision."""
    return registry.get_source(db, principal, source_id)


@router.delete("/sources/{source_id}", status_code=204)
def delete_source(source_id: UUID, principal: Writer, db: DbDep) -> Response:
    """Delete a source with its revisions and versions; 409 while a skill log or quality run references one."""
    registry.delete_source(db, principal, source_id)
    return Response(status_code=204)


@router.get("/sources/{source_id}/revisions", response_model=Page[Revision])
def list_revisions(source_id: UUID, principal: Reader, db: DbDep, page: PageDep) -> Page[Revision]:
    """Immutable revisions of a source, newest first."""
    return registry.list_revisions(db, principal, source_id, page)


@router.post(
    "/sources/{source_id}/snapshots",
    status_code=201,
    response_model=SkillIngestResult,
    responses={200: {"model": SkillIngestResult}},
    openapi_extra=max_body(LAMBDA_BODY_LIMIT),
)
def push_snapshot(
    source_id: UUID, body: SkillSnapshotPush, principal: Writer, db: DbDep, rt: RetrievalDep
) -> JSONResponse:
    """Push a local package snapshot (SKILL.md at the root); sha256 and package_hash are derived when omitted.
    201 for a new revision, 200 when the package hash replays one. The artifact is compiled after the commit."""
    return _ingested(registry.push_snapshot(db, rt, principal, source_id, body))


@router.post(
    "/sources/{source_id}/sync",
    status_code=201,
    response_model=SkillIngestResult,
    responses={200: {"model": SkillIngestResult}},
)
def sync_source(
    source_id: UUID, principal: Writer, db: DbDep, rt: RetrievalDep, body: SkillSyncRequest | None = None
) -> JSONResponse:
    """Resolve a ref of a git source to a commit and ingest the package at it (public GitHub/GitLab by default);
    a failure marks the source error and leaves no revision."""
    return _ingested(registry.sync_source(db, rt, principal, source_id, body or SkillSyncRequest()))
