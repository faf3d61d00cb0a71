"""Build review use cases (spec/001 K3.8): request a review (a job on the compile queue), the job's runner, and
reading a build's verdict.

Review is its own job kind (``wiki_review``): queued after activation and by ``POST /builds/{id}/review`` (202),
never run in the request nor inside the compile's invocation (a dozen reviewer calls after a long compile do not
fit one 900 s Lambda). It has the queue's lease, retry and cost rules: a provider that fails every call with a
retryable error retries the review later; any verdict, even a partial one, is final (re-review is one request
away, and silently doubling the bill to hide a blip is not the platform's call).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from agentmate import jobs, llm
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, NotFound, NotImplementedYet
from agentmate.core.principal import Principal
from agentmate.knowledge.quality import review
from agentmate.knowledge.quality import review_repository as repo
from agentmate.knowledge.quality.schemas import BuildReview, Review
from agentmate.knowledge.quality.settings import ReviewSettings, get_review_settings
from agentmate.llm.settings import ModelSettings, get_model_settings

KIND = "wiki_review"
# Time kept back from the invocation for the outcome transaction once the reviewer calls stop.
_OUTCOME_MARGIN_S = 15.0
# A reviewer call given less than this is not worth starting.
_MIN_CALL_S = 20.0
ClientFactory = Callable[[llm.ChatConfig], Any]


def _reviewer(settings: ModelSettings) -> llm.ChatConfig | None:
    return llm.config_from_settings("reviewer", settings)


def _independence(settings: ModelSettings, compiler_model: str) -> str:
    """Independence of the configured reviewer from the model that compiled this build (its recorded model, not
    today's compiler setting: a re-review of an old build judges the build's own compiler). The model names are
    compared by ``llm.same_model``, the one comparison the compile's label and the self-review refusal share, so a
    build labelled ``cross_provider`` is never refused as same-model."""
    reviewer = _reviewer(settings)
    compiler = llm.config_from_settings("compiler", settings)
    if reviewer is None:
        return "unavailable"
    if llm.same_model(compiler_model, reviewer.model):
        return "same_model"
    if compiler is None:
        return "unavailable"
    return llm.independence(compiler, reviewer)


def _refusal(settings: ModelSettings, compiler_model: str) -> str | None:
    reviewer = _reviewer(settings)
    if reviewer is None:
        return None
    if llm.same_model(compiler_model, reviewer.model):
        return (
            f"the reviewer model {reviewer.model} is the model that compiled this build; a model cannot find "
            "the mistakes its own priors produced, so self-review is refused rather than run (set "
            "REVIEWER_MODEL to another model, ideally from another provider)"
        )
    return None


def _enqueue(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID | None,
    key_id: UUID | None,
    build: dict[str, Any],
    requested_by: str,
    settings: ModelSettings,
    page_limit: int,
) -> Review:
    reviewer = _reviewer(settings)
    row = repo.insert(
        conn,
        account_id=account_id,
        user_id=user_id,
        key_id=key_id,
        build_id=build["id"],
        source_id=build["source_id"],
        requested_by=requested_by,
        status="queued",
        compiler_model=build["model"],
        reviewer_model=reviewer.model if reviewer else None,
        prompt_version=review.PROMPT_VERSION,
        independence=_independence(settings, build["model"]),
        page_limit=page_limit,
    )
    job = jobs.enqueue(
        conn, account_id=account_id, kind=KIND, subject_id=row.id, payload={"build_id": str(build["id"])}
    )
    repo.set_job(conn, account_id=account_id, review_id=row.id, job_id=job.id)
    return row.model_copy(update={"job_id": job.id})


def request_review(
    db: TenantTransactions,
    principal: Principal,
    build_id: UUID,
    settings: ModelSettings | None = None,
    review_settings: ReviewSettings | None = None,
) -> Review:
    """Queue a review of a succeeded build (202). An unfinished review of the build is handed back instead of a
    second one. 501 when no reviewer is configured; 409 for a build without pages or a same-model reviewer."""
    settings = settings or get_model_settings()
    limit = (review_settings or get_review_settings()).wiki_review_max_pages
    a = principal.account_id
    with db.tenant(a) as conn:
        build = repo.build(conn, account_id=a, build_id=build_id)
        if build is None:
            raise NotFound("build")
        if build["status"] != "succeeded":
            raise Conflict(f"this build is {build['status']}: only a succeeded build has pages to review")
        if _reviewer(settings) is None:
            raise NotImplementedYet(
                "no reviewer model is configured: set REVIEWER_BASE_URL (or "
                "EMBEDDING_BASE_URL) and REVIEWER_MODEL"
            )
        refused = _refusal(settings, build["model"])
        if refused:
            raise Conflict(refused)
        existing = repo.unfinished(conn, account_id=a, build_id=build_id)
        row = existing or _enqueue(
            conn,
            account_id=a,
            user_id=principal.user_id,
            key_id=principal.key_id,
            build=build,
            requested_by="request",
            settings=settings,
            page_limit=limit,
        )
    if row.job_id is not None:
        jobs.wake(row.job_id)
    return row


def enqueue_after_activation(
    conn: Conn,
    *,
    account_id: UUID,
    build_id: UUID,
    settings: ModelSettings | None = None,
    review_settings: ReviewSettings | None = None,
) -> UUID | None:
    """Called in the transaction that activated a build: queue its first review (once per build). Without a
    reviewer, or with a same-model one, a skipped review says why instead. Returns the job id to wake after
    the commit, if one was queued."""
    settings = settings or get_model_settings()
    limit = (review_settings or get_review_settings()).wiki_review_max_pages
    build = repo.build(conn, account_id=account_id, build_id=build_id)
    if (
        build is None
        or build["status"] != "succeeded"
        or repo.has_review(conn, account_id=account_id, build_id=build_id)
    ):
        return None
    refused = _refusal(settings, build["model"])
    if _reviewer(settings) is None or refused:
        note = refused or "no reviewer model is configured; this build received check only"
        skipped = repo.insert(
            conn,
            account_id=account_id,
            user_id=None,
            key_id=None,
            build_id=build_id,
            source_id=build["source_id"],
            requested_by="activation",
            status="skipped",
            compiler_model=build["model"],
            reviewer_model=None,
            prompt_version=review.PROMPT_VERSION,
            independence=_independence(settings, build["model"]),
            page_limit=limit,
            note=note,
        )
        repo.mirror_on_build(
            conn,
            account_id=account_id,
            build_id=build_id,
            status="skipped",
            reviewer_model=None,
            independence=skipped.reviewer_independence,
        )
        return None
    row = _enqueue(
        conn,
        account_id=account_id,
        user_id=None,
        key_id=None,
        build=build,
        requested_by="activation",
        settings=settings,
        page_limit=limit,
    )
    return row.job_id


def get_build_review(db: TenantTransactions, principal: Principal, build_id: UUID) -> BuildReview:
    a = principal.account_id
    with db.tenant(a) as conn:
        build = repo.build(conn, account_id=a, build_id=build_id)
        if build is None:
            raise NotFound("build")
        current = repo.latest(conn, account_id=a, build_id=build_id)
        verdict = repo.latest_finished(conn, account_id=a, build_id=build_id)
        findings = repo.findings(conn, account_id=a, review_id=verdict.id) if verdict else []
    return BuildReview(
        build_id=build_id,
        review_status=build["review_status"],
        reviewer_independence=build["reviewer_independence"],
        warning=review.standing_warning(current.model_dump() if current else None),
        review=current,
        findings=findings,
    )


def standing_warning(conn: Conn, *, account_id: UUID, build_id: UUID) -> str:
    """The unconditional review warning for one build, for the wiki's compile and build responses."""
    current = repo.latest(conn, account_id=account_id, build_id=build_id)
    return review.standing_warning(current.model_dump() if current else None)


