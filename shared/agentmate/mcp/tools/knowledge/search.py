"""Knowledge retrieval tools (``/mcp/knowledge``): knowledge_search, knowledge_index_active and
knowledge_document_links over ``agentmate.knowledge.search`` (``index``, ``service``): the same services and scopes as
the REST routes.
REST twin: ``agentmate.knowledge.search.router``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.errors import invalid
from agentmate.core.pagination import DEFAULT_LIMIT, PageParams
from agentmate.knowledge.search import index
from agentmate.knowledge.search import service as search
from agentmate.knowledge.search.schemas import (
    DEFAULT_TOP_K,
    MAX_QUERY_CHARS,
    MAX_SOURCE_IDS,
    MAX_TOP_K,
    KnowledgeDocumentLinks,
    KnowledgeIndexReport,
    KnowledgeIndexRequest,
    KnowledgeSearchRequest,
    KnowledgeSearchResult,
)
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools


@tools.tool(
    "knowledge:r", rest="POST /api/knowledge/search", title="Search knowledge", hints=KnowledgeSearchRequest
)
def knowledge_search(
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS, description="What to look up")],
    top_k: Annotated[
        int, Field(ge=1, le=MAX_TOP_K, description=f"Hits, 1..{MAX_TOP_K} (default {DEFAULT_TOP_K})")
    ] = DEFAULT_TOP_K,
    domain: Annotated[
        str | None,
        Field(min_length=1, max_length=200, description="Only sources of this domain (narrows source_ids)"),
    ] = None,
    source_ids: Annotated[
        list[UUID] | None, Field(max_length=MAX_SOURCE_IDS, description="Only these sources (at most 16)")
    ] = None,
    include_content: Annotated[bool, Field(description="Return each hit's full chunk body")] = False,
    min_similarity: Annotated[
        float | None,
        Field(
            ge=-1,
            le=1,
            description="Drop hits whose raw vector similarity is below this unless the words matched",
        ),
    ] = None,
) -> KnowledgeSearchResult:
    """Hybrid lexical + semantic search over indexed knowledge chunks. Each hit carries source/revision/document
    provenance, path, heading_path, a citation ('path # heading path'), a 240-character snippet and up to 16 one-hop
    link neighbours; the body only with include_content=true. degraded lists a failed search leg; stale lists
    searched sources whose index lags their active revision (their hits are older text): run
    knowledge_index_active. query_id is the logged search. Requires knowledge:r."""
    return search.search(
        db(),
        retrieval(),
        principal(),
        KnowledgeSearchRequest(
            query=query,
            top_k=top_k,
            domain=domain,
            source_ids=source_ids or [],
            include_content=include_content,
            min_similarity=min_similarity,
        ),
    )


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/index",
    title="Index active knowledge revisions",
    hints=KnowledgeIndexRequest,
)
def knowledge_index_active(
    source_id: Annotated[
        UUID | None, Field(description="Only this source (default: every source with an active revision)")
    ] = None,
) -> KnowledgeIndexReport:
    """Chunk-index the active revision of one or every knowledge source into knowledge search and rebuild the
    document link graph; rows of earlier revisions are removed. At most 200 sources and 20 s per call: past that
    the sources done so far are listed and `job` is set, the knowledge_index job that continues where the call
    stopped (read it with GET /api/knowledge/jobs/{id}). Requires knowledge:rw."""
    return index.index_active(db(), retrieval(), principal(), KnowledgeIndexRequest(source_id=source_id))


@tools.tool(
    "knowledge:r", rest="GET /api/knowledge/documents/{doc_id}/links", title="Knowledge document links"
)
def knowledge_document_links(
    document_id: Annotated[
        UUID | None,
        Field(description="A knowledge document id (a knowledge_search hit's or knowledge_documents_list's)"),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
    doc_id: Annotated[UUID | None, Field(description="Alias of document_id (the REST path's name)")] = None,
) -> KnowledgeDocumentLinks:
    """Both directions of one document's package-internal links: outgoing (target path, document_id null when
    dangling) first, then incoming (the linking document's path). Name the document with document_id (doc_id is
    accepted as its alias). Requires knowledge:r."""
    if document_id is not None and doc_id is not None and document_id != doc_id:
        raise invalid(
            "doc_id", "doc_id is an alias of document_id: send one of them (or the same id in both)"
        )
    target = document_id or doc_id
    if target is None:
        raise invalid(
            "document_id", "field required (a knowledge document id; doc_id is accepted as its alias)"
        )
    return search.document_links(db(), principal(), target, PageParams(limit=limit, offset=offset))
