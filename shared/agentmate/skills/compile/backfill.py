"""Compile one version, or backfill every active version: inline within the request's bounds
(``batch.MAX_INLINE_VERSIONS``, ``batch.INLINE_BUDGET_S``), else as the ``skills_compile_backfill`` job."""

from __future__ import annotations

import time

from agentmate.core.db import TenantTransactions
from agentmate.core.principal import Principal
from agentmate.skills import batch
from agentmate.skills.compile.schemas import SkillCompileReport, SkillCompileRequest
from agentmate.skills.compile.service import refresh_artifact

COMPILE_KIND = "skills_compile_backfill"  # registered in compile/jobs.py


def compile_versions(
    db: TenantTransactions, principal: Principal, body: SkillCompileRequest
) -> SkillCompileReport:
    """One version inline; a backfill inline up to MAX_INLINE_VERSIONS within INLINE_BUDGET_S, else as a job
    (the versions compiled so far are kept; the job compiles every active version, idempotently)."""
    if body.skill_version_id is not None:
        items = [refresh_artifact(db, principal.account_id, body.skill_version_id)]
    else:
        started = time.monotonic()
        items = []
        ids = batch.inline_ids(db, principal.account_id, None)
        for vid in ids or []:
            if batch.over_budget(started):
                ids = None
                break
            items.append(refresh_artifact(db, principal.account_id, vid))
        if ids is None:
            job = batch.queue(db, principal.account_id, COMPILE_KIND, None)
            return SkillCompileReport(items=[], compiled=0, failed=0, total=0, job=job)
    compiled = sum(1 for i in items if i.status == "compiled")
    return SkillCompileReport(items=items, compiled=compiled, failed=len(items) - compiled, total=len(items))
