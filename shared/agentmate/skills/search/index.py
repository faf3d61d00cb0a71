"""Index active versions' L0 cards into skill search (cards only: instructions never enter the index): one
retrieval document per skill name, pointing at its version."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.service import Retrieval
from agentmate.skills.catalog import repository as catrepo
from agentmate.skills.catalog.service import card_of
from agentmate.skills.compile import compiler
from agentmate.skills.search.schemas import SkillIndexOutcome

NAMESPACE = "skills"
SOURCE_TYPE = "skill"


def index_versions(
    db: TenantTransactions, rt: Retrieval, account_id: UUID, version_ids: list[UUID]
) -> list[SkillIndexOutcome]:
    """Index cards only (never instructions): one retrieval document per skill name, pointing at its version."""
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
    return [
        SkillIndexOutcome(skill_version_id=vid, status=r.status, error=r.error)
        for vid, r in zip(order, results, strict=True)
    ]


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
