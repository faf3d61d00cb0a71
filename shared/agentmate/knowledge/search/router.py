"""Knowledge retrieval routes (spec/001 K2): index active revisions, hybrid chunk search, document links.
Mounted in the knowledge function beside the source routes (``knowledge.sources.router``).
MCP twin: ``agentmate.mcp.tools.knowledge.search``."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from fastapi import Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, KnowledgeRead, KnowledgeWrite, PageDep, RetrievalDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.knowledge.search.schemas import (
    KnowledgeDocumentLinks,
    KnowledgeIndexReport,
    KnowledgeIndexRequest,
    KnowledgeSearchRequest,
    KnowledgeSearchResult,
)

if TYPE_CHECKING:
    from agentmate.knowledge.search import index
    from agentmate.knowledge.search import service as search
else:  # the use cases load on the first request that needs them (cold start)
    index = lazy_module("agentmate.knowledge.search.index")
    search = lazy_module("agentmate.knowledge.search.service")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)
NO_STORE = {"Cache-Control": "private, no-store"}


@router.post(
    "/index",
    response_model=KnowledgeIndexReport,
    responses={
        202: {
            "model": KnowledgeIndexReport,
            "description": "Too much for one request: the sources done inline are listed "
            "and the job in `job` indexes the rest (GET /api/knowledge/jobs/{job.id})",
        }
    },
)
def index_active(
    principal: KnowledgeWrite, db: DbDep, rt: RetrievalDep, body: KnowledgeIndexRequest | None = None
) -> JSONResponse:
    """Chunk-index the active revision of one source (source_id) or of every source with one, into the
    knowledge retrieval namespace, and rebuild their document link graphs; rows of earlier revisions are
    removed. At most 200 sources and 20 s inline (200); past that 202 with the sources done so far and the
    knowledge_index job that continues where the request stopped (unchanged chunks are not embedded again)."""
    report = index.index_active(db, rt, principal, body or KnowledgeIndexRequest())
    return JSONResponse(report.model_dump(mode="json"), status_code=202 if report.job is not None else 200)


@router.post("/search", response_model=KnowledgeSearchResult)
def search_chunks(
    body: KnowledgeSearchRequest, principal: KnowledgeRead, db: DbDep, rt: RetrievalDep, response: Response
) -> KnowledgeSearchResult:
    """Hybrid lexical + semantic search over indexed chunks. domain resolves to that domain's sources and is
    intersected with source_ids (it only narrows). Hits carry document/source/revision provenance, heading path,
    score, a 240-character snippet and up to 16 one-hop link neighbours; the chunk body only with
    include_content=true. A failed leg is listed in degraded; every search is logged and its query_id returned."""
    response.headers.update(NO_STORE)
    return search.search(db, rt, principal, body)


@router.get("/documents/{doc_id}/links", response_model=KnowledgeDocumentLinks)
def document_links(
    doc_id: UUID, principal: KnowledgeRead, db: DbDep, page: PageDep, response: Response
) -> KnowledgeDocumentLinks:
    """Both directions of one document's package-internal links: outgoing links keep the target path (with a
    null document_id when dangling), incoming links carry the linking document's path. Links exist once the
    document's revision has been indexed (indexed)."""
    response.headers.update(NO_STORE)
    return search.document_links(db, principal, doc_id, page)
