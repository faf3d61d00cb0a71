"""Knowledge registry tools: sources, sync, documents and the K0 catalog, over ``agentmate.knowledge.service``
and ``agentmate.knowledge.catalog`` (the same use cases and scopes as the REST routes of
``agentmate.knowledge.router``)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.text import blank_to_none
from agentmate.knowledge import catalog, service
from agentmate.knowledge.schemas import (
    MAX_CATALOG_QUERY,
    MAX_DOMAIN,
    KnowledgeCatalog,
    KnowledgeDocument,
    KnowledgeDocumentContent,
    KnowledgeIngestResult,
    KnowledgeSyncRequest,
)
from agentmate.mcp.context import db, principal
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
) -> KnowledgeIngestResult:
    """Resolve a ref of a registered git knowledge source to an immutable commit and ingest the package at it
    (KNOWLEDGE.yaml at its root selects the documents). An unchanged package replays the existing revision
    (created=false) and re-targets the source to it. A failure marks the source error and leaves no revision.
    Requires knowledge:rw."""
    return service.sync_source(db(), _actor(), source_id, KnowledgeSyncRequest(ref=ref))


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


@tools.tool("knowledge:r", rest="GET /api/knowledge/catalog", title="List the knowledge catalog")
def knowledge_catalog_list(
    query: Annotated[
        str | None,
        Field(
            max_length=MAX_CATALOG_QUERY,
            description="Substring of the name or description (case-insensitive)",
        ),
    ] = None,
    domain: Annotated[
        str | None,
        Field(max_length=MAX_DOMAIN, description="Exact owning domain (see domains in the answer)"),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> KnowledgeCatalog:
    """K0 cards of the knowledge collections (sources with an active revision), ordered by name: manifest
    metadata, capabilities and languages, domain, document count, package hash, chunk index status; plus
    domains, the account's domain roster with collection counts. Requires knowledge:r."""
    return catalog.catalog(
        db(), _actor(), PageParams(limit=limit, offset=offset), blank_to_none(query), blank_to_none(domain)
    )
