"""The compile pipeline of one queued build: ``compile_build(db, build_id, ctx)``.

1. Start the attempt (one transaction): the build must still be queued or running; it becomes running, its
   attempt count grows, and the inputs are read (documents of the build's revision, manifest, profile, and for
   incremental builds the parent's pages and the impact set).
2. Call the compiler model with no database connection held.
3. Parse the JSON page contract, drop what the page gate refuses (``gate``: reserved or non-canonical paths,
   the platform's kinds, deletions of pages the parent does not have; each a ``page_rejected``), carry unscheduled
   parent pages over (incremental), generate ``wiki/index.md``, and run the check gate.
4. Record the outcome in one transaction, only while this attempt still owns the build: a failing check writes
   no pages; a passing one writes pages, citations, links, events and ``wiki/log.md``, and activates the build
   when ``activate_on_success`` (queueing the re-index of the wiki retrieval namespace, ``reindex``).

Chat errors are classified by ``agentmate.llm``: a retryable one with attempts left puts the build back to
queued (the queue schedules the retry with backoff); anything else fails the build. Usage and cost are recorded
per attempt and accumulated, so a build that failed twice before succeeding shows all three calls.

Graceful shutdown (spec/001: "graceful shutdown yields its builds and refunds the attempt"): the model call is
abandoned as soon as the worker shuts down (or loses its lease): its connection is closed, the build goes back to
queued with its attempt refunded, the attempt's usage is still recorded (outcome ``yielded``), and the runner
hands the job back (``jobs.Yield``, which refunds the job's attempt too). A reply that arrived in full before
the shutdown was noticed is recorded as usual: the work is done, and throwing it away would only cost a second call.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.observability import logger
from agentmate.knowledge.manifest import KnowledgeManifest
from agentmate.knowledge.quality.review_service import enqueue_after_activation as enqueue_review
from agentmate.knowledge.wiki import reindex
from agentmate.knowledge.wiki import repository as repo
from agentmate.knowledge.wiki.check import CheckInput, DraftPage, Failure, IncrementalPlan, check
from agentmate.knowledge.wiki.gate import Screened, page_refusal, screen
from agentmate.knowledge.wiki.incremental import ImpactSet, diff_documents, impact_set
from agentmate.knowledge.wiki.prompt import (
    LOG_PATH,
    RESERVED_PATHS,
    CitationIn,
    InvalidReply,
    KnowledgeBase,
    LinkIn,
    ParsedReply,
    Plan,
    PromptDocument,
    build_messages,
    parse_reply,
)
from agentmate.knowledge.wiki.render import content_hash, index_page, log_page
from agentmate.llm import Abandoned, ChatClient, ChatError, ChatReply, HttpStatusError, Prices, Usage

DEFAULT_MAX_ATTEMPTS = 3
_TIMEOUT_MARGIN_S = 15.0


@dataclass
class CompileContext:
    """What the runner of a build knows beyond the build: whose it is, how many attempts the queue allows, how
    long the invocation has left, and whether the lease is still this worker's."""

    account_id: UUID
    attempt: int | None = None  # the queue's claim count; the build's own count when None
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    remaining_seconds: Callable[[], float] | None = None
    lease_lost: threading.Event | None = None
    # Set when the worker's host is going away: the model call in flight is abandoned and the build yielded.
    shutdown: threading.Event | None = None
    owns_lease: Callable[[Conn], bool] | None = None  # checked inside the outcome transaction
    # The success transaction (the queue's lease-guarded ``ctx.finish``): the pages commit with the job's success.
    success_tx: Callable[[], AbstractContextManager[Conn]] | None = None
    # Told each attempt's usage and cost as soon as the model answers (the queue's ``ctx.add_usage``).
    report_usage: Callable[[Usage, int], None] | None = None


@dataclass(frozen=True)
class CompileOutcome:
    build_id: UUID
    status: Literal["succeeded", "failed", "retry", "skipped", "lease_lost", "yielded"]
    reason: str | None = None
    retry_after: float | None = None
    failures: tuple[Failure, ...] = ()
    usage: Usage = field(default_factory=Usage)
    cost_micros: int = 0