# -- the job -----------------------------------------------------------------------------------------------------


def mirror_job(conn: Conn, job: jobs.Job) -> None:
    """The queue's on_change hook: the review row follows its job (claimed → running, requeued → queued, failed
    or cancelled before a verdict → failed with the reason)."""
    if job.subject_id is None:
        return
    if job.status == "running":
        repo.set_status(conn, account_id=job.account_id, review_id=job.subject_id, status="running")
    elif job.status == "queued":
        repo.set_status(conn, account_id=job.account_id, review_id=job.subject_id, status="queued")
    elif job.status in ("failed", "cancelled"):
        repo.set_status(
            conn,
            account_id=job.account_id,
            review_id=job.subject_id,
            status="failed",
            note=f"the review job {job.status}: {job.last_error or 'no reason recorded'}",
        )


def run(
    ctx: jobs.RunContext,
    *,
    settings: ModelSettings | None = None,
    review_settings: ReviewSettings | None = None,
    client_factory: ClientFactory | None = None,
) -> dict[str, Any]:
    """Review one build: each selected page against the raw text of the documents it cites."""
    settings = settings or get_model_settings()
    rs = review_settings or get_review_settings()
    row, build, pages, texts = _inputs(ctx)
    config = _reviewer(settings)
    refused = _refusal(settings, build["model"])
    if config is None or refused:
        note = refused or "no reviewer model is configured any more; nothing was reviewed"
        return _record(
            ctx,
            row,
            review.Outcome("skipped", note),
            reviewer_model=None,
            independence=_independence(settings, build["model"]),
            totals=(0, 0, 0),
            findings=[],
            usage=llm.Usage(),
        )
    eligible, examined = review.select_pages(pages, row.page_limit)
    tally = _Tally()
    client = (client_factory or llm.ChatClient)(config)
    try:
        _review_pages(ctx, client, config, settings, examined, texts, tally, rs.wiki_review_budget_seconds)
    finally:
        close = getattr(client, "close", None)
        if close:
            close()
    succeeded = tally.attempted - len(tally.failures)
    if tally.attempted and succeeded == 0 and all(retryable for _, retryable in tally.failures):
        raise jobs.Retryable(f"every reviewer call failed and may succeed later: {tally.failures[0][0]}")
    return _record(
        ctx,
        row,
        _verdict(tally, eligible=len(eligible), examined=len(examined)),
        reviewer_model=config.model,
        independence=_independence(settings, build["model"]),
        totals=(len(eligible), succeeded, len(tally.failures)),
        findings=tally.findings,
        usage=tally.usage,
        cost=tally.usage.cost_micros(config.prices),
    )


