"""REST routes of wiki quality: advisory lint, build review, validation signals (spec/001 K3.7-K3.9).
MCP twin: ``agentmate.mcp.tools.knowledge.quality``."""

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Body, Query, Response

from agentmate.api.deps import DbDep, KnowledgeRead, KnowledgeWrite, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.knowledge.quality.attribution import Cause, Direction, Origin
from agentmate.knowledge.quality.schemas import (
    BuildReview,
    LintRequest,
    LintRun,
    LintRunDetail,
    PagePath,
    Review,
    Signal,
    SignalReport,
    SignalSummary,
    SkillPatterns,
    SweepRequest,
    SweepResult,
)

if TYPE_CHECKING:
    from agentmate.knowledge.quality import lint_service, review_service, validation_service
else:  # the use cases load on the first request that needs them (cold start)
    lint_service = lazy_module("agentmate.knowledge.quality.lint_service")
    review_service = lazy_module("agentmate.knowledge.quality.review_service")
    validation_service = lazy_module("agentmate.knowledge.quality.validation_service")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)
SignalName = Annotated[str | None, Query(pattern=r"^[a-z_]{1,32}$", description="One signal name")]


@router.post("/wiki/lint", status_code=201, response_model=LintRunDetail)
def lint_wiki(body: LintRequest, principal: KnowledgeWrite, db: DbDep) -> LintRunDetail:
    """Lint the source's active wiki build against its active revision and store the run. Advisory: blocks
    nothing. 409 when the source has no active build."""
    return lint_service.lint_active_wiki(db, principal, body.source_id)


@router.get("/wiki/lint/runs", response_model=Page[LintRun])
def list_lint_runs(
    principal: KnowledgeRead, db: DbDep, page: PageDep, source_id: Annotated[UUID | None, Query()] = None
) -> Page[LintRun]:
    """Lint runs, newest first (optionally of one source)."""
    return lint_service.list_runs(db, principal, page, source_id)


@router.get("/wiki/lint/runs/{run_id}", response_model=LintRunDetail)
def get_lint_run(run_id: UUID, principal: KnowledgeRead, db: DbDep) -> LintRunDetail:
    """One lint run with its findings."""
    return lint_service.get_run(db, principal, run_id)


@router.post("/builds/{build_id}/review", status_code=202, response_model=Review)
def review_build(build_id: UUID, principal: KnowledgeWrite, db: DbDep) -> Review:
    """Queue a faithfulness review of a succeeded build (202; it runs as a job, never in the request). An
    unfinished review of the build is returned instead of a second one. 409 for a build that did not succeed or
    when the reviewer is the model that compiled it (self-review is refused); 501 when no reviewer is
    configured. Review never gates serving."""
    return review_service.request_review(db, principal, build_id)


@router.get("/builds/{build_id}/review", response_model=BuildReview)
def get_build_review(build_id: UUID, principal: KnowledgeRead, db: DbDep) -> BuildReview:
    """The build's review: latest review (status, coverage pages_examined/pages_total, cost), the findings of the
    latest finished one, and the standing warning saying what was and was not reviewed."""
    return review_service.get_build_review(db, principal, build_id)


@router.post(
    "/validation/signals",
    status_code=201,
    response_model=Signal,
    responses={200: {"model": Signal, "description": "Replay of an idempotency_key: the original signal"}},
)
def report_signal(body: SignalReport, principal: KnowledgeWrite, db: DbDep) -> Response:
    """Report what happened after using an answer. Send the query_id of the search it is about; the platform
    attributes the cause on recorded evidence (or records unattributed). Report positives too."""
    return created(validation_service.report(db, principal, body), replay_status=200)


@router.get("/validation/signals", response_model=Page[Signal])
def list_signals(
    principal: KnowledgeRead,
    db: DbDep,
    page: PageDep,
    source_id: Annotated[UUID | None, Query()] = None,
    page_path: Annotated[PagePath | None, Query()] = None,
    signal: SignalName = None,
    direction: Annotated[Direction | None, Query()] = None,
    origin: Annotated[Origin | None, Query()] = None,
    cause: Annotated[Cause | None, Query()] = None,
) -> Page[Signal]:
    """Validation signals, newest first, filtered by any of the parameters."""
    return validation_service.list_signals(
        db,
        principal,
        page,
        source_id=source_id,
        page_path=page_path,
        signal=signal,
        direction=direction,
        origin=origin,
        cause=cause,
    )


@router.get("/validation/summary", response_model=SignalSummary)
def signal_summary(
    principal: KnowledgeRead,
    db: DbDep,
    source_id: Annotated[UUID | None, Query(description="One source (default: the account)")] = None,
) -> SignalSummary:
    """Counts per page, cause and signal, split by reported/derived. Counts, never a verdict."""
    return validation_service.summary(db, principal, source_id)


@router.post("/validation/sweep", response_model=SweepResult)
def sweep_signals(
    principal: KnowledgeWrite, db: DbDep, body: Annotated[SweepRequest | None, Body()] = None
) -> SweepResult:
    """Derive never_retrieved signals from recorded searches and resolutions (once per source and UTC day)."""
    return validation_service.sweep(db, principal, body or SweepRequest())


@router.get("/validation/skill-patterns", response_model=SkillPatterns)
def skill_patterns(principal: KnowledgeRead, db: DbDep, page: PageDep) -> SkillPatterns:
    """Skill versions whose negative signals span pages and sources: where to look, never a verdict."""
    return validation_service.skill_patterns(db, principal, page)