@dataclass
class _Inputs:
    build: dict[str, Any]
    attempt: int
    kb: KnowledgeBase
    documents: list[dict[str, Any]]
    profile: Any
    parent_pages: list[dict[str, Any]] | None
    impact: ImpactSet | None
    # parent pages an older build kept that the page gate now refuses (look-alike paths, platform kinds), with why
    refused_parents: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def _now() -> datetime:
    return datetime.now(UTC)


def compile_build(
    db: TenantTransactions, build_id: UUID, ctx: CompileContext, *, client: ChatClient | None = None
) -> CompileOutcome:
    inputs = _start(db, build_id, ctx)
    if inputs is None:
        return CompileOutcome(build_id, "skipped", "the build is not queued or running")
    own_client = client is None
    try:
        chat = client or _client_for(inputs.build["model"])
        return _run(db, build_id, ctx, inputs, chat)
    finally:
        if own_client and "chat" in locals():
            chat.close()


def _client_for(model: str) -> ChatClient:
    base = ChatClient.from_settings("compiler")
    if base.config.model == model:
        return base
    base.close()
    return ChatClient(dataclasses.replace(base.config, model=model))


def _start(db: TenantTransactions, build_id: UUID, ctx: CompileContext) -> _Inputs | None:
    a = ctx.account_id
    with db.tenant(a) as conn:
        build = repo.lock_build(conn, account_id=a, build_id=build_id)
        if build is None or build["status"] not in ("queued", "running"):
            return None
        attempt = build["attempts"] + 1
        repo.update_build(
            conn,
            account_id=a,
            build_id=build_id,
            changes={"status": "running", "attempts": attempt, "started_at": build["started_at"] or _now()},
        )
        repo.add_events(
            conn,
            account_id=a,
            build_id=build_id,
            events=[
                {
                    "event_type": "attempt_started",
                    "detail": f"attempt {ctx.attempt or attempt}",
                    "payload": {"attempt": ctx.attempt or attempt},
                }
            ],
        )
        build = {**build, "attempts": attempt, "status": "running"}
        manifest = KnowledgeManifest.model_validate(
            repo.revision_manifest(conn, account_id=a, revision_id=build["source_revision_id"])
            or {"name": "wiki"}
        )
        profile = repo.profile(conn, account_id=a, profile_version_id=build["profile_version_id"])
        docs = repo.documents(conn, account_id=a, revision_id=build["source_revision_id"])
        parent_pages, impact = None, None
        refused: list[tuple[dict[str, Any], str]] = []
        if build["parent_build_id"] is not None:
            parent_pages = []
            for page in repo.build_pages_full(conn, account_id=a, build_id=build["parent_build_id"]):
                why = None if page["path"] in RESERVED_PATHS else page_refusal(page["path"], page["kind"])
                if why is None:
                    parent_pages.append(page)
                else:
                    refused.append((page, why))
            if build["mode"] == "incremental":
                parent = repo.build_row(conn, account_id=a, build_id=build["parent_build_id"])
                assert parent is not None
                before = {
                    d["path"]: d["sha256"]
                    for d in repo.documents(conn, account_id=a, revision_id=parent["source_revision_id"])
                }
                changes = diff_documents(before, {d["path"]: d["sha256"] for d in docs})
                impact = impact_set(changes, parent_pages)
    s = profile.settings
    kb = KnowledgeBase(
        name=manifest.name,
        description=manifest.description,
        language=manifest.language,
        citation_policy=s.citation_policy,
        allowed_page_kinds=s.allowed_page_kinds,
        allowed_link_types=s.allowed_link_types,
        max_pages=s.max_pages,
    )
    return _Inputs(build, attempt, kb, docs, profile, parent_pages, impact, refused)


def _prompt_documents(inputs: _Inputs, plan_pages: set[str]) -> list[PromptDocument]:
    texts = [d for d in inputs.documents if d["is_text"]]
    if inputs.impact is None:
        return [PromptDocument(d["path"], d["content"]) for d in texts]
    needed = set(inputs.impact.changes.added) | set(inputs.impact.changes.changed)
    for page in inputs.parent_pages or []:
        if page["path"] in plan_pages:
            needed |= {c["document_path"] for c in page["citations"]}
    return [PromptDocument(d["path"], d["content"]) for d in texts if d["path"] in needed]


