"""Wire models of the K0 catalog: the card of one source with an active revision, and a page of cards with the
account's domain roster."""

from __future__ import annotations

from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

from agentmate.core.pagination import Page

MAX_CATALOG_QUERY = 200
MAX_DOMAIN = 200  # as the context pack's knowledge_domain and the search domain filter


IndexStatus = Literal["not_indexed", "indexed", "partial"]


class KnowledgeCatalogCard(BaseModel):
    """K0 card of one source with an active revision: what discovery matches against."""

    source_id: UUID
    source_name: str
    revision_id: UUID = Field(description="The source's active revision")
    name: str = Field(description="KNOWLEDGE.yaml name")
    description: str | None
    profile: str | None
    language: str | None = Field(
        description="KNOWLEDGE.yaml language as written (also folded into languages)"
    )
    citation_policy: Literal["required", "optional"] | None
    capabilities: list[str]
    languages: list[str] = Field(description="KNOWLEDGE.yaml languages with the singular language folded in")
    domain: str | None = Field(description="First package_path segment of a two-or-more-segment path")
    document_count: int
    package_hash: str
    index_status: IndexStatus = Field(
        description="Chunk index of the active revision: not_indexed (POST /api/knowledge/index has not run on "
        "it), indexed, or partial (some documents or chunks failed or were truncated)"
    )
    waiting_chunks: int = Field(
        default=0,
        description="The source's chunks still waiting for their vector (the embedding endpoint or the vector "
        "index failed while it was indexed): search finds them through its lexical leg meanwhile, and the "
        "knowledge_index_heal job indexes them again once the dependency is back; 0 when none waits",
    )


class KnowledgeDomainCount(BaseModel):
    domain: str | None = Field(description="null groups the sources whose package_path has no domain")
    collections: int


class KnowledgeCatalog(Page[KnowledgeCatalogCard]):
    domains: list[KnowledgeDomainCount] = Field(
        description="The account's whole domain roster (every card, whatever the filters), with collection counts"
    )
