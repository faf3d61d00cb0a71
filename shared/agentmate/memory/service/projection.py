"""The retrieval projection of a durable entry: its document, (re)indexing and indexing state.

A new entry's projection is written in the entry's own transaction (``index_in_transaction``), its embedding
started before that transaction opens so it overlaps the database work; a re-index (an update, a heal, a backfill)
runs after the writer's commit (``index_entry``). Either way an embedding or vector-index failure never loses a
memory: the entry is stored and reported with ``indexing.status = "failed"``, and search still finds it through the
lexical leg.
A failure queues the ``retrieval_heal`` job (``memory/jobs.py``): it re-embeds and re-indexes the account's waiting
projections, retried with the queue's backoff until the dependency is back; ``indexing.waiting`` on an entry's
read counts what is still waiting.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn, Database, TenantTransactions
from agentmate.memory.schemas import Indexing
from agentmate.memory.service.rules import utc
from agentmate.retrieval import service as retrieval_service
from agentmate.retrieval.service import DocumentIn, PendingIndex, Retrieval

NAMESPACE = "memory"
SOURCE_TYPE = "memory_entry"
CHUNK_KEY = "current"
HEAL_KIND = "retrieval_heal"
# The queue's backoff (30 s x 2^(n-1), capped) over this many attempts covers an outage of a few hours; a later
# failed store queues a new job.
HEAL_ATTEMPTS = 10
HEAL_SWEEP_BATCH = 100  # accounts queued per sweep


def entry_document(entry: Mapping[str, Any]) -> DocumentIn:
    """The retrieval projection of an entry (prior-art §4.3)."""
    metadata: dict[str, Any] = {
        "memory_id": str(entry["id"]),
        "scope_type": entry["scope_type"],
        "scope_key": entry["scope_key"],
        "memory_type": entry["memory_type"],
        "status": entry["status"],
        "confidence": entry["confidence"],
        "importance": entry["importance"],
        "valid_from": utc(entry["valid_from"]).isoformat(),
        "extraction_method": entry["extraction_method"],
        "attributes": entry["metadata"],
    }
    for key in ("valid_to", "ttl_at"):
        if entry.get(key) is not None:
            metadata[key] = utc(entry[key]).isoformat()
    if entry.get("source_event_id") is not None:
        metadata["source_event_id"] = str(entry["source_event_id"])
    return DocumentIn(
        namespace=NAMESPACE,
        source_type=SOURCE_TYPE,
        source_id=str(entry["id"]),
        chunk_key=CHUNK_KEY,
        title=entry["title"],
        content=document_text(entry["title"], entry["summary"], entry["content"]),
        metadata=metadata,
    )


def document_text(title: str, summary: str, content: str) -> str:
    """The projection's text, which is what gets embedded (known before the entry is written)."""
    return "\n\n".join(p for p in (title, summary, content) if p and p.strip())


def begin_index(retrieval: Retrieval, title: str, summary: str, content: str) -> PendingIndex:
    """Start embedding a new entry's projection before its transaction opens (``index_in_transaction``)."""
    return retrieval.begin_index(document_text(title, summary, content) or title)


def index_in_transaction(
    conn: Conn, pending: PendingIndex, account_id: UUID, entry: Mapping[str, Any]
) -> tuple[Indexing, UUID | None]:
    """A new entry's projection in the entry's own transaction: the document row (lexical projection) and, if the
    embedding is ready within the grace, its vector, with the account's heal job queued in that same transaction
    on a failure. Returns the indexing state (``pending`` when the embedding was not ready: the caller commits and
    calls ``finish_index``) and the heal job to wake after the commit (``jobs.wake``), if one was queued."""
    result = pending.complete(conn, account_id, entry_document(entry))
    if result is None:
        return Indexing(status="pending", document_id=pending.document_id), None
    job_id = _enqueue_heal(conn, account_id) if result.status == "failed" else None
    return Indexing(status=result.status, document_id=result.document_id, error=result.error), job_id


def finish_index(
    db: TenantTransactions, pending: PendingIndex, account_id: UUID
) -> tuple[Indexing, UUID | None]:
    """After the entry's commit, a projection ``index_in_transaction`` left pending: its embedding awaited with
    no connection held, then marked indexed (or failed, with the heal job queued) in one short transaction."""
    job: list[UUID] = []
    result = pending.finish(db, account_id, lambda conn: job.append(_enqueue_heal(conn, account_id)))
    return Indexing(status=result.status, document_id=result.document_id, error=result.error), (
        job[0] if job else None
    )


