"""Index active versions' L0 cards into skill search (cards only: instructions never enter the index): one
retrieval document per skill name, pointing at its version."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid5

from agentmate import jobs
from agentmate.core.db import TenantTransactions
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.service import Retrieval
from agentmate.skills import batch
from agentmate.skills.catalog import repository as catrepo
from agentmate.skills.catalog.service import card_of
from agentmate.skills.compile import compiler
from agentmate.skills.search.schemas import SkillIndexOutcome

NAMESPACE = "skills"
SOURCE_TYPE = "skill"
# A card left without a vector (the embedder or the vector index failed) queues this at once; it indexes the
# active cards again with the queue's backoff (30 s x 2^(n-1), capped) over HEAL_ATTEMPTS attempts, as memory's
# retrieval_heal does. Registered in search/jobs.py.
HEAL_KIND = "skills_index_heal"
HEAL_ATTEMPTS = 10
HEAL_SLICE = 50
_HEAL_SUBJECT = uuid5(
    UUID("5b0f7c1e-8f4e-4d55-9a53-0d8f3c7a2b61"), HEAL_KIND
)  # one unfinished job per account


def index_versions(
    db: TenantTransactions, rt: Retrieval, account_id: UUID, version_ids: list[UUID], *, heal: bool = True
) -> list[SkillIndexOutcome]:
    """Index cards only (never instructions): one retrieval document per skill name, pointing at its version. A
    card that failed queues the heal job (unless ``heal`` is False: the heal job's own runs)."""
    with db.tenant(account_id) as conn:
        rows = catrepo.cards(conn, account_id=account_id, version_ids=version_ids, with_instructions=False)
    docs, order = [], []
    for vid in version_ids:
        row = rows.get(vid)
        if row is None:
            continue
        card = card_of(row).model_dump(mode="json")
        title, content = compiler.card_text(card)
        docs.append(
            retrieval.DocumentIn(
                namespace=NAMESPACE,
                source_type=SOURCE_TYPE,
                source_id=row.skill_name,
                title=title,
                content=content,
                metadata={
                    "skill_version_id": str(vid),
                    "skill_name": row.skill_name,
                    "compiled": card["compiled"],
                },
            )
        )
        order.append(vid)
    results = rt.index_documents(db, account_id, docs)
    if heal and any(r.status == "failed" for r in results):
        schedule_heal(db, account_id)
    return [
        SkillIndexOutcome(skill_version_id=vid, status=r.status, error=r.error)
        for vid, r in zip(order, results, strict=True)
    ]


def waiting(db: TenantTransactions, account_id: UUID) -> int:
    """The account's skill cards still waiting for their vector (what the heal job has left to do)."""
    with db.tenant(account_id) as conn:
        return retrieval.waiting_count(conn, account_id, NAMESPACE)


def schedule_heal(db: TenantTransactions, account_id: UUID) -> None:
    """Queue the account's ``skills_index_heal`` job (a queued or running one is reused) and wake a worker."""
    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn, account_id=account_id, kind=HEAL_KIND, subject_id=_HEAL_SUBJECT, max_attempts=HEAL_ATTEMPTS
        )
    jobs.wake(job.id)


def run_heal(ctx: jobs.RunContext) -> dict[str, Any]:
    """The ``skills_index_heal`` job: index every active card again (an unchanged, indexed card is not embedded
    again, so only the waiting ones are); ``Retryable`` (the queue's backoff) while some still fail."""
    from agentmate.retrieval.service import get_retrieval

    rt, account = get_retrieval(), ctx.job.account_id
    ids = batch.job_version_ids(ctx, None)
    failed: list[SkillIndexOutcome] = []
    for start in range(0, len(ids), HEAL_SLICE):
        if ctx.stopping:
            raise jobs.Yield("stopping: the next run starts over (indexed cards are skipped)")
        done = index_versions(ctx.db, rt, account, ids[start : start + HEAL_SLICE], heal=False)
        failed += [o for o in done if o.status == "failed"]
    if failed:
        raise jobs.Retryable(f"{len(failed)} skill cards still without a vector: {failed[0].error}")
    left = waiting(ctx.db, account)  # cards of versions no longer active are replaced by their active one
    return {"cards": len(ids), "waiting": left}


def index_if_active(
    db: TenantTransactions, rt: Retrieval, account_id: UUID, version_id: UUID, *, active: bool, compiled: bool
) -> tuple[SkillIndexOutcome | None, str | None]:
    """``index: true`` on a push, sync or publish, after the commit: index the version's card when it is the
    active one. Answers the outcome, or None and why it was not indexed (``not_indexed_reason``)."""
    if not active:
        why = (
            "its compile failed (see compile.problems), so it was not activated"
            if not compiled
            else "it is not active; pass activate: true, or activate it (POST /api/skills/versions/{id}/activate)"
            " and run POST /api/skills/index"
        )
        return None, f"not indexed: skill search indexes active versions only, and {why}"
    done = index_versions(db, rt, account_id, [version_id])
    if not done:
        return None, "not indexed: the version has no card to index; run POST /api/skills/index to retry"
    return done[0], None
