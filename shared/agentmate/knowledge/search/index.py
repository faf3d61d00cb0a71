"""Chunk-index the active revisions of knowledge sources (spec/001 K2 ``POST /api/knowledge/index``).

Per source: chunk every text document of the active revision (``chunking``), extract its package links
(``links``), write the chunks to the ``knowledge`` retrieval namespace (embedding with the configured embedder; an
unchanged chunk is not re-embedded), then in one transaction make the source's chunk rows, link graph and index
state exactly this revision's and delete its retrieval rows of earlier revisions or keys no longer produced (unless
more than 20 chunks failed: then the earlier rows keep serving, as prior-art does). Vector points of deleted rows
are removed after the commit.

Inline budget (the skills registry's rule): at most ``MAX_INLINE_SOURCES`` sources and
KNOWLEDGE_INDEX_INLINE_BUDGET_SECONDS (20 s, under API Gateway's 30 s) per request. Before each unit of work (a
source, an embedding slice: one embedding call) the request stops when the time left cannot cover the longest
unit so far: a slow embedder (under load one slice took 35 s, issue 20) makes the request hand over early
instead of overrunning. Past it the rest becomes a
``knowledge_index`` job (``agentmate.jobs``) and the request answers 202 with it: the sources finished inline are
kept (and listed), and the job continues where the request stopped: it skips every source whose active revision
was indexed since the request began, and in the interrupted source the chunks already embedded are not embedded
again (retrieval skips unchanged rows). A yielded or retried job continues the same way. Each source's index
state (the catalog's ``index_status``) commits as that source finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any
from uuid import UUID, uuid5

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentmate import jobs
from agentmate.core.db import Database, TenantTransactions
from agentmate.core.errors import Conflict, NotFound
from agentmate.core.observability import counted
from agentmate.core.principal import Principal
from agentmate.knowledge.chunking import chunk_document
from agentmate.knowledge.search import repository as repo
from agentmate.knowledge.search.links import extract_links
from agentmate.knowledge.search.repository import ActiveSource, TextDocument
from agentmate.knowledge.search.schemas import (
    KnowledgeIndexOutcome,
    KnowledgeIndexReport,
    KnowledgeIndexRequest,
)
from agentmate.retrieval import embedders
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.service import DocumentIn, Retrieval

NAMESPACE = "knowledge"
SOURCE_TYPE = "knowledge_chunk"
MAX_INLINE_SOURCES = 200
# Chunks per retrieval call, the budget's unit: retrieval's INDEX_BATCH, so one slice is one embedding call (a
# larger slice would be several calls the budget cannot look between).
EMBED_SLICE = 64
MAX_FAILED_BEFORE_KEEPING_OLD_ROWS = 20
INDEX_JOB_KIND = "knowledge_index"
# A run that left chunks without a vector (the embedder or the vector index failed) queues this at once; it
# re-indexes those sources with the queue's backoff (30 s x 2^(n-1), capped) over HEAL_ATTEMPTS attempts, as
# memory's retrieval_heal does.
HEAL_KIND = "knowledge_index_heal"
HEAL_ATTEMPTS = 10
# A heal job that used up its attempts during a long outage leaves its sources ``partial`` with nothing queued:
# the scheduled sweep (``sweep_heal``, registered in search/jobs.py) queues it again, for at most this many
# accounts a sweep (one job per account: the heal subject).
HEAL_SWEEP_BATCH = 100
JOB_TIMEOUT_S = 600.0  # with the 60 s finish margin it fits the 900 s worker function
MAX_JOB_SOURCES = 100_000
_SUBJECTS = UUID("0c5e3a52-2f0e-4a8e-9d7b-1f4b7f3c9e21")
_HEAL_SUBJECT = uuid5(_SUBJECTS, HEAL_KIND)  # one unfinished heal job per account


@dataclass(slots=True)
class _Prepared:
    docs: list[DocumentIn]
    chunks: list[dict[str, Any]]
    links: list[dict[str, Any]]
    documents: int
    truncated: int
    dangling: int
    escaping: int


class IndexSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # The request's inline budget; API Gateway cuts a request at 30 s, so at most 25 leaves room to answer.
    knowledge_index_inline_budget_seconds: float = Field(default=20.0, gt=0, le=25)


@lru_cache(maxsize=1)
def get_index_settings() -> IndexSettings:
    return IndexSettings()


class _OverBudget(Exception):
    """The request's inline budget ran out: the rest is queued as a job."""


