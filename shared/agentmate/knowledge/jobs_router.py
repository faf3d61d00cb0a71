"""Queue statistics and job reads (spec/001 "GET /api/knowledge/queue"; the job queue is agentmate.jobs): the
wiki compile and the other work that does not fit a request (large sync, index, backfill) answer 202 with a
job, and these routes say where it is. It stays at the top of ``knowledge``: it serves every knowledge job kind
(sync, index, wiki compile/index/review) and has no service of its own (``agentmate.jobs`` is).
MCP twin: ``agentmate.mcp.tools.knowledge.jobs``."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query

from agentmate import jobs
from agentmate.api.deps import DbDep, KnowledgeRead, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.pagination import Page

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)
KIND_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"


@router.get("/queue", response_model=jobs.QueueStats)
def queue_stats(principal: KnowledgeRead, db: DbDep) -> jobs.QueueStats:
    """This account's unfinished jobs: waiting (due, no worker yet), running, backing_off (a retry not due yet),
    stalled (running but the lease expired: the worker died; the sweep re-sends it within minutes), and the age of
    the oldest waiting job, in total and per kind (wiki_compile, ...). Queue wait and a stuck worker differ here."""
    return jobs.queue_stats(db, principal.account_id)


@router.get("/jobs", response_model=Page[jobs.JobView])
def list_jobs(
    principal: KnowledgeRead,
    db: DbDep,
    page: PageDep,
    kind: Annotated[
        str | None, Query(pattern=KIND_PATTERN, max_length=64, description="Only jobs of this kind")
    ] = None,
    status: Annotated[jobs.JobStatus | None, Query(description="Only jobs in this status")] = None,
    subject_id: Annotated[
        UUID | None, Query(description="Only jobs working on this row (e.g. a build)")
    ] = None,
) -> Page[jobs.JobView]:
    """This account's jobs, newest first."""
    return jobs.list_jobs(db, principal.account_id, page, kind=kind, status=status, subject_id=subject_id)


@router.get("/jobs/{job_id}", response_model=jobs.JobView)
def get_job(job_id: UUID, principal: KnowledgeRead, db: DbDep) -> jobs.JobView:
    """One job: status, attempts (claims; a shutdown refunds one), next attempt, last error, result, usage."""
    return jobs.read_job(db, principal.account_id, job_id)