def _run(
    db: TenantTransactions, build_id: UUID, ctx: CompileContext, inputs: _Inputs, chat: ChatClient
) -> CompileOutcome:
    impact = inputs.impact
    plan: Plan | None = None
    parent_paths = [p["path"] for p in inputs.parent_pages or [] if p["path"] not in RESERVED_PATHS]
    if impact is not None:
        plan = Plan(
            existing=tuple(parent_paths),
            rewrite=tuple(sorted(impact.scheduled)),
            changed=impact.changes.listing(),
        )
    reply: ChatReply | None = None
    if plan is None or plan.rewrite or (impact is not None and impact.changes.added):
        messages = build_messages(
            inputs.kb, _prompt_documents(inputs, set(plan.rewrite) if plan else set()), plan
        )
        timeout = chat.config.timeout_s
        if ctx.remaining_seconds is not None:
            timeout = max(1.0, min(timeout, ctx.remaining_seconds() - _TIMEOUT_MARGIN_S))
        try:
            reply = chat.complete(messages, timeout=timeout, abandon=lambda: _stopping(ctx))
        except ChatError as exc:
            _report(ctx, exc.usage, chat.config.prices)
            if ctx.lease_lost is not None and ctx.lease_lost.is_set():
                return CompileOutcome(build_id, "lease_lost", "the lease was lost during the model call")
            if _shutting_down(ctx) and (exc.retryable or isinstance(exc, Abandoned)):
                return _yielded(db, build_id, ctx, inputs, exc.usage, chat.config.prices)
            return _failed_call(db, build_id, ctx, inputs, exc, chat.config.prices)
    usage = reply.usage if reply else Usage()
    _report(ctx, usage, chat.config.prices)
    if ctx.lease_lost is not None and ctx.lease_lost.is_set():
        return CompileOutcome(build_id, "lease_lost", "the lease was lost during the model call")
    try:
        parsed = parse_reply(reply.text) if reply else None
    except InvalidReply as exc:
        return _finish_failed(db, build_id, ctx, inputs, usage, chat.config.prices, str(exc), "invalid_reply")
    return _outcome(db, build_id, ctx, inputs, parsed, usage, chat.config.prices)


def _shutting_down(ctx: CompileContext) -> bool:
    return ctx.shutdown is not None and ctx.shutdown.is_set()


def _stopping(ctx: CompileContext) -> bool:
    """Give the model call up: the host is shutting down, or another worker owns the build now."""
    return _shutting_down(ctx) or (ctx.lease_lost is not None and ctx.lease_lost.is_set())


def _report(ctx: CompileContext, usage: Usage, prices: Prices) -> None:
    if ctx.report_usage is not None:
        ctx.report_usage(usage, usage.cost_micros(prices))


def _usage_entry(
    inputs: _Inputs, ctx: CompileContext, usage: Usage, prices: Prices, outcome: str, error: str | None
) -> dict[str, Any]:
    return {
        "attempt": ctx.attempt or inputs.attempt,
        "input_tokens": usage.prompt_tokens,
        "output_tokens": usage.completion_tokens,
        "cost_micros": usage.cost_micros(prices),
        "outcome": outcome,
        "error": error,
    }


def _spend(inputs: _Inputs, entry: dict[str, Any], prices: Prices) -> dict[str, Any]:
    b = inputs.build
    return {
        "attempt_usage": [*b["attempt_usage"], entry],
        "input_tokens": b["input_tokens"] + entry["input_tokens"],
        "output_tokens": b["output_tokens"] + entry["output_tokens"],
        "cost_micros": b["cost_micros"] + entry["cost_micros"],
        "cost_priced": prices.priced,
    }


def _guarded(conn: Conn, ctx: CompileContext) -> bool:
    return ctx.owns_lease is None or ctx.owns_lease(conn)