class _Budget:
    """The check run before each unit of work: raises ``_OverBudget`` when the time left before the deadline
    cannot cover the longest unit seen so far (the time between two checks). ``deadline`` also bounds each
    embedding call (``embedders.deadline``), so the first, unmeasured one cannot overrun it either."""

    def __init__(self, started: float) -> None:
        self.deadline = started + get_index_settings().knowledge_index_inline_budget_seconds
        self._last, self._longest = started, 0.0

    def __call__(self) -> None:
        now = time.monotonic()
        self._longest = max(self._longest, now - self._last)
        self._last = now
        if now + self._longest > self.deadline:
            raise _OverBudget


def prepare(source: ActiveSource, documents: list[TextDocument]) -> _Prepared:
    """Chunks, retrieval documents and links of one revision (pure apart from its inputs)."""
    by_path = {d["path"]: d["id"] for d in documents}
    out = _Prepared([], [], [], 0, 0, 0, 0)
    for d in documents:
        if not d["is_text"] or d["content"] is None:
            continue
        out.documents += 1
        chunked = chunk_document(d["path"], d["content"], d["mime_type"])
        out.truncated += chunked.truncated
        for c in chunked.chunks:
            out.chunks.append(
                {
                    "document_id": d["id"],
                    "chunk_key": c.key,
                    "ordinal": c.ordinal,
                    "heading_path": c.heading_path,
                    "content": c.content,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                }
            )
            out.docs.append(
                DocumentIn(
                    namespace=NAMESPACE,
                    source_type=SOURCE_TYPE,
                    source_id=str(d["id"]),
                    chunk_key=c.key,
                    title=c.title(d["path"]),
                    content=c.content,
                    metadata={
                        "source_id": str(source["id"]),
                        "revision_id": str(source["active_revision_id"]),
                        "document_id": str(d["id"]),
                        "path": d["path"],
                        "heading_path": c.heading_path,
                        "knowledge_base": source["name"],
                    },
                )
            )
        if not chunked.markdown:
            continue
        extracted = extract_links(d["path"], d["content"])
        out.escaping += extracted.escaping
        for ordinal, link in enumerate(extracted.links):
            target = by_path.get(link.target_path)
            out.dangling += target is None
            out.links.append(
                {
                    "source_document_id": d["id"],
                    "target_path": link.target_path,
                    "target_document_id": target,
                    "kind": link.kind,
                    "ordinal": ordinal,
                }
            )
    return out