def _inputs(
    ctx: jobs.RunContext,
) -> tuple[Review, dict[str, Any], list[review.ReviewPage], dict[str, str]]:
    """The review row, its build, the build's pages with their citations and the cited documents' raw text,
    read in one transaction (missing rows are permanent failures: nothing left to review)."""
    a, review_id = ctx.job.account_id, ctx.job.subject_id
    if review_id is None:
        raise jobs.Permanent("a review job needs the review row as its subject")
    with ctx.tenant() as conn:
        row = repo.get(conn, account_id=a, review_id=review_id)
        if row is None:
            raise jobs.Permanent("the review row is gone")
        build = repo.build(conn, account_id=a, build_id=row.build_id)
        if build is None:
            raise jobs.Permanent("the build is gone")
        pages = repo.pages_with_citations(conn, account_id=a, build_id=row.build_id)
        cited = sorted({c.document_path for p in pages for c in p.citations})
        texts = repo.revision_texts(conn, account_id=a, revision_id=build["source_revision_id"], paths=cited)
    return row, build, pages, texts


@dataclass(slots=True)
class _Tally:
    """What the reviewer calls of one job produced so far."""

    findings: list[review.Finding] = field(default_factory=list)
    usage: llm.Usage = field(default_factory=llm.Usage)
    failures: list[tuple[str, bool]] = field(default_factory=list)  # (reason, retryable)
    attempted: int = 0


