"""The ``skills_compile_backfill`` job: compile every active version of the account when a backfill is more than
a request may cover inline (``skills.batch``). The runner is idempotent (a version's artifact is an upsert), so a
yielded or retried run simply starts over."""

from __future__ import annotations

from typing import Any

from agentmate import jobs
from agentmate.skills import batch
from agentmate.skills.compile.backfill import COMPILE_KIND
from agentmate.skills.compile.service import refresh_artifact


def _compile(ctx: jobs.RunContext) -> dict[str, Any]:
    compiled = failed = 0
    for vid in batch.job_version_ids(ctx, None):
        if ctx.stopping:
            raise jobs.Yield("stopping")
        outcome = refresh_artifact(ctx.db, ctx.job.account_id, vid)
        compiled += outcome.status == "compiled"
        failed += outcome.status != "compiled"
    return {"compiled": compiled, "failed": failed, "total": compiled + failed}


jobs.register(COMPILE_KIND, _compile, timeout_seconds=batch.JOB_TIMEOUT_S)
