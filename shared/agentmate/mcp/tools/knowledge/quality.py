"""Wiki quality tools on ``/mcp/knowledge``: lint, build review, validation signals, over the same use cases and
scopes as the REST routes.
REST twin: ``agentmate.knowledge.quality.router``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.knowledge.quality import lint_service, review_service, validation_service
from agentmate.knowledge.quality.attribution import Cause, Direction, Origin
from agentmate.knowledge.quality.schemas import (
    BuildReview,
    LintRequest,
    LintRun,
    LintRunDetail,
    ReportableSignal,
    Review,
    Signal,
    SignalReport,
    SignalSummary,
    SkillPatterns,
)
from agentmate.mcp.context import db, principal
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools

SourceId = Annotated[
    UUID, Field(description="The knowledge source's id, as knowledge_sources_list returns it")
]
BuildId = Annotated[UUID, Field(description="The wiki build's id")]


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/wiki/lint",
    title="Lint a source's active wiki",
    hints=LintRequest,
)
def knowledge_wiki_lint(source_id: SourceId) -> LintRunDetail:
    """Run advisory lint over the source's active wiki build against its current documents and store the run:
    orphan_page, stale_citation (cited document removed or rewritten since the build), stale_cascade (pages
    resting on those), recorded_contradiction, unlabelled_supersede, entity_link_kind, uncovered_document,
    unreadable_frontmatter (a page whose frontmatter YAML cannot be read). Lint blocks nothing: findings are for
    a human, and the wiki keeps serving. Requires knowledge:rw."""
    return lint_service.lint_active_wiki(db(), principal(), source_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/wiki/lint/runs", title="List lint runs")
def knowledge_wiki_lint_runs(
    source_id: SourceId | None = None, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0
) -> Page[LintRun]:
    """List stored lint runs, newest first, optionally of one source (counts only; get one for its findings)."""
    return lint_service.list_runs(db(), principal(), PageParams(limit=limit, offset=offset), source_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/wiki/lint/runs/{run_id}", title="Get a lint run")
def knowledge_wiki_lint_run_get(
    run_id: Annotated[UUID, Field(description="The lint run's id")],
) -> LintRunDetail:
    """One lint run with its findings (rule, severity, page_path, related_path, detail)."""
    return lint_service.get_run(db(), principal(), run_id)


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/builds/{build_id}/review",
    title="Queue a build review",
    idempotent=True,
)
def knowledge_build_review(build_id: BuildId) -> Review:
    """Queue a faithfulness review of a succeeded build: a reviewer model checks each page's claims against the
    raw documents it cites (most-cited pages first, up to a configured number). It runs as a job: poll
    knowledge_build_review_get. Refused when the reviewer is the model that compiled the build; review never
    blocks serving, and check stays the only gate. Requires knowledge:rw (it spends reviewer tokens)."""
    return review_service.request_review(db(), principal(), build_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/builds/{build_id}/review", title="Get a build's review")
def knowledge_build_review_get(build_id: BuildId) -> BuildReview:
    """A build's review: status (clean = every eligible page examined with no finding; partial = fewer examined
    than eligible, so the rest carry no verdict; flagged = findings), coverage pages_examined/pages_total (read
    it, not only the status), the findings (unsupported, overstated, fabricated_causality, conflated) and the
    standing warning of what was and was not reviewed."""
    return review_service.get_build_review(db(), principal(), build_id)


@tools.tool(
    "knowledge:rw",
    rest="POST /api/knowledge/validation/signals",
    title="Report a validation signal",
    idempotent=True,
    hints=SignalReport,
)
def knowledge_validation_report(
    source_id: SourceId,
    signal: Annotated[
        ReportableSignal,
        Field(
            description="positive: answer_adopted, citation_verified, "
            "reused_for_similar; negative: question_repeated, "
            "query_rephrased, citation_abandoned, answer_rewritten"
        ),
    ],
    query_id: Annotated[
        UUID | None,
        Field(
            description="The query_id the knowledge or wiki search returned: "
            "without it the cause stays unattributed"
        ),
    ] = None,
    page_path: Annotated[
        str | None, Field(min_length=1, max_length=512, description="The wiki page the answer came from")
    ] = None,
    build_id: Annotated[UUID | None, Field(description="The build that served it (default: active)")] = None,
    detail: Annotated[str, Field(max_length=2000)] = "",
    session_id: Annotated[str, Field(max_length=200)] = "",
    skill_version_id: UUID | None = None,
    idempotency_key: Annotated[
        str | None,
        Field(min_length=1, max_length=255, description="A retry with the same key records nothing new"),
    ] = None,
) -> Signal:
    """Report what happened after using a knowledge answer, with the query_id of the search it followed; the
    platform attributes the cause (wiki_synthesis, retrieval_miss, source_gap, or unattributed when the evidence
    cannot separate them). Report positives too: a series of only complaints reads as a failing knowledge base.
    Requires knowledge:rw."""
    body = SignalReport(
        source_id=source_id,
        signal=signal,
        query_id=query_id,
        page_path=page_path,
        build_id=build_id,
        detail=detail,
        session_id=session_id,
        skill_version_id=skill_version_id,
        idempotency_key=idempotency_key,
    )
    return validation_service.report(db(), principal(), body).value


@tools.tool("knowledge:r", rest="GET /api/knowledge/validation/summary", title="Summarise validation signals")
def knowledge_validation_summary(source_id: SourceId | None = None) -> SignalSummary:
    """Signal counts (positive/negative, reported/derived) per page, cause and signal, for one source or the
    account. Counts, never a verdict."""
    return validation_service.summary(db(), principal(), source_id)


@tools.tool("knowledge:r", rest="GET /api/knowledge/validation/signals", title="List validation signals")
def knowledge_validation_signals(
    source_id: SourceId | None = None,
    page_path: Annotated[str | None, Field(min_length=1, max_length=512)] = None,
    signal: Annotated[str | None, Field(pattern=r"^[a-z_]{1,32}$")] = None,
    direction: Direction | None = None,
    origin: Origin | None = None,
    cause: Cause | None = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[Signal]:
    """List validation signals, newest first, with their attribution and the rule that decided it."""
    return validation_service.list_signals(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        source_id=source_id,
        page_path=page_path,
        signal=signal,
        direction=direction,
        origin=origin,
        cause=cause,
    )


@tools.tool("knowledge:r", rest="GET /api/knowledge/validation/skill-patterns", title="Skill signal patterns")
def knowledge_validation_skill_patterns(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> SkillPatterns:
    """Skill versions whose negative signals span several pages or sources, where a skill's approach (rather than
    one page) is the better suspect: where to look, never a verdict."""
    return validation_service.skill_patterns(db(), principal(), PageParams(limit=limit, offset=offset))
