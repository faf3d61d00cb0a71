"""Request and response models of knowledge index, search and document links (spec/001 K2, prior-art §4.6)."""

from datetime import datetime
from typing import Annotated, ClassVar, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from agentmate.core.inputs import Bool, Int, Number
from agentmate.core.text import no_nul
from agentmate.jobs.schemas import JobView
from agentmate.retrieval.schemas import LEXICAL_MATCHED, LEXICAL_SCORE, MIN_SIMILARITY, VECTOR_SCORE

MAX_QUERY_CHARS = 500
MAX_TOP_K = 20
DEFAULT_TOP_K = 5
MAX_SOURCE_IDS = 16
MAX_NEIGHBOURS = 16

SearchText = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_QUERY_CHARS),
    AfterValidator(no_nul),
]


def _is_none(value: object) -> bool:
    return value is None


def _unique(ids: list[UUID]) -> list[UUID]:
    return list(dict.fromkeys(ids))


# --- index ------------------------------------------------------------------------------------------------------


class KnowledgeIndexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "source_ids": "index one source (source_id) or omit it for every source with an active revision",
        "revision_id": "the active revision of the source is indexed: name its source_id",
    }
    source_id: UUID | None = Field(
        default=None, description="Only this source (default: every source with an active revision)"
    )


class KnowledgeIndexOutcome(BaseModel):
    source_id: UUID
    name: str
    revision_id: UUID
    status: Literal["indexed", "partial"] = Field(
        description="partial: some chunks failed to embed (they still serve the lexical leg)"
    )
    documents: int = Field(description="Text documents chunked")
    chunks: int
    failed_chunks: int
    truncated_documents: int = Field(description="Documents cut at 256 chunks")
    links: int = Field(description="Package-internal links stored (dangling included)")
    dangling_links: int = Field(description="Links whose target is not a document of the revision")
    escaping_links: int = Field(description="Links leaving the package: dropped")
    removed_chunks: int = Field(
        description="Retrieval rows of earlier revisions or no longer produced, removed"
    )
    error: str | None = Field(
        default=None, description="The first embedding error, when chunks failed", exclude_if=_is_none
    )


class KnowledgeIndexReport(BaseModel):
    """The sources indexed inline; when the run did not fit one request (202), also the ``job`` that indexes the
    rest (GET /api/knowledge/jobs/{job.id}; its result carries the counts)."""

    items: list[KnowledgeIndexOutcome]
    indexed: int = Field(description="Sources fully indexed (inline)")
    partial: int
    total: int
    job: JobView | None = Field(
        default=None,
        description="With 202: the knowledge_index job that continues the run where the request stopped",
    )
    waiting: int = Field(
        default=0,
        description="The account's knowledge chunks still waiting for their vector (the embedder or the vector "
        "index failed): a knowledge_index_heal job indexes them again with backoff once it is back "
        "(GET /api/knowledge/jobs); search finds them through the lexical leg meanwhile",
    )


# --- search -----------------------------------------------------------------------------------------------------


class KnowledgeSearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "q": "the search text is query",
        "text": "the search text is query",
        "limit": "the number of hits is top_k",
        "source_id": "use source_ids (a list of at most 16)",
        "knowledge_domain": "use domain",
        "content": "set include_content=true for chunk bodies",
    }
    query: SearchText = Field(description=f"At most {MAX_QUERY_CHARS} characters")
    top_k: Int = Field(default=DEFAULT_TOP_K, ge=1, le=MAX_TOP_K)
    domain: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] | None = (
        Field(
            default=None,
            description="Only sources of this domain; intersected with source_ids (it only narrows)",
        )
    )
    source_ids: Annotated[list[UUID], AfterValidator(_unique)] = Field(
        default_factory=list, max_length=MAX_SOURCE_IDS, description="Only these sources (at most 16)"
    )
    include_content: Bool = Field(default=False, description="Return each hit's full chunk body")
    min_similarity: Number | None = Field(default=None, ge=-1, le=1, description=MIN_SIMILARITY)


