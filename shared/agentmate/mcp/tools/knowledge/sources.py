"""Knowledge source tools: sources, sync and documents, over ``agentmate.knowledge.sources.service`` (the same use
cases and scopes as the REST routes).
REST twin: ``agentmate.knowledge.sources.router``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.inputs import Bool
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.knowledge.sources import service
from agentmate.knowledge.sources.schemas import (
    INDEX_FLAG,
    KnowledgeDocument,
    KnowledgeDocumentContent,
    KnowledgeIngestResult,
    KnowledgeSyncRequest,
)
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools
from agentmate.packages.schemas import Source
from agentmate.packages.service import Actor

RevisionId = Annotated[
    UUID,
    Field(
        description="A revision id: a source's active_revision_id (or one of "
        "knowledge_sources_list's sources), or a catalog card's revision_id"
    ),
]


def _actor() -> Actor:
    return Actor.of(principal())


@tools.tool("knowledge:r", rest="GET /api/knowledge/sources", title="List knowledge sources")
def knowledge_sources_list(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[Source]:
    """List the account's knowledge sources (git or local), newest first, with status, last error, domain and
    active_revision_id. Requires knowledge:r."""
    return service.list_sources(db(), _actor(), PageParams(limit=limit, offset=offset))


@tools.tool(
    "knowledge:rw", rest="POST /api/knowledge/sources/{source_id}/sync", title="Sync a git knowledge source"
)
def knowledge_source_sync(
    source_id: Annotated[UUID, Field(description="A git knowledge source id")],
    ref: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=255,
            description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
        ),
    ] = None,
    index: Annotated[Bool, Field(description=INDEX_FLAG)] = False,
) -> KnowledgeIngestResult:
    """Resolve a ref of a registered git knowledge source to an immutable commit and ingest the package at it
    (KNOWLEDGE.yaml at its root selects the documents). An unchanged package replays the existing revision
    (created=false) and re-targets the source to it. A failure marks the source error and leaves no revision.
    index=true also chunk-indexes the new active revision (the result's index); without it knowledge_search
    keeps serving the previously indexed revision and lists the source in stale. Requires knowledge:rw."""
    request = KnowledgeSyncRequest(ref=ref, index=index)
    return service.sync_source(db(), _actor(), source_id, request, rt=retrieval() if index else None)


@tools.tool(
    "knowledge:r",
    rest="GET /api/knowledge/revisions/{revision_id}/documents",
    title="List a revision's documents",
)
def knowledge_documents_list(
    revision_id: RevisionId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[KnowledgeDocument]:
    """Document metadata of a revision (path, sha256, size, MIME type, is_text) without bodies, in path order.
    Requires knowledge:r."""
    return service.list_documents(db(), _actor(), revision_id, PageParams(limit=limit, offset=offset))


@tools.tool(
    "knowledge:r",
    rest="GET /api/knowledge/revisions/{revision_id}/documents/{document_id}",
    title="Read one knowledge document",
)
def knowledge_document_get(
    revision_id: RevisionId,
    document_id: Annotated[UUID, Field(description="A document id from knowledge_documents_list")],
) -> KnowledgeDocumentContent:
    """One document of a revision with its text snapshot (content is null for a binary document). Requires
    knowledge:r."""
    return service.get_document(db(), _actor(), revision_id, document_id)
