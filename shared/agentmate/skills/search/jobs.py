"""The ``skills_index`` job: index the L0 cards of every active version (of the account, or of one skill) when
that is more than a request may cover inline (``skills.batch``). The runner is idempotent (a card document is an
upsert), so a yielded or retried run simply starts over. And ``skills_index_heal``: cards left without a vector by an
embedder or vector-index failure are indexed again once it is back (``index.schedule_heal`` queues it,
``index.run_heal`` runs it)."""

from __future__ import annotations

from typing import Any

from agentmate import jobs
from agentmate.retrieval.service import get_retrieval
from agentmate.skills import batch
from agentmate.skills.search.index import HEAL_KIND, index_versions, run_heal
from agentmate.skills.search.service import INDEX_KIND


def _index(ctx: jobs.RunContext) -> dict[str, Any]:
    rt = get_retrieval()
    ids = batch.job_version_ids(ctx, ctx.job.payload.get("skill_name"))
    indexed = failed = 0
    for start in range(0, len(ids), 50):
        if ctx.stopping:
            raise jobs.Yield("stopping")
        for item in index_versions(ctx.db, rt, ctx.job.account_id, ids[start : start + 50]):
            indexed += item.status == "indexed"
            failed += item.status != "indexed"
    return {"indexed": indexed, "failed": failed, "total": indexed + failed}


jobs.register(INDEX_KIND, _index, timeout_seconds=batch.JOB_TIMEOUT_S)
jobs.register(HEAL_KIND, run_heal, timeout_seconds=batch.JOB_TIMEOUT_S)  # index.schedule_heal queues it
