"""Tenant-facing queue operations: enqueue (inside the caller's transaction), read one job, list, statistics."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, Database
from agentmate.core.errors import NotFound
from agentmate.core.pagination import Page, PageParams
from agentmate.jobs import repository as repo
from agentmate.jobs.schemas import Job, JobStatus, JobView, QueueStats


def enqueue(
    conn: Conn,
    *,
    account_id: UUID,
    kind: str,
    subject_id: UUID | None = None,
    payload: dict[str, Any] | None = None,
    max_attempts: int = 3,
) -> Job:
    """Queue a job inside the caller's tenant transaction and return it. An unfinished job of the same kind and
    subject is returned instead of a second one. Send the wake-up after the transaction commits:
    ``jobs.wake(job.id)`` (a wake-up for an uncommitted row would find nothing to claim)."""
    return repo.insert(
        conn,
        account_id=account_id,
        kind=kind,
        subject_id=subject_id,
        payload=payload or {},
        max_attempts=max_attempts,
    )


def get_job(db: Database, account_id: UUID, job_id: UUID) -> Job:
    with db.tenant(account_id) as conn:
        job = repo.get(conn, account_id=account_id, job_id=job_id)
    if job is None:
        raise NotFound("job")
    return job


def read_job(db: Database, account_id: UUID, job_id: UUID) -> JobView:
    """One job of this account as its owner sees it (404 for another account's id: RLS and the filter agree)."""
    return JobView.of(get_job(db, account_id, job_id))


def list_jobs(
    db: Database,
    account_id: UUID,
    page: PageParams,
    *,
    kind: str | None = None,
    status: JobStatus | None = None,
    subject_id: UUID | None = None,
) -> Page[JobView]:
    """The account's jobs, newest first, optionally of one kind, status or subject."""
    with db.tenant(account_id) as conn:
        items, total = repo.list_jobs(
            conn,
            account_id=account_id,
            kind=kind,
            status=status,
            subject_id=subject_id,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[JobView](
        items=[JobView.of(j) for j in items], total=total, limit=page.limit, offset=page.offset
    )


def cancel(conn: Conn, *, account_id: UUID, job_id: UUID, reason: str = "cancelled") -> Job | None:
    """Cancel an unfinished job inside the caller's transaction (None when it was already finished or is not
    this account's). A worker running it sees the cancel at its next heartbeat and writes nothing."""
    return repo.cancel(conn, account_id=account_id, job_id=job_id, reason=reason)


def queue_stats(db: Database, account_id: UUID) -> QueueStats:
    """The account's unfinished jobs: waiting, running, backing off, stalled, and the oldest waiting age."""
    with db.tenant(account_id) as conn:
        per_kind = repo.stats(conn, account_id=account_id)
    ages = [k.oldest_waiting_age_seconds for k in per_kind if k.oldest_waiting_age_seconds is not None]
    return QueueStats(
        waiting=sum(k.waiting for k in per_kind),
        running=sum(k.running for k in per_kind),
        backing_off=sum(k.backing_off for k in per_kind),
        stalled=sum(k.stalled for k in per_kind),
        oldest_waiting_age_seconds=max(ages) if ages else None,
        kinds=per_kind,
    )