def _enqueue_heal(conn: Conn, account_id: UUID) -> UUID:
    return jobs.enqueue(
        conn, account_id=account_id, kind=HEAL_KIND, subject_id=account_id, max_attempts=HEAL_ATTEMPTS
    ).id


def index_entry(
    db: TenantTransactions, retrieval: Retrieval, account_id: UUID, entry: Mapping[str, Any]
) -> Indexing:
    """(Re)build an entry's retrieval projection; never raises for embedding/vector failures."""
    result = retrieval.index_document(db, account_id, entry_document(entry))
    if result.status == "failed":
        schedule_heal(db, account_id)
    return Indexing(status=result.status, document_id=result.document_id, error=result.error)


def schedule_heal(db: TenantTransactions, account_id: UUID) -> None:
    """Queue the account's heal job (one unfinished job per account: a queued or running one is reused) and wake a
    worker after the commit."""
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn, account_id=account_id, kind=HEAL_KIND, subject_id=account_id, max_attempts=HEAL_ATTEMPTS
        )
    jobs.wake(job.id)


def sweep_heal(db: Database) -> int:
    """The sweep's part (``memory/jobs.py`` registers it): queue a heal job for each account whose projections wait
    and that has none unfinished (e.g. a knowledge or skill index that failed, or a heal job that used up its
    attempts during a long outage). Returns how many it queued."""
    with db.transaction() as conn:
        accounts = retrieval_service.accounts_waiting(conn, heal_kind=HEAL_KIND, limit=HEAL_SWEEP_BATCH)
    for account_id in accounts:
        schedule_heal(db, account_id)
    return len(accounts)


def run_heal(ctx: jobs.RunContext) -> dict[str, Any]:
    """The ``retrieval_heal`` job: re-embed the account's waiting projections; ``Retryable`` (the queue's backoff)
    while the embedder or the vector index still fails, or while rows that failed during the run still wait."""
    from agentmate.retrieval.service import get_retrieval

    done = get_retrieval().heal(ctx.db, ctx.job.account_id)
    if done.error is not None:
        raise jobs.Retryable(f"{done.error}; {done.waiting} still waiting")
    if done.waiting:
        raise jobs.Retryable(f"{done.waiting} failed while healing; trying again")
    return {"healed": done.healed, "waiting": 0}


def waiting(conn: Conn, account_id: UUID) -> int:
    return retrieval_service.waiting_count(conn, account_id)


def index_entries(
    db: TenantTransactions, retrieval: Retrieval, account_id: UUID, entries: list[dict[str, Any]]
) -> list[Indexing]:
    """Batch form of ``index_entry`` (one embedding call per batch): used by backfills and the benchmark."""
    results = retrieval.index_documents(db, account_id, [entry_document(e) for e in entries])
    return [Indexing(status=r.status, document_id=r.document_id, error=r.error) for r in results]


def indexing_state(conn: Conn, account_id: UUID, entry_ids: list[UUID]) -> dict[UUID, Indexing]:
    states = retrieval_service.indexing_state(
        conn, account_id, namespace=NAMESPACE, source_type=SOURCE_TYPE, source_ids=[str(i) for i in entry_ids]
    )
    out: dict[UUID, Indexing] = {}
    for entry_id in entry_ids:
        state = states.get(str(entry_id))
        out[entry_id] = (
            Indexing(status=state["status"], document_id=state["id"], error=state["error"])
            if state
            else Indexing(status="missing")
        )
    return out


def remove_projection(conn: Conn, account_id: UUID, entry_id: UUID) -> list[UUID]:
    """Delete an entry's retrieval rows in the caller's transaction; pass the point ids to ``drop_points`` after
    the commit."""
    return retrieval_service.remove_source(
        conn, account_id, namespace=NAMESPACE, source_type=SOURCE_TYPE, source_id=str(entry_id)
    )


def drop_points(retrieval: Retrieval, account_id: UUID, point_ids: list[UUID], done: str) -> str | None:
    """Best-effort vector deletion after the commit; a warning when it failed (stale points are never served)."""
    warning = retrieval.remove_points(account_id, point_ids)
    return (
        f"{done}, but removing stale vectors failed ({warning}); they are never served" if warning else None
    )
