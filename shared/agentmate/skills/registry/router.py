"""Skills registry routes (spec/001 "Skills"): sources, snapshots, sync, compile, catalog, L1/L2 loads, index,
search and quality runs. Mounted beside the skill-record routes in the skills function."""

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, PageDep, RetrievalDep, SkillsRead, SkillsWrite
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.routing import LAMBDA_BODY_LIMIT, max_body
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none
from agentmate.packages.schemas import Revision, Source, SourceInput
from agentmate.skills.registry.schemas import (
    SkillCatalogItem,
    SkillCompileReport,
    SkillCompileRequest,
    SkillIndexReport,
    SkillIndexRequest,
    SkillIngestResult,
    SkillInstructions,
    SkillPackageFile,
    SkillQualityRun,
    SkillQualityRunRequest,
    SkillQualityRunSummary,
    SkillResource,
    SkillResourceContent,
    SkillSearchRequest,
    SkillSearchResponse,
    SkillSnapshotPush,
    SkillSyncRequest,
)

if TYPE_CHECKING:
    from agentmate.skills.registry import service as registry
else:  # the use cases (compiler, quality checks, package ingest, retrieval) load on the first request that needs them
    registry = lazy_module("agentmate.skills.registry.service")

router = APIRouter(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)

Reader = SkillsRead
Writer = SkillsWrite
NO_STORE = {"Cache-Control": "private, no-store"}


def _no_store(response: Response) -> None:
    response.headers.update(NO_STORE)


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


def _report(report: SkillCompileReport | SkillIndexReport) -> JSONResponse:
    return JSONResponse(report.model_dump(mode="json"), status_code=202 if report.job is not None else 200)


QUEUED = "Too much for one request: queued as the job in `job` (GET /api/knowledge/jobs/{job.id})"


@router.post(
    "/compile",
    response_model=SkillCompileReport,
    responses={202: {"model": SkillCompileReport, "description": QUEUED}},
)
def compile_versions(principal: Writer, db: DbDep, body: SkillCompileRequest | None = None) -> JSONResponse:
    """Compile one version (skill_version_id), or backfill every active version when it is omitted: inline up to
    200 versions within 20 s, otherwise 202 with the job that compiles them all."""
    return _report(registry.compile_versions(db, principal, body or SkillCompileRequest()))


@router.get("/catalog", response_model=Page[SkillCatalogItem])
def catalog(
    principal: Reader,
    db: DbDep,
    page: PageDep,
    query: Annotated[
        str | None, Query(max_length=200, description="Substring of name or description")
    ] = None,
) -> Page[SkillCatalogItem]:
    """Active skills' L0 cards ordered by skill name (stable pages); a basic card where no artifact exists."""
    return registry.catalog(db, principal, page, blank_to_none(query))


@router.get("/versions/{version_id}/instructions", response_model=SkillInstructions)
def version_instructions(
    version_id: UUID, principal: Reader, db: DbDep, response: Response
) -> SkillInstructions:
    """L1: the SKILL.md instructions of a version (Cache-Control: private, no-store)."""
    _no_store(response)
    return registry.instructions(db, principal, version_id)


@router.get("/versions/{version_id}/resources", response_model=Page[SkillResource])
def version_resources(version_id: UUID, principal: Reader, db: DbDep, page: PageDep) -> Page[SkillResource]:
    """L2: the version's resource manifest (kind, MIME type, size, indexability, text availability), no content."""
    return registry.resources(db, principal, version_id, page)


@router.get("/versions/{version_id}/resources/{file_id}", response_model=SkillResourceContent)
def version_resource(
    version_id: UUID, file_id: UUID, principal: Reader, db: DbDep, response: Response
) -> SkillResourceContent:
    """One selected text resource with its content (Cache-Control: private, no-store)."""
    _no_store(response)
    return registry.resource(db, principal, version_id, file_id)


@router.get("/versions/{version_id}/files", response_model=Page[SkillPackageFile])
def version_files(version_id: UUID, principal: Reader, db: DbDep, page: PageDep) -> Page[SkillPackageFile]:
    """Compatibility listing of the version's package file records (no content)."""
    return registry.files(db, principal, version_id, page)


@router.post(
    "/index",
    response_model=SkillIndexReport,
    responses={202: {"model": SkillIndexReport, "description": QUEUED}},
)
def index_active(
    principal: Writer, db: DbDep, rt: RetrievalDep, body: SkillIndexRequest | None = None
) -> JSONResponse:
    """Index active skills' L0 cards into skill search (cards only: instructions never enter the index): inline
    up to 200 versions, otherwise 202 with the job that indexes them all."""
    return _report(registry.index_active(db, rt, principal, body or SkillIndexRequest()))


@router.post("/search", response_model=SkillSearchResponse)
def search(
    body: SkillSearchRequest, principal: Reader, db: DbDep, rt: RetrievalDep, response: Response
) -> SkillSearchResponse:
    """Hybrid search over indexed active cards; include_content=true loads each hit's L1 from Postgres."""
    if body.include_content:
        _no_store(response)
    return registry.search(db, rt, principal, body)


@router.post("/versions/{version_id}/quality-runs", status_code=201, response_model=SkillQualityRun)
def run_quality(
    version_id: UUID, principal: Writer, db: DbDep, body: SkillQualityRunRequest | None = None
) -> SkillQualityRun:
    """Run the offline deterministic quality checks (optional same-skill baseline_version_id); stores the report."""
    return registry.run_quality(db, principal, version_id, body or SkillQualityRunRequest())


@router.get("/versions/{version_id}/quality-runs", response_model=Page[SkillQualityRunSummary])
def list_quality_runs(
    version_id: UUID, principal: Reader, db: DbDep, page: PageDep
) -> Page[SkillQualityRunSummary]:
    """Quality run summaries of a version (no reports), newest first."""
    return registry.list_quality_runs(db, principal, version_id, page)


@router.get("/quality-runs/{run_id}", response_model=SkillQualityRun)
def get_quality_run(run_id: UUID, principal: Reader, db: DbDep) -> SkillQualityRun:
    """One quality run with its full report."""
    return registry.get_quality_run(db, principal, run_id)
