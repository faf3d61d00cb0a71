"""Operator use cases. Every one first checks that the caller is an admin."""

from __future__ import annotations

from uuid import UUID

from agentmate.admin.schemas import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, LexicalRebuildResult
from agentmate.auth.credentials import require_admin
from agentmate.core.db import Database
from agentmate.core.errors import Forbidden, invalid
from agentmate.core.principal import Principal
from agentmate.retrieval import lexical
from agentmate.retrieval import repository as retrieval_repo


def rebuild_lexical(
    db: Database,
    principal: Principal,
    *,
    account_id: UUID | None = None,
    namespace: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> LexicalRebuildResult:
    """Recompute ``retrieval_documents.lexical_text`` from stored title and content, in id order, one transaction
    per batch, across accounts. Nothing is re-embedded and the vector index is not touched."""
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise invalid("batch_size", f"must be 1..{MAX_BATCH_SIZE}")
    require_admin(db, principal)
    updated = scanned = batches = 0
    after: UUID | None = None
    try:
        while True:
            with db.tenant(principal.account_id) as conn:
                rows = retrieval_repo.admin_lexical_batch(
                    conn,
                    admin_user_id=principal.user_id,
                    account_id=account_id,
                    namespace=namespace,
                    after=after,
                    limit=batch_size,
                )
                if not rows:
                    break
                texts = [lexical.projection(r["title"], r["content"]) for r in rows]
                updated += retrieval_repo.admin_lexical_update(
                    conn, admin_user_id=principal.user_id, ids=[r["id"] for r in rows], texts=texts
                )
            scanned += len(rows)
            batches += 1
            after = rows[-1]["id"]
            if len(rows) < batch_size:
                break
    except Forbidden:  # the database refused a non-admin (core.dberrors translated it)
        raise Forbidden("admin access required") from None
    return LexicalRebuildResult(
        updated=updated,
        scanned=scanned,
        batches=batches,
        account_id=account_id,
        namespace=namespace,
        batch_size=batch_size,
    )