class KnowledgeNeighbour(BaseModel):
    direction: Literal["outgoing", "incoming"]
    path: str = Field(description="outgoing: the target path; incoming: the linking document's path")
    document_id: UUID | None = Field(description="null for a dangling outgoing link")


class KnowledgeSearchHit(BaseModel):
    rank: int
    score: float = Field(description="Fused rank score: 1.0 = first in both legs, 0.5 = first in one")
    channels: list[Literal["lexical", "vector"]]
    lexical_score: float | None = Field(description=LEXICAL_SCORE)
    vector_score: float | None = Field(description=VECTOR_SCORE)
    lexical_matched: bool = Field(description=LEXICAL_MATCHED)
    source_id: UUID
    knowledge_base: str = Field(description="The source's name")
    domain: str | None
    revision_id: UUID
    document_id: UUID
    path: str
    heading_path: str
    chunk_key: str
    citation: str = Field(description="path, or 'path # heading path'")
    snippet: str = Field(description="The first 240 characters of the chunk body")
    content: str | None = Field(
        default=None, description="The chunk body (only with include_content)", exclude_if=_is_none
    )
    links: list[KnowledgeNeighbour] = Field(description="One-hop links of the document, metadata only (≤ 16)")


class KnowledgeDegraded(BaseModel):
    leg: Literal["lexical", "vector"]
    reason: str


class KnowledgeSourceIndexState(BaseModel):
    """A searched source whose chunk index does not reflect its active revision (the shape of wiki search's
    ``stale``): its hits, if any, are the text of ``indexed_revision_id``, not of the active revision."""

    source_id: UUID
    name: str
    active_revision_id: UUID
    indexed_revision_id: UUID | None = Field(
        description="The revision the chunk index reflects (null: never indexed, so no hit comes from it)"
    )
    indexed_at: datetime | None
    stale: bool = Field(
        default=True,
        description="The index does not reflect the active revision: search serves the older text (or nothing) "
        "for this source until it is indexed: POST /api/knowledge/index, over MCP knowledge_index_active (or a push "
        "or sync with index=true)",
    )


class KnowledgeSearchResult(BaseModel):
    query_id: UUID = Field(
        description="This search's retrieval_queries record (validation signals refer to it)"
    )
    items: list[KnowledgeSearchHit]
    total: int
    degraded: list[KnowledgeDegraded] = Field(
        default_factory=list, description="Search legs that failed; the others still answered"
    )
    stale: list[KnowledgeSourceIndexState] = Field(
        default_factory=list,
        description="Searched sources whose chunk index lags their active revision (a push since the last "
        "index run): their hits are older text, or none, until POST /api/knowledge/index (MCP: "
        "knowledge_index_active) indexes them",
    )
    filtered_by_min_similarity: int | None = Field(
        default=None, exclude_if=_is_none, description="Hits dropped by min_similarity (absent when unsent)"
    )
    note: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Why nothing was searched (the filters select no source)",
    )


# --- document links ---------------------------------------------------------------------------------------------


class KnowledgeDocumentLink(BaseModel):
    direction: Literal["outgoing", "incoming"]
    path: str = Field(
        description="outgoing: the target path (kept when dangling); incoming: the linking path"
    )
    document_id: UUID | None = Field(
        description="outgoing: the target (null when dangling); incoming: the linking document"
    )
    kind: Literal["link", "image", "reference"]


class KnowledgeDocumentLinks(BaseModel):
    document_id: UUID
    path: str
    source_id: UUID
    revision_id: UUID
    indexed: bool = Field(
        description="Whether the document's revision has been indexed (links exist only then)"
    )
    items: list[KnowledgeDocumentLink]
    total: int
    limit: int
    offset: int


class KnowledgeIndexState(BaseModel):
    """The last index run of a revision (the catalog's chunk index status)."""

    status: Literal["indexed", "partial"]
    chunks: int
    failed_chunks: int
    indexed_at: datetime
