"""The job queue: Postgres lease rows, woken by SQS in Lambda and by an in-process poller locally.

A use case's ``jobs.py`` registers its kind (the rule is in ``agentmate/jobs/registry.py``), e.g.
``skills/compile/jobs.py``::

    from agentmate.skills.compile.backfill import COMPILE_KIND  # the constant lives with the code that enqueues
    jobs.register(COMPILE_KIND, _compile, timeout_seconds=batch.JOB_TIMEOUT_S)  # optional on_change=...

and the use case enqueues it in its transaction, then wakes a worker after the commit::

    job = jobs.enqueue(conn, account_id=..., kind=COMPILE_KIND, subject_id=..., payload={...})
    ...commit...; jobs.wake(job.id)

``runner(ctx)`` gets ``ctx.job``, ``ctx.remaining_seconds()``, ``ctx.lease_lost`` / ``ctx.shutdown`` (events),
``ctx.tenant()`` (a transaction under the job's account), ``ctx.add_usage(...)`` and ``ctx.finish(result)`` (the
lease-guarded success transaction for its own writes); it returns a result dict or raises ``Retryable`` /
``Permanent`` / ``Yield``. Rules: agentmate/jobs/worker.py and docs/decisions.md "Job queue".
"""

from typing import TYPE_CHECKING

from agentmate.core.lazy import lazy_exports

if TYPE_CHECKING:
    from agentmate.jobs.errors import LeaseLost, Permanent, Retryable, Yield
    from agentmate.jobs.registry import Kind, RunContext, kinds, register, register_sweeper, unregister
    from agentmate.jobs.schemas import Job, JobStatus, JobUsage, JobView, KindStats, QueueStats
    from agentmate.jobs.service import cancel, enqueue, get_job, list_jobs, queue_stats, read_job
    from agentmate.jobs.wakeup import wake

# Loaded on first use (cold start): a response model that imports agentmate.jobs.schemas does not load the queue.
__getattr__ = lazy_exports(
    __name__,
    {
        "errors": ("LeaseLost", "Permanent", "Retryable", "Yield"),
        "schemas": ("Job", "JobStatus", "JobUsage", "JobView", "KindStats", "QueueStats"),
        "registry": ("Kind", "RunContext", "kinds", "register", "register_sweeper", "unregister"),
        "service": ("cancel", "enqueue", "get_job", "list_jobs", "queue_stats", "read_job"),
        "wakeup": ("wake",),
    },
)

__all__ = [
    "Job",
    "JobStatus",
    "JobUsage",
    "JobView",
    "Kind",
    "KindStats",
    "LeaseLost",
    "Permanent",
    "QueueStats",
    "Retryable",
    "RunContext",
    "Yield",
    "cancel",
    "enqueue",
    "get_job",
    "kinds",
    "list_jobs",
    "queue_stats",
    "read_job",
    "register",
    "register_sweeper",
    "unregister",
    "wake",
]