def _index_source(
    db: TenantTransactions,
    rt: Retrieval,
    account_id: UUID,
    source: ActiveSource,
    check: Callable[[], None],
    deadline: float | None = None,
) -> KnowledgeIndexOutcome:
    """Index one source's active revision; ``check`` runs between embedding slices (it raises to stop). With a
    ``deadline`` (an inline request's), each slice's embedding calls end by it, and a slice that reached it stops
    the run: its chunks are left ``failed``, which the job embeds again."""
    revision_id = source["active_revision_id"]
    with db.tenant(account_id) as conn:
        documents = repo.text_documents(conn, account_id=account_id, revision_id=revision_id)
    prep = prepare(source, documents)
    failed = 0
    error: str | None = None
    for start in range(0, len(prep.docs), EMBED_SLICE):
        check()
        with embedders.deadline(deadline):
            results = rt.index_documents(db, account_id, prep.docs[start : start + EMBED_SLICE])
        if deadline is not None and time.monotonic() >= deadline:
            raise _OverBudget
        for result in results:
            if result.status == "failed":
                failed += 1
                error = error or result.error
    outcome = KnowledgeIndexOutcome(
        source_id=source["id"],
        name=source["name"],
        revision_id=revision_id,
        status="indexed" if failed == 0 else "partial",
        documents=prep.documents,
        chunks=len(prep.chunks),
        failed_chunks=failed,
        truncated_documents=prep.truncated,
        links=len(prep.links),
        dangling_links=prep.dangling,
        escaping_links=prep.escaping,
        removed_chunks=0,
        error=error,
    )
    state = outcome.model_dump(
        include={
            "status",
            "documents",
            "chunks",
            "failed_chunks",
            "truncated_documents",
            "links",
            "dangling_links",
            "escaping_links",
        }
    )
    removed: list[UUID] = []
    with db.tenant(account_id) as conn:
        repo.replace_revision(
            conn,
            account_id=account_id,
            source_id=source["id"],
            revision_id=revision_id,
            chunks=prep.chunks,
            links=prep.links,
            state=state,
        )
        if failed <= MAX_FAILED_BEFORE_KEEPING_OLD_ROWS:
            removed = retrieval.remove_stale(
                conn,
                account_id,
                namespace=NAMESPACE,
                source_type=SOURCE_TYPE,
                metadata={"source_id": str(source["id"])},
                keep=[(d.source_id, d.chunk_key) for d in prep.docs],
            )
    rt.remove_points(account_id, removed)
    outcome.removed_chunks = len(removed)
    return outcome


def subject(source_id: UUID | None) -> UUID:
    """One unfinished index job per account and scope (one source, or all): a second request hands back the first."""
    return uuid5(_SUBJECTS, f"{INDEX_JOB_KIND}:{source_id or '*'}")


def _queue(db: TenantTransactions, account_id: UUID, source_id: UUID | None, since: datetime) -> jobs.JobView:
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn,
            account_id=account_id,
            kind=INDEX_JOB_KIND,
            subject_id=subject(source_id),
            payload={"source_id": str(source_id) if source_id else None, "since": since.isoformat()},
        )
    jobs.wake(job.id)
    return jobs.JobView.of(job)


def _report(
    db: TenantTransactions, account: UUID, items: list[KnowledgeIndexOutcome], job: jobs.JobView | None = None
) -> KnowledgeIndexReport:
    """The run's report with the account's chunks still waiting for their vector; a run that left some queues the
    heal job (after its commits)."""
    if any(i.failed_chunks for i in items):
        schedule_heal(db, account)
    with db.tenant(account) as conn:
        waiting = retrieval.waiting_count(conn, account, NAMESPACE)
    indexed = sum(1 for i in items if i.status == "indexed")
    return KnowledgeIndexReport(
        items=items, indexed=indexed, partial=len(items) - indexed, total=len(items), job=job, waiting=waiting
    )


def schedule_heal(db: TenantTransactions, account_id: UUID) -> None:
    """Queue the account's ``knowledge_index_heal`` job (a queued or running one is reused) and wake a worker."""
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn, account_id=account_id, kind=HEAL_KIND, subject_id=_HEAL_SUBJECT, max_attempts=HEAL_ATTEMPTS
        )
    jobs.wake(job.id)


def sweep_heal(db: Database) -> int:
    """The sweep's part (``search/jobs.py`` registers it): queue the heal job of each account whose active
    revisions' last index run left chunks without a vector and that has no heal job queued or running (e.g. one
    that used up its attempts while the embedder or the vector index was down). Memory's ``retrieval_heal`` sweep
    re-embeds those chunks' rows but not the sources' index state, which only this job's run rewrites. Returns
    how many it queued."""
    with db.transaction() as conn:
        accounts = repo.accounts_partial(conn, heal_kind=HEAL_KIND, limit=HEAL_SWEEP_BATCH)
    for account_id in accounts:
        schedule_heal(db, account_id)
    return len(accounts)


