"""Knowledge source routes (spec/001 "Knowledge"): sources, revisions, sync, snapshots, documents. Mounted with the
other knowledge routers in the knowledge function (functions/knowledge/app.py).
MCP twin: ``agentmate.mcp.tools.knowledge.sources``."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from fastapi import Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, KnowledgeRead, KnowledgeWrite, PageDep, RetrievalDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.routing import LAMBDA_BODY_LIMIT, max_body
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.knowledge.sources.schemas import (
    KnowledgeDocument,
    KnowledgeDocumentContent,
    KnowledgeIngestResult,
    KnowledgeSnapshotPush,
    KnowledgeSyncQueued,
    KnowledgeSyncRequest,
)
from agentmate.packages.schemas import Revision, Source, SourceInput

if TYPE_CHECKING:
    from agentmate.knowledge.sources import service
    from agentmate.packages import service as packages
else:  # the use cases load on the first request that needs them (cold start)
    service = lazy_module("agentmate.knowledge.sources.service")
    packages = lazy_module("agentmate.packages.service")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)


def _ingested(result: KnowledgeIngestResult) -> JSONResponse:
    return JSONResponse(result.model_dump(mode="json"), status_code=201 if result.created else 200)


@router.post("/sources", status_code=201, response_model=Source, responses={200: {"model": Source}})
def register_source(body: SourceInput, principal: KnowledgeWrite, db: DbDep) -> JSONResponse:
    """Register a git (server-pull) or local (client-push) knowledge source, or upsert it by name: 200 when the
    name already names this package (default_ref is updated), 409 when it names a different one. The domain is
    derived from package_path. A git repository_url must be an https URL of a host the deployment allows (else
    400 naming repository_url)."""
    up = service.register_source(db, packages.Actor.of(principal), body)
    return JSONResponse(up.source.model_dump(mode="json"), status_code=201 if up.created else 200)


@router.get("/sources", response_model=Page[Source])
def list_sources(principal: KnowledgeRead, db: DbDep, page: PageDep) -> Page[Source]:
    """List knowledge sources, newest first."""
    return service.list_sources(db, packages.Actor.of(principal), page)


@router.get("/sources/{source_id}", response_model=Source)
def get_source(source_id: UUID, principal: KnowledgeRead, db: DbDep) -> Source:
    """One knowledge source with its status, last error and active revision."""
    return service.get_source(db, packages.Actor.of(principal), source_id)


@router.delete("/sources/{source_id}", status_code=204)
def delete_source(source_id: UUID, principal: KnowledgeWrite, db: DbDep) -> Response:
    """Delete a source with its revisions and documents; 409 while a resolution run selected it."""
    service.delete_source(db, packages.Actor.of(principal), source_id)
    return Response(status_code=204)


@router.get("/sources/{source_id}/revisions", response_model=Page[Revision])
def list_revisions(source_id: UUID, principal: KnowledgeRead, db: DbDep, page: PageDep) -> Page[Revision]:
    """Immutable revisions of a source, newest first."""
    return service.list_revisions(db, packages.Actor.of(principal), source_id, page)


@router.post(
    "/sources/{source_id}/sync",
    status_code=201,
    response_model=KnowledgeIngestResult,
    responses={
        200: {"model": KnowledgeIngestResult},
        202: {
            "model": KnowledgeSyncQueued,
            "description": "The sync ran out of the request's time: it continues "
            "as the job in `job` (GET /api/knowledge/jobs/{job.id})",
        },
    },
)
def sync_source(
    source_id: UUID,
    principal: KnowledgeWrite,
    db: DbDep,
    rt: RetrievalDep,
    body: KnowledgeSyncRequest | None = None,
) -> JSONResponse:
    """Resolve a ref of a git source to an immutable commit and ingest the package at it (public GitHub/GitLab by
    default). 201 for a new revision, 200 when the package hash replays one (the source is re-targeted to it);
    a failure marks the source error and leaves no revision (an unknown ref is a 400 naming ref). A sync that
    runs out of the request's time budget (20 s) answers 202 with a knowledge_sync job that repeats it with the
    worker's budget (the source is pending meanwhile); a package over a size limit stays a 413. With index=true
    the source's active revision is also chunk-indexed after the commit (index: the run's report); without it
    knowledge search keeps serving the previously indexed revision and lists the source in stale."""
    result = service.sync_or_queue(
        db, packages.Actor.of(principal), source_id, body or KnowledgeSyncRequest(), rt=rt
    )
    if isinstance(result, KnowledgeSyncQueued):
        return JSONResponse(result.model_dump(mode="json"), status_code=202)
    return _ingested(result)


@router.post(
    "/sources/{source_id}/snapshots",
    status_code=201,
    response_model=KnowledgeIngestResult,
    responses={200: {"model": KnowledgeIngestResult}},
    openapi_extra=max_body(LAMBDA_BODY_LIMIT),
)
def push_snapshot(
    source_id: UUID, body: KnowledgeSnapshotPush, principal: KnowledgeWrite, db: DbDep, rt: RetrievalDep
) -> JSONResponse:
    """Push a local package snapshot (KNOWLEDGE.yaml at the root; its include/exclude select the documents).
    201 for a new revision, 200 when the package hash replays one (the source is re-targeted to it). A missing
    or invalid manifest is a 400 naming KNOWLEDGE.yaml or KNOWLEDGE.yaml.<field>; each file sends content,
    content_base64, or (binary) sha256 and size_bytes. With index=true the source's active revision is also
    chunk-indexed after the commit (index: the run's report; past the inline budget its job); without it
    knowledge search keeps serving the previously indexed revision and lists the source in stale."""
    return _ingested(service.push_snapshot(db, packages.Actor.of(principal), source_id, body, rt=rt))


@router.get("/revisions/{revision_id}/documents", response_model=Page[KnowledgeDocument])
def list_documents(
    revision_id: UUID, principal: KnowledgeRead, db: DbDep, page: PageDep
) -> Page[KnowledgeDocument]:
    """Document metadata of a revision without bodies, in path order (KNOWLEDGE.yaml is not a document)."""
    return service.list_documents(db, packages.Actor.of(principal), revision_id, page)


@router.get("/revisions/{revision_id}/documents/{document_id}", response_model=KnowledgeDocumentContent)
def get_document(
    revision_id: UUID, document_id: UUID, principal: KnowledgeRead, db: DbDep
) -> KnowledgeDocumentContent:
    """One document with its text snapshot (null content for a binary document); Cache-Control: private,
    no-store."""
    return service.get_document(db, packages.Actor.of(principal), revision_id, document_id)
