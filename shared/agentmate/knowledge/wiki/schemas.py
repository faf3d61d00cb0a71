"""Wire models of the wiki compiler (spec/001 "Wiki compiler (K3)")."""

from datetime import datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agentmate.core.inputs import Bool
from agentmate.jobs.schemas import JobView
from agentmate.knowledge.search.schemas import KnowledgeSearchRequest
from agentmate.retrieval.schemas import HitLegs

BuildMode = Literal["full", "incremental"]
BuildStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
CheckStatus = Literal["pending", "passed", "failed"]
Independence = Literal["cross_provider", "same_provider", "same_model", "unavailable"]


class CompileRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "revision_id": "a compile always uses the source's active revision: send source_id",
        "build_id": "send source_id; the build is created by this call",
        "incremental": 'send mode: "incremental"',
        "activate_on_success": "the flag is activate",
    }

    source_id: UUID = Field(description="The knowledge source whose active revision is compiled")
    mode: BuildMode = Field(
        default="full",
        description="full: compile every document; incremental: recompile only "
        "the pages a change since the parent build touches",
    )
    force: Bool = Field(
        default=False, description="Queue a build even when one with the same input identity exists"
    )
    activate: Bool = Field(default=True, description="Point the source's wiki at the build when it succeeds")


class CheckFailure(BaseModel):
    rule: str
    page_path: str | None = None
    detail: str


class AttemptUsage(BaseModel):
    attempt: int
    input_tokens: int
    output_tokens: int
    cost_micros: int
    outcome: str
    error: str | None = None


class ProfileRef(BaseModel):
    id: UUID
    name: str
    version: int


class WikiBuild(BaseModel):
    id: UUID
    source_id: UUID
    source_revision_id: UUID
    raw_package_hash: str
    profile: ProfileRef
    compiler_version: str
    prompt_version: str
    model: str
    reviewer_model: str | None
    reviewer_independence: Independence
    parent_build_id: UUID | None
    mode: BuildMode
    status: BuildStatus
    check_status: CheckStatus
    check_failures: list[CheckFailure]
    review_status: str
    activate_on_success: bool
    forced: bool
    job_id: UUID | None
    is_active: bool
    attempts: int
    attempt_usage: list[AttemptUsage]
    pages_written: int
    pages_reused: int
    input_tokens: int
    output_tokens: int
    cost_micros: int
    cost_priced: bool
    impact: dict[str, Any] | None = Field(
        default=None, description="Incremental builds: changed documents, scheduled pages and why"
    )
    error: str | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class CompileResult(BaseModel):
    build: WikiBuild
    queued: bool = Field(
        description="true: a new build was queued (202); false: an existing build matched (200)"
    )
    warnings: list[str]


class PageMeta(BaseModel):
    path: str
    kind: str
    title: str
    content_hash: str
    chars: int
    citation_count: int
    link_count: int
    derived_from_build_id: UUID | None = Field(
        description="Set on pages carried over by an incremental build: the "
        "build whose model run wrote the text"
    )


class Citation(BaseModel):
    document_id: UUID | None
    document_path: str
    heading_path: str
    claim: str
    excerpt: str


class PageLink(BaseModel):
    path: str = Field(
        description="The other page: the target of an outbound link, the linking page of an inbound"
    )
    link_type: str
    exists: bool


class WikiPage(PageMeta):
    build_id: UUID
    content: str
    citations: list[Citation]
    links_out: list[PageLink]
    links_in: list[PageLink]


class DiffEntry(BaseModel):
    path: str
    from_hash: str | None
    to_hash: str | None


class BuildDiff(BaseModel):
    build_id: UUID
    from_build_id: UUID | None
    added: list[DiffEntry]
    removed: list[DiffEntry]
    changed: list[DiffEntry]
    unchanged: int


class BuildEvent(BaseModel):
    sequence_no: int
    event_type: str
    page_path: str | None
    detail: str
    payload: dict[str, Any]
    created_at: datetime


class ActivateResult(BaseModel):
    source_id: UUID
    active_build_id: UUID
    previous_build_id: UUID | None = Field(description="Activate this to undo the activation")
    index: "WikiIndexOutcome | None" = Field(
        default=None,
        description="The wiki index re-run inline for the activated build (a small build); null "
        "when the index already reflected it or the re-index was queued as index_job",
    )
    index_job: JobView | None = Field(
        default=None,
        description="The wiki_index job re-indexing the activated build (a large build, or an "
        "inline run that failed): GET /api/knowledge/jobs/{index_job.id}; until it "
        "finishes wiki search reports the source in stale",
    )


# -- wiki retrieval (K3.6) -----------------------------------------------------------------------------------


class WikiSearchRequest(KnowledgeSearchRequest):
    """The knowledge search body (query, top_k, domain, source_ids, include_content, min_similarity), over the
    compiled pages of each source's active build; include_content returns each hit page's full body."""


class WikiDegraded(BaseModel):
    leg: str
    reason: str


class WikiIndexState(BaseModel):
    source_id: UUID
    name: str
    active_build_id: UUID | None
    indexed_build_id: UUID | None = Field(description="The build the wiki index reflects")
    wiki_indexed_at: datetime | None
    stale: bool = Field(
        description="The index does not reflect the active build: search returns fewer hits for "
        "this source until POST /api/knowledge/wiki/index runs"
    )


class WikiSearchHit(HitLegs):
    """A page; ``channels`` and the leg scores are those of its best-matching chunk."""

    rank: int
    score: float
    source_id: UUID
    knowledge_base: str
    domain: str | None
    build_id: UUID
    path: str
    title: str
    kind: str
    heading_path: str = Field(description="Heading path of the best-matching chunk of the page")
    matched_chunks: int = Field(description="Chunks of this page among the matches (a page is listed once)")
    snippet: str
    content: str | None = Field(description="The page body, with include_content=true")
    derived_from_build_id: UUID | None = Field(
        description="Set when an incremental build carried the page over: "
        "the build whose model run wrote the text"
    )
    citations: list[Citation]
    links_out: list[PageLink]
    links_in: list[PageLink]


class WikiSearchResult(BaseModel):
    query_id: UUID = Field(description="This wiki search in the query log")
    raw_query_id: UUID | None = Field(
        description="The raw-document search run with the same query (logged too)"
    )
    raw_hits: int = Field(description="Raw document chunks the same query found")
    items: list[WikiSearchHit]
    total: int
    degraded: list[WikiDegraded]
    stale: list[WikiIndexState] = Field(description="Searched sources whose index lags their active build")
    filtered_by_min_similarity: int | None = Field(
        default=None,
        description="Matching chunks dropped by min_similarity (absent when it was not sent)",
        exclude_if=lambda v: v is None,
    )


class WikiIndexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source_id: UUID | None = Field(
        default=None, description="One source; omitted: every source with an active build"
    )


class WikiIndexOutcome(BaseModel):
    source_id: UUID
    build_id: UUID
    pages: int
    chunks: int
    failed_chunks: int
    removed_chunks: int = Field(description="Index rows of earlier builds removed")
    status: Literal["indexed", "partial"]
    error: str | None


class WikiIndexReport(BaseModel):
    items: list[WikiIndexOutcome]
    total: int


class WikiIndexStatus(BaseModel):
    items: list[WikiIndexState]
    stale_count: int


ActivateResult.model_rebuild()