@counted("KnowledgeIndex")
def index_active(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: KnowledgeIndexRequest
) -> KnowledgeIndexReport:
    """Index inline within the request's budget; what does not fit becomes a job (the report's ``job``: 202)."""
    return index_sources(db, rt, principal.account_id, body.source_id)


def index_sources(
    db: TenantTransactions, rt: Retrieval, account: UUID, source_id: UUID | None
) -> KnowledgeIndexReport:
    """``index_active`` for an account: one source (``source_id``) or every source with an active revision. A
    push with ``index=true`` (``knowledge.sources``) calls it after its commit."""
    started, since = time.monotonic(), datetime.now(UTC)
    with db.tenant(account) as conn:
        if source_id is not None and not repo.source_exists(conn, account_id=account, source_id=source_id):
            raise NotFound("knowledge source")
        sources = repo.active_sources(
            conn, account_id=account, source_id=source_id, limit=MAX_INLINE_SOURCES + 1
        )
    if source_id is not None and not sources:
        raise Conflict("the knowledge source has no active revision yet: sync it or push a snapshot first")
    if len(sources) > MAX_INLINE_SOURCES:
        return _report(db, account, [], _queue(db, account, source_id, since))
    items: list[KnowledgeIndexOutcome] = []
    check = _Budget(started)
    try:
        for source in sources:
            check()
            items.append(_index_source(db, rt, account, source, check, check.deadline))
    except _OverBudget:
        return _report(db, account, items, _queue(db, account, source_id, since))
    return _report(db, account, items)


def run_job(ctx: jobs.RunContext) -> dict[str, Any]:
    """The ``knowledge_index`` job: every active source of the scope not indexed since ``since`` (the request's
    start, or the job's queueing), one at a time, yielding between slices when the worker is stopping."""
    from agentmate.retrieval.service import get_retrieval

    payload, account = ctx.job.payload, ctx.job.account_id
    source_id = UUID(payload["source_id"]) if payload.get("source_id") else None
    since = datetime.fromisoformat(payload["since"]) if payload.get("since") else ctx.job.queued_at
    with ctx.tenant() as conn:
        sources = repo.active_sources(conn, account_id=account, source_id=source_id, limit=MAX_JOB_SOURCES)
        done = repo.indexed_since(
            conn, account_id=account, revision_ids=[s["active_revision_id"] for s in sources], since=since
        )

    def check() -> None:
        if ctx.stopping:
            raise jobs.Yield("stopping: the next run continues where this one stopped")

    rt = get_retrieval()
    counts = {"indexed": 0, "partial": 0, "skipped": 0}
    for source in sources:
        if source["active_revision_id"] in done:
            counts["skipped"] += 1  # indexed by the request, or by an earlier run of this job
            continue
        check()
        counts[_index_source(ctx.db, rt, account, source, check).status] += 1
    if counts["partial"]:
        schedule_heal(ctx.db, account)
    return {**counts, "total": len(sources)}


def run_heal(ctx: jobs.RunContext) -> dict[str, Any]:
    """The ``knowledge_index_heal`` job: index again each source whose active revision has chunks without a vector
    (unchanged chunks are not embedded again); ``Retryable`` (the queue's backoff) while some still fail."""
    from agentmate.retrieval.service import get_retrieval

    account = ctx.job.account_id
    with ctx.tenant() as conn:
        sources = repo.sources_with_failed_chunks(conn, account_id=account, limit=MAX_JOB_SOURCES)

    def check() -> None:
        if ctx.stopping:
            raise jobs.Yield("stopping: the next run starts over with the sources still waiting")

    rt = get_retrieval()
    failed: list[KnowledgeIndexOutcome] = []
    for source in sources:
        check()
        outcome = _index_source(ctx.db, rt, account, source, check)
        if outcome.failed_chunks:
            failed.append(outcome)
    if failed:
        raise jobs.Retryable(
            f"{sum(o.failed_chunks for o in failed)} chunks of {len(failed)} sources still without a vector: "
            f"{failed[0].error}"
        )
    return {"healed": len(sources), "waiting": 0}
