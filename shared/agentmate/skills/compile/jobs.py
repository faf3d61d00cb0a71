"""Skills registry work too large for a request, run as jobs (agentmate.jobs): a compile backfill or an index
run over more active versions than a request may cover inline (``registry.MAX_INLINE_VERSIONS``), or one that ran
past the inline time budget. The request answers 202 with the job; the worker runs the same use cases.

Both runners are idempotent (a version's artifact and its card document are upserts), so a yielded or retried
run simply starts over."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from agentmate import jobs
from agentmate.skills.registry import repository as rrepo

COMPILE_KIND = "skills_compile_backfill"
INDEX_KIND = "skills_index"
# Room for thousands of versions; with the 60 s finish margin it fits the 900 s worker function.
TIMEOUT_S = 600.0
MAX_VERSIONS = 100_000
_SUBJECTS = UUID("5b0f8f4e-5a56-4d4c-9a55-7c1b3f1d6a10")


def subject(kind: str, skill_name: str | None) -> UUID:
    """One unfinished job per account, kind and scope: a second request hands back the first job."""
    return uuid5(_SUBJECTS, f"{kind}:{skill_name or '*'}")


def _version_ids(ctx: jobs.RunContext, skill_name: str | None) -> list[UUID]:
    with ctx.tenant() as conn:
        return rrepo.active_version_ids(
            conn, account_id=ctx.job.account_id, skill_name=skill_name, limit=MAX_VERSIONS
        )


def _compile(ctx: jobs.RunContext) -> dict[str, Any]:
    from agentmate.skills.registry import service as registry

    compiled = failed = 0
    for vid in _version_ids(ctx, None):
        if ctx.stopping:
            raise jobs.Yield("stopping")
        outcome = registry.refresh_artifact(ctx.db, ctx.job.account_id, vid)
        compiled += outcome.status == "compiled"
        failed += outcome.status != "compiled"
    return {"compiled": compiled, "failed": failed, "total": compiled + failed}


def _index(ctx: jobs.RunContext) -> dict[str, Any]:
    from agentmate.retrieval.service import get_retrieval
    from agentmate.skills.registry import service as registry

    rt = get_retrieval()
    ids = _version_ids(ctx, ctx.job.payload.get("skill_name"))
    indexed = failed = 0
    for start in range(0, len(ids), 50):
        if ctx.stopping:
            raise jobs.Yield("stopping")
        for item in registry.index_versions(ctx.db, rt, ctx.job.account_id, ids[start : start + 50]):
            indexed += item.status == "indexed"
            failed += item.status != "indexed"
    return {"indexed": indexed, "failed": failed, "total": indexed + failed}


jobs.register(COMPILE_KIND, _compile, timeout_seconds=TIMEOUT_S)
jobs.register(INDEX_KIND, _index, timeout_seconds=TIMEOUT_S)