def _review_pages(
    ctx: jobs.RunContext,
    client: Any,
    config: llm.ChatConfig,
    settings: ModelSettings,
    examined: list[review.ReviewPage],
    texts: dict[str, str],
    tally: _Tally,
    budget_seconds: float,
) -> None:
    """One reviewer call per page, until the pages, the job's budget or the invocation's time run out."""
    deadline = time.monotonic() + budget_seconds
    for page in examined:
        if ctx.lease_lost.is_set():
            raise jobs.LeaseLost("the review's lease was lost")
        if ctx.shutdown.is_set():
            raise jobs.Yield("shutting down")
        left = min(ctx.remaining_seconds(), deadline - time.monotonic()) - _OUTCOME_MARGIN_S
        call_timeout = min(settings.reviewer_timeout_seconds, left)
        if call_timeout < _MIN_CALL_S:
            break  # what was read so far is recorded; the note says the rest carries no verdict
        tally.attempted += 1
        got, spent, failure = _review_page(client, page, texts, settings.reviewer_max_tokens, call_timeout)
        tally.usage = llm.Usage(
            tally.usage.prompt_tokens + spent.prompt_tokens,
            tally.usage.completion_tokens + spent.completion_tokens,
        )
        ctx.add_usage(
            input_tokens=spent.prompt_tokens,
            output_tokens=spent.completion_tokens,
            cost_micros=spent.cost_micros(config.prices),
        )
        if failure:
            tally.failures.append(failure)
        else:
            tally.findings.extend(got)


def _verdict(tally: _Tally, *, eligible: int, examined: int) -> review.Outcome:
    verdict = review.outcome(
        eligible=eligible,
        attempted=tally.attempted,
        succeeded=tally.attempted - len(tally.failures),
        findings=len(tally.findings),
        first_failure=tally.failures[0][0] if tally.failures else None,
    )
    if tally.attempted < examined:
        verdict = review.Outcome(
            verdict.status,
            verdict.note + f"; the job ran out of time after {tally.attempted} of {examined} selected pages",
        )
    return verdict


def _review_page(
    client: Any, page: review.ReviewPage, texts: dict[str, str], max_tokens: int, timeout: float
) -> tuple[list[review.Finding], llm.Usage, tuple[str, bool] | None]:
    sources = review.cited_documents(page, texts)
    if page.citations and not sources:
        # Asking anyway would report every claim unsupported: a verdict about our loading, not about the wiki.
        return (
            [],
            llm.Usage(),
            (
                f"{page.path} cites {len({c.document_path for c in page.citations})} "
                "document(s) none of which is in the build's revision",
                False,
            ),
        )
    messages = [
        {"role": "system", "content": review.SYSTEM_PROMPT},
        {"role": "user", "content": review.user_prompt(page, sources)},
    ]
    try:
        reply = client.complete(messages, response_format_json=True, timeout=timeout, max_tokens=max_tokens)
    except llm.ChatError as exc:
        return [], exc.usage, (f"{page.path}: {exc.reason}", bool(exc.retryable))
    try:
        return review.parse_reply(page.path, reply.text), reply.usage, None
    except review.ReplyRejected as exc:
        return [], reply.usage, (f"{page.path}: {exc}", False)


def _record(
    ctx: jobs.RunContext,
    row: Review,
    verdict: review.Outcome,
    *,
    reviewer_model: str | None,
    independence: str,
    totals: tuple[int, int, int],
    findings: list[review.Finding],
    usage: llm.Usage,
    cost: int = 0,
) -> dict[str, Any]:
    total, examined, failed = totals
    result = {
        "review_id": str(row.id),
        "status": verdict.status,
        "pages_examined": examined,
        "pages_total": total,
        "findings": len(findings),
    }
    with ctx.finish(result) as conn:
        repo.finish(
            conn,
            account_id=ctx.job.account_id,
            review=row,
            status=verdict.status,
            note=verdict.note,
            reviewer_model=reviewer_model,
            independence=independence,
            pages_total=total,
            pages_examined=examined,
            pages_failed=failed,
            findings=findings,
            input_tokens=usage.prompt_tokens,
            output_tokens=usage.completion_tokens,
            cost_micros=cost,
        )
    return result