def _requeue(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    changes: dict[str, Any],
    event: dict[str, Any],
) -> CompileOutcome | None:
    """Put the build back to queued with ``changes`` and ``event``, only while this attempt still owns it; the
    ``lease_lost`` outcome when it does not (nothing written)."""
    a = ctx.account_id
    with db.tenant(a) as conn:
        if not _guarded(conn, ctx):
            return CompileOutcome(build_id, "lease_lost", "the lease was lost")
        if not repo.update_build(
            conn,
            account_id=a,
            build_id=build_id,
            expect_status="running",
            expect_attempts=inputs.attempt,
            changes={**changes, "status": "queued"},
        ):
            return CompileOutcome(build_id, "lease_lost", "another attempt owns the build")
        repo.add_events(conn, account_id=a, build_id=build_id, events=[event])
    return None


def _failed_call(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    exc: ChatError,
    prices: Prices,
) -> CompileOutcome:
    attempt = ctx.attempt or inputs.attempt
    retry = exc.retryable and attempt < ctx.max_attempts
    entry = _usage_entry(inputs, ctx, exc.usage, prices, "retry" if retry else "failed", exc.reason)
    if not retry:
        reason = exc.reason if not exc.retryable else f"gave up after {attempt} attempts: {exc.reason}"
        return _finish_failed(db, build_id, ctx, inputs, exc.usage, prices, reason, exc.kind, entry=entry)
    lost = _requeue(
        db,
        build_id,
        ctx,
        inputs,
        {**_spend(inputs, entry, prices), "error": exc.reason},
        {
            "event_type": "attempt_failed",
            "detail": exc.reason,
            "payload": {"attempt": attempt, "class": exc.kind, "retryable": True},
        },
    )
    if lost is not None:
        return lost
    retry_after = exc.retry_after if isinstance(exc, HttpStatusError) else None
    logger.info("wiki compile attempt failed, retrying", extra={"build_id": str(build_id), "class": exc.kind})
    return CompileOutcome(
        build_id, "retry", exc.reason, retry_after, usage=exc.usage, cost_micros=entry["cost_micros"]
    )


def _yielded(
    db: TenantTransactions, build_id: UUID, ctx: CompileContext, inputs: _Inputs, usage: Usage, prices: Prices
) -> CompileOutcome:
    """The worker is shutting down: the build goes back to queued with this attempt refunded (a shutdown is not
    the build's failure, and must not spend its retry budget); what the attempt spent is recorded all the same."""
    reason = "the worker shut down during the model call; the call was abandoned and the attempt refunded"
    entry = _usage_entry(inputs, ctx, usage, prices, "yielded", reason)
    lost = _requeue(
        db,
        build_id,
        ctx,
        inputs,
        {**_spend(inputs, entry, prices), "attempts": inputs.attempt - 1},
        {
            "event_type": "attempt_yielded",
            "detail": reason,
            "payload": {"attempt": entry["attempt"], "refunded": True},
        },
    )
    if lost is not None:
        return lost
    logger.info("wiki compile yielded on shutdown", extra={"build_id": str(build_id)})
    return CompileOutcome(build_id, "yielded", reason, usage=usage, cost_micros=entry["cost_micros"])


def _finish_failed(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    usage: Usage,
    prices: Prices,
    reason: str,
    kind: str,
    *,
    entry: dict[str, Any] | None = None,
    failures: list[Failure] | None = None,
    extra_events: list[dict[str, Any]] | None = None,
) -> CompileOutcome:
    a = ctx.account_id
    entry = entry or _usage_entry(inputs, ctx, usage, prices, "failed", reason)
    changes: dict[str, Any] = {
        **_spend(inputs, entry, prices),
        "status": "failed",
        "error": reason,
        "finished_at": _now(),
    }
    if failures is not None:
        changes |= {"check_status": "failed", "check_failures": [f.as_dict() for f in failures]}
    if inputs.impact is not None:
        changes["impact"] = inputs.impact.as_dict()
    events = [
        *(extra_events or []),
        {
            "event_type": "check_failed" if failures else "attempt_failed",
            "detail": reason,
            "payload": {
                "class": kind,
                "retryable": False,
                **({"failures": [f.as_dict() for f in failures]} if failures else {}),
            },
        },
        {"event_type": "build_failed", "detail": reason},
    ]
    with db.tenant(a) as conn:
        if not _guarded(conn, ctx):
            return CompileOutcome(build_id, "lease_lost", "the lease was lost")
        if not repo.update_build(
            conn,
            account_id=a,
            build_id=build_id,
            expect_status="running",
            expect_attempts=inputs.attempt,
            changes={"error": reason},
        ):
            return CompileOutcome(build_id, "lease_lost", "another attempt owns the build")
        repo.add_events(conn, account_id=a, build_id=build_id, events=events)
        repo.update_build(conn, account_id=a, build_id=build_id, changes=changes)
    return CompileOutcome(
        build_id,
        "failed",
        reason,
        failures=tuple(failures or ()),
        usage=usage,
        cost_micros=entry["cost_micros"],
    )


