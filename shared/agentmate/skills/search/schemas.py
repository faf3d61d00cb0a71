"""Wire models of skill card indexing and skill search."""

from typing import ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agentmate.core.inputs import Bool, Number
from agentmate.jobs.schemas import JobView
from agentmate.retrieval.schemas import MIN_SIMILARITY, HitLegs
from agentmate.skills.catalog.schemas import SkillCard

MAX_SEARCH_TOP_K = 50


class SkillIndexOutcome(BaseModel):
    skill_version_id: UUID
    status: Literal["indexed", "failed"]
    error: str | None = None


class SkillIndexRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    skill_name: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="Only this skill's active card (default: every active card)",
    )


class SkillIndexReport(BaseModel):
    """Inline results; or, when the work is too large for a request (202), no items and the ``job`` that does it
    (read it at GET /api/knowledge/jobs/{job.id}; its result carries the counts)."""

    items: list[SkillIndexOutcome]
    indexed: int
    failed: int
    total: int
    job: JobView | None = None
    waiting: int = Field(
        default=0,
        description="The account's skill cards still waiting for their vector (the embedder or the vector index "
        "failed): a skills_index_heal job indexes them again with backoff once it is back "
        "(GET /api/knowledge/jobs); search finds them through the lexical leg meanwhile",
    )


class SkillSearchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "q": "the search text is query",
        "text": "the search text is query",
        "limit": "the number of hits is top_k",
        "k": "the number of hits is top_k",
        "content": "set include_content=true to load L1 instructions",
    }
    query: str = Field(min_length=1, max_length=1000)
    top_k: int = Field(default=5, ge=1, le=MAX_SEARCH_TOP_K)
    include_content: Bool = Field(default=False, description="Load each hit's L1 instructions from Postgres")
    min_similarity: Number | None = Field(default=None, ge=-1, le=1, description=MIN_SIMILARITY)


class SkillSearchHit(HitLegs):
    skill_version_id: UUID
    skill_name: str
    version: str
    score: float
    card: SkillCard
    instructions: str | None = Field(default=None, description="Only with include_content=true")


class SkillDegraded(BaseModel):
    leg: str
    reason: str


class SkillSearchResponse(BaseModel):
    items: list[SkillSearchHit]
    total: int
    degraded: list[SkillDegraded]
    filtered_by_min_similarity: int | None = Field(
        default=None,
        description="Hits dropped by min_similarity (absent when it was not sent)",
        exclude_if=lambda v: v is None,
    )
