"""Wire models of wiki quality: lint runs, build reviews, validation signals."""

from datetime import datetime
from typing import Annotated, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from agentmate.knowledge.quality.attribution import Cause, Direction, Origin
from agentmate.knowledge.quality.lint import Rule, Severity
from agentmate.knowledge.quality.review import FindingKind, ReviewStatus

Independence = Literal["cross_provider", "same_provider", "same_model", "unavailable"]
ReportableSignal = Literal[
    "answer_adopted",
    "citation_verified",
    "reused_for_similar",
    "question_repeated",
    "query_rephrased",
    "citation_abandoned",
    "answer_rewritten",
]
PagePath = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=512)]

LINT_NOTE = (
    "lint is advisory and blocks nothing: the wiki keeps serving. A finding is an observation, not a "
    "ticket; one that matters reappears on the next run"
)


# -- lint ------------------------------------------------------------------------------------------------------


class LintRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "build_id": "lint always runs over the source's active build; send source_id",
    }

    source_id: UUID = Field(description="The knowledge source whose active wiki build is linted")


class LintFinding(BaseModel):
    rule: Rule
    severity: Severity
    page_path: str | None = Field(description="The page the finding is about (none for uncovered_document)")
    related_path: str | None = Field(
        description="The other end: link target, replacing page, cited or uncovered document"
    )
    detail: str


class LintRun(BaseModel):
    id: UUID
    source_id: UUID
    build_id: UUID = Field(description="The active build that was linted")
    revision_id: UUID = Field(
        description="The source's active revision it was compared with (staleness is a "
        "relation between the two)"
    )
    pages_examined: int
    documents_examined: int
    findings_total: int
    findings_warning: int
    findings_info: int
    started_at: datetime
    finished_at: datetime


class LintRunDetail(BaseModel):
    run: LintRun
    findings: list[LintFinding]
    note: str = LINT_NOTE


# -- review ----------------------------------------------------------------------------------------------------


class ReviewFinding(BaseModel):
    page_path: str
    kind: FindingKind
    claim: str = Field(description="The reviewer's quotation of the page")
    detail: str = Field(description="What the cited source text actually says")


class Review(BaseModel):
    id: UUID
    build_id: UUID
    source_id: UUID
    job_id: UUID | None
    requested_by: Literal["activation", "request"]
    status: ReviewStatus = Field(
        description="queued/running, then clean (every eligible page examined, no "
        "finding), partial (fewer pages examined than eligible, no finding "
        "among them), flagged (findings), failed (no page got a verdict) or "
        "skipped (nothing reviewed; see note)"
    )
    compiler_model: str
    reviewer_model: str | None
    reviewer_prompt_version: str
    reviewer_independence: Independence
    page_limit: int = Field(description="At most this many pages are reviewed, most-cited first")
    pages_total: int = Field(description="Content pages eligible for review (generated index/log excluded)")
    pages_examined: int = Field(description="Pages that received a verdict; read it against pages_total")
    pages_failed: int
    findings_total: int
    note: str
    input_tokens: int
    output_tokens: int
    cost_micros: int
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class BuildReview(BaseModel):
    build_id: UUID
    review_status: str = Field(description="The build's current verdict (skipped until a review finishes)")
    reviewer_independence: Independence
    warning: str = Field(
        description="Unconditional: check is the only gate; what this build's review did and did not cover"
    )
    review: Review | None = Field(description="The latest review of this build, if any")
    findings: list[ReviewFinding] = Field(description="Findings of the latest finished review")


# -- validation ------------------------------------------------------------------------------------------------


class SignalReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "direction": "direction follows from the signal; do not send it",
        "cause": "the platform attributes the cause; do not send it",
        "origin": "reported signals are always origin=reported",
        "query": "send the query_id a knowledge or wiki search returned",
        "path": "send page_path (the wiki page the signal is about)",
    }

    source_id: UUID
    signal: ReportableSignal
    query_id: UUID | None = Field(
        default=None,
        description="query_id of the knowledge or wiki search this "
        "signal is about: without it nothing separates a "
        "retrieval miss from a synthesis error",
    )
    build_id: UUID | None = Field(
        default=None, description="The build that served the answer (defaults to the source's active build)"
    )
    page_path: PagePath | None = Field(default=None, description="The wiki page the answer came from")
    detail: str = Field(default="", max_length=2000)
    session_id: str = Field(default="", max_length=200)
    skill_version_id: UUID | None = None
    idempotency_key: (
        Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)] | None
    ) = Field(
        default=None,
        description="A retry with the same key and body records nothing new (200, the "
        "original); the same key with another body is a 409",
    )


class Signal(BaseModel):
    id: UUID
    source_id: UUID
    build_id: UUID | None
    page_path: str | None
    query_id: UUID | None
    session_id: str
    skill_version_id: UUID | None
    signal: str
    direction: Direction
    origin: Origin
    cause: Cause
    attribution_basis: str = Field(description="Which attribution rule fired, in words")
    detail: str
    idempotency_key: str | None
    created_at: datetime


class SweepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    idle_days: int = Field(
        default=14,
        ge=1,
        le=365,
        description="A source with an active wiki that no search and "
        "no resolution touched for this many days gets a "
        "derived never_retrieved signal (once a day)",
    )


class SweepResult(BaseModel):
    recorded: int
    already_recorded: int = Field(description="Sources already given today's signal: not an error")
    idle_days: int
    items: list[Signal]


class SignalCount(BaseModel):
    key: str
    positive: int
    negative: int


class SignalSummary(BaseModel):
    source_id: UUID | None
    total: int
    positive: int
    negative: int
    reported: int = Field(
        description="Signals callers chose to report (reporting bias: silence looks like success)"
    )
    derived: int = Field(description="Signals the platform derived from recorded searches and resolutions")
    by_page: list[SignalCount]
    by_cause: list[SignalCount]
    by_signal: list[SignalCount]
    note: str = (
        "counts, never a verdict: a small knowledge base cannot produce enough signal to be sure of "
        "anything, and an agent that never reports looks exactly like one that had no trouble"
    )


class SkillPattern(BaseModel):
    skill_version_id: UUID
    negative: int
    positive: int
    distinct_pages: int
    distinct_sources: int
    interpretation: str


class SkillPatterns(BaseModel):
    items: list[SkillPattern]
    total: int
    limit: int
    offset: int
    note: str