def _page(raw: Any) -> DraftPage:
    return DraftPage(
        path=raw.path,
        kind=raw.kind,
        title=raw.title,
        content=raw.content,
        citations=list(raw.citations),
        links=list(raw.links),
    )


def _carried(page: dict[str, Any], parent_id: UUID) -> DraftPage:
    return DraftPage(
        path=page["path"],
        kind=page["kind"],
        title=page["title"],
        content=page["content"],
        citations=[
            CitationIn(c["document_path"], c["heading_path"], c["claim"], c["excerpt"])
            for c in page["citations"]
        ],
        links=[LinkIn(link["target_path"], link["link_type"]) for link in page["links"]],
        derived_from_build_id=page["derived_from_build_id"] or parent_id,
    )


def _outcome(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    parsed: ParsedReply | None,
    usage: Usage,
    prices: Prices,
) -> CompileOutcome:
    build = inputs.build
    screened = screen(parsed, {p["path"] for p in inputs.parent_pages or []}) if parsed else Screened()
    written = [_page(raw) for raw in screened.kept]
    deleted = set(screened.deleted)
    events = screened.rejected + [
        {
            "event_type": "page_rejected",
            "page_path": page["path"],
            "detail": f"carried over from the parent build, but {why}",
        }
        for page, why in inputs.refused_parents
    ]
    pages = list(written)
    plan: IncrementalPlan | None = None
    parent_count: int | None = None
    if inputs.parent_pages is not None:
        parent_count = sum(1 for p in inputs.parent_pages if p["path"] != LOG_PATH)
    if inputs.impact is not None and inputs.parent_pages is not None:
        parent_id = build["parent_build_id"]
        written_paths = {p.path for p in written}
        for page in inputs.parent_pages:
            if page["path"] in RESERVED_PATHS or page["path"] in written_paths or page["path"] in deleted:
                continue
            pages.append(_carried(page, parent_id))
        plan = IncrementalPlan(
            scheduled=inputs.impact.scheduled,
            parent_hashes={p["path"]: p["content_hash"] for p in inputs.parent_pages},
            written={p.path: content_hash(p.content) for p in written},
            deleted=deleted,
        )
    pages.append(index_page(pages, inputs.kb.name))
    tokens = build["input_tokens"] + build["output_tokens"] + usage.total_tokens
    failures = check(
        CheckInput(
            pages=pages,
            profile=inputs.profile.settings,
            document_paths={d["path"] for d in inputs.documents},
            tokens=tokens,
            parent_page_count=parent_count,
            plan=plan,
        )
    )
    if failures:
        reason = f"check failed: {len(failures)} failure(s), first {failures[0].rule}"
        return _finish_failed(
            db,
            build_id,
            ctx,
            inputs,
            usage,
            prices,
            reason,
            "check",
            failures=failures,
            entry=_usage_entry(inputs, ctx, usage, prices, "check_failed", reason),
            extra_events=events,
        )
    return _succeed(db, build_id, ctx, inputs, pages, written, deleted, events, usage, prices)


