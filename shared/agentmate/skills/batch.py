"""Work over every active version (a compile backfill, a card index run) bounded so a request finishes well
inside API Gateway's 30 s: at most ``MAX_INLINE_VERSIONS`` versions inline, within ``INLINE_BUDGET_S``; more is
queued as a job (kinds in ``compile/jobs.py`` and ``search/jobs.py``) and the request answers 202 with it. A job
run covers up to ``MAX_VERSIONS`` versions within ``JOB_TIMEOUT_S``."""

from __future__ import annotations

import time
from uuid import UUID, uuid5

from agentmate import jobs
from agentmate.core.db import TenantTransactions
from agentmate.jobs.schemas import JobView
from agentmate.skills import repository as repo

MAX_INLINE_VERSIONS = 200
INLINE_BUDGET_S = 20.0
# Room for thousands of versions; with the 60 s finish margin it fits the 900 s worker function.
JOB_TIMEOUT_S = 600.0
MAX_VERSIONS = 100_000
_SUBJECTS = UUID("5b0f8f4e-5a56-4d4c-9a55-7c1b3f1d6a10")


def subject(kind: str, skill_name: str | None) -> UUID:
    """One unfinished job per account, kind and scope: a second request hands back the first job."""
    return uuid5(_SUBJECTS, f"{kind}:{skill_name or '*'}")


def inline_ids(db: TenantTransactions, account_id: UUID, skill_name: str | None) -> list[UUID] | None:
    """The active versions to work on inline, or None when there are more than a request may cover."""
    with db.tenant(account_id) as conn:
        ids = repo.active_version_ids(
            conn, account_id=account_id, skill_name=skill_name, limit=MAX_INLINE_VERSIONS + 1
        )
    return None if len(ids) > MAX_INLINE_VERSIONS else ids


def over_budget(started: float) -> bool:
    return time.monotonic() - started > INLINE_BUDGET_S


def queue(db: TenantTransactions, account_id: UUID, kind: str, skill_name: str | None) -> JobView:
    """Queue the whole run as a job (an unfinished one of the same scope is handed back) and wake a worker."""
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn,
            account_id=account_id,
            kind=kind,
            subject_id=subject(kind, skill_name),
            payload={"skill_name": skill_name} if skill_name else {},
        )
    jobs.wake(job.id)
    return JobView.of(job)


def job_version_ids(ctx: jobs.RunContext, skill_name: str | None) -> list[UUID]:
    """The active versions a job run covers (all of the account's, or one skill's)."""
    with ctx.tenant() as conn:
        return repo.active_version_ids(
            conn, account_id=ctx.job.account_id, skill_name=skill_name, limit=MAX_VERSIONS
        )
