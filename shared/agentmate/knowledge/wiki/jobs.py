"""The wiki's kinds on the job queue (``agentmate.jobs``): ``wiki_compile`` runs ``compile_build`` for one build;
``wiki_index`` re-indexes a source's active build after an activation (``reindex``).

The build row is what users see; the job row is the queue's lease. The runner maps a compile outcome onto the
queue's vocabulary (retry → ``Retryable`` with the provider's Retry-After, failure → ``Permanent``, a shutdown
during the model call → ``Yield``: the call abandoned, build and job attempts refunded), commits a
success inside the queue's lease-guarded ``ctx.finish`` transaction, and reports each attempt's tokens.
``on_change`` mirrors the job transitions the runner does not write itself, in the same transaction: a claim of
a build still marked running (its last worker died) records ``attempt_abandoned``, a requeue or a yield puts a
running build back to queued, a job that failed without the runner's say (attempts used up by
workers that died, an unknown error) fails the build, a cancel cancels it. Finished builds are never touched.

Registered here and only here, as every kind (agentmate/jobs/registry.py): the kind-name constants live with
the code that enqueues them (``service.JOB_KIND``, ``reindex.INDEX_JOB_KIND``); runners.py imports this module.
"""

from __future__ import annotations

from typing import Any

from agentmate import jobs
from agentmate.core.db import Conn, get_database
from agentmate.knowledge.wiki import repository as repo
from agentmate.knowledge.wiki.compiler import CompileContext, compile_build
from agentmate.knowledge.wiki.reindex import INDEX_JOB_KIND, INDEX_TIMEOUT_S
from agentmate.knowledge.wiki.service import JOB_KIND
from agentmate.llm.settings import get_model_settings


def run(ctx: jobs.RunContext) -> dict[str, Any] | None:
    job = ctx.job
    build_id = job.subject_id
    if build_id is None:
        raise jobs.Permanent("a wiki_compile job names its build as subject_id")
    if ctx.shutdown.is_set():
        raise jobs.Yield("shutting down before the compile started")
    outcome = compile_build(
        get_database(),
        build_id,
        CompileContext(
            account_id=job.account_id,
            attempt=job.attempts,
            max_attempts=job.max_attempts,
            remaining_seconds=ctx.remaining_seconds,
            lease_lost=ctx.lease_lost,
            shutdown=ctx.shutdown,
            owns_lease=lambda _conn: not ctx.lease_lost.is_set(),
            success_tx=lambda: ctx.finish({"build_id": str(build_id)}),
            report_usage=lambda usage, cost: ctx.add_usage(
                input_tokens=usage.prompt_tokens, output_tokens=usage.completion_tokens, cost_micros=cost
            ),
        ),
    )
    if outcome.status == "retry":
        raise jobs.Retryable(outcome.reason or "retryable model failure", retry_after=outcome.retry_after)
    if outcome.status == "failed":
        raise jobs.Permanent(outcome.reason or "the build failed")
    if outcome.status == "lease_lost":
        raise jobs.LeaseLost(outcome.reason or "the lease was lost")
    if outcome.status == "yielded":  # the build is queued again with its attempt refunded; the job's is too
        raise jobs.Yield(outcome.reason or "shutting down")
    return {"build_id": str(build_id), "status": outcome.status}


def on_change(conn: Conn, job: jobs.Job) -> None:
    if job.subject_id is None:
        return
    build = repo.build_row(conn, account_id=job.account_id, build_id=job.subject_id)
    if build is None or build["status"] not in ("queued", "running"):
        return
    changes: dict[str, Any] | None = None
    if job.status == "running" and build["status"] == "running":
        # A claim of a build still marked running: the previous attempt's worker stopped renewing its lease
        # (killed, or partitioned away) and its lease expired. Nothing of that attempt was written; say so.
        repo.add_events(
            conn,
            account_id=job.account_id,
            build_id=job.subject_id,
            events=[
                {
                    "event_type": "attempt_abandoned",
                    "detail": f"attempt {build['attempts']} stopped renewing its lease (its worker died or was cut off); "
                    f"attempt {job.attempts} takes the build over",
                    "payload": {
                        "job_id": str(job.id),
                        "abandoned_attempt": build["attempts"],
                        "attempt": job.attempts,
                    },
                }
            ],
        )
        return
    if job.status == "queued" and build["status"] == "running":
        changes = {"status": "queued"}
    elif job.status == "failed":
        changes = {
            "status": "failed",
            "error": job.last_error or "the compile job failed",
            "finished_at": job.finished_at,
        }
    elif job.status == "cancelled":
        changes = {
            "status": "cancelled",
            "error": job.last_error or "cancelled",
            "finished_at": job.finished_at,
        }
    if changes is None:
        return
    repo.add_events(
        conn,
        account_id=job.account_id,
        build_id=job.subject_id,
        events=[
            {
                "event_type": f"job_{job.status}",
                "detail": job.last_error or "",
                "payload": {"job_id": str(job.id), "attempts": job.attempts},
            }
        ],
    )
    repo.update_build(conn, account_id=job.account_id, build_id=job.subject_id, changes=changes)


def run_index(ctx: jobs.RunContext) -> dict[str, Any]:
    """Index the source's active build (idempotent: a build the index already reflects is skipped, except on a
    retry, which re-runs a partial index). A partial run is retried; the job's result carries the counts."""
    from agentmate.knowledge.wiki import retrieval
    from agentmate.retrieval.service import get_retrieval

    source_id = ctx.job.subject_id
    if source_id is None:
        raise jobs.Permanent("a wiki_index job names its knowledge source as subject_id")
    if ctx.stopping:
        raise jobs.Yield("stopping before the index started")
    outcome = retrieval.sync_source(
        ctx.db, get_retrieval(), ctx.job.account_id, source_id, force=ctx.job.attempts > 1
    )
    if outcome is None:
        return {"status": "up_to_date"}
    if outcome.status == "partial":
        raise jobs.Retryable(
            f"{outcome.failed_chunks} of {outcome.chunks} chunks failed to index: {outcome.error}"
        )
    return outcome.model_dump(mode="json")


jobs.register(
    JOB_KIND, run, timeout_seconds=lambda: get_model_settings().compiler_timeout_seconds, on_change=on_change
)
jobs.register(INDEX_JOB_KIND, run_index, timeout_seconds=INDEX_TIMEOUT_S)