def _succeed(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    pages: list[DraftPage],
    written: list[DraftPage],
    deleted: set[str],
    events: list[dict[str, Any]],
    usage: Usage,
    prices: Prices,
) -> CompileOutcome:
    written_paths = {p.path for p in written}
    for page in sorted(pages, key=lambda p: p.path):
        if page.path in written_paths:
            events.append({"event_type": "page_written", "page_path": page.path})
        elif page.derived_from_build_id is not None:
            events.append(
                {
                    "event_type": "page_carried_over",
                    "page_path": page.path,
                    "payload": {"derived_from_build_id": str(page.derived_from_build_id)},
                }
            )
    events += [{"event_type": "page_deleted", "page_path": p} for p in sorted(deleted)]
    events += [
        {
            "event_type": "index_generated",
            "page_path": "wiki/index.md",
            "detail": f"{len(pages) - 1} pages linked",
        },
        {"event_type": "check_passed", "detail": f"{len(pages)} pages"},
    ]
    entry = _usage_entry(inputs, ctx, usage, prices, "succeeded", None)
    reused = sum(1 for p in pages if p.derived_from_build_id is not None)
    rows = [
        {
            "path": p.path,
            "kind": p.kind,
            "title": p.title,
            "content": p.content,
            "content_hash": content_hash(p.content),
            "derived_from_build_id": p.derived_from_build_id,
            "citations": p.citations,
            "links": p.links,
        }
        for p in pages
    ]
    try:
        _write_success(db, build_id, ctx, inputs, rows, written, reused, events, entry, prices)
    except _Superseded as exc:  # rolled back: nothing of this attempt is written
        return CompileOutcome(build_id, "lease_lost", str(exc))
    return CompileOutcome(build_id, "succeeded", usage=usage, cost_micros=entry["cost_micros"])


class _Superseded(Exception):
    """This attempt no longer owns the build; raised inside the outcome transaction to roll it back."""


def _write_success(
    db: TenantTransactions,
    build_id: UUID,
    ctx: CompileContext,
    inputs: _Inputs,
    rows: list[dict[str, Any]],
    written: list[DraftPage],
    reused: int,
    events: list[dict[str, Any]],
    entry: dict[str, Any],
    prices: Prices,
) -> None:
    a = ctx.account_id
    build = inputs.build
    review_job = index_job = None
    with ctx.success_tx() if ctx.success_tx else db.tenant(a) as conn:
        if not _guarded(conn, ctx):
            raise _Superseded("the lease was lost")
        if not repo.update_build(
            conn,
            account_id=a,
            build_id=build_id,
            expect_status="running",
            expect_attempts=inputs.attempt,
            changes={"error": None},
        ):
            raise _Superseded("another attempt owns the build")
        doc_ids = {d["path"]: d["id"] for d in inputs.documents}
        activate = build["activate_on_success"]
        final = [
            {
                "event_type": "build_succeeded",
                "detail": f"{len(written)} pages written, {reused} carried over",
            }
        ]
        if activate:
            final.append({"event_type": "build_activated", "detail": "activate_on_success"})
        repo.add_events(conn, account_id=a, build_id=build_id, events=events + final)
        log = log_page(repo.events(conn, account_id=a, build_id=build_id)[0])
        rows.append(
            {
                "path": log.path,
                "kind": log.kind,
                "title": log.title,
                "content": log.content,
                "content_hash": content_hash(log.content),
                "derived_from_build_id": None,
                "citations": [],
                "links": [],
            }
        )
        repo.insert_pages(conn, account_id=a, build_id=build_id, pages=rows, document_ids=doc_ids)
        changes: dict[str, Any] = {
            **_spend(inputs, entry, prices),
            "status": "succeeded",
            "check_status": "passed",
            "check_failures": [],
            "pages_written": len(written),
            "pages_reused": reused,
            "finished_at": _now(),
        }
        if inputs.impact is not None:
            changes["impact"] = inputs.impact.as_dict()
        repo.update_build(conn, account_id=a, build_id=build_id, changes=changes)
        if activate:
            repo.set_active_build(conn, account_id=a, source_id=build["source_id"], build_id=build_id)
            review_job = enqueue_review(
                conn, account_id=a, build_id=build_id
            )  # issue 15: review after activation
            index_job = reindex.enqueue(conn, account_id=a, source_id=build["source_id"])
    if review_job is not None:
        jobs.wake(review_job)
    if index_job is not None:
        jobs.wake(index_job.id)
