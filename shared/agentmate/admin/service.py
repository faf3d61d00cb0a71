"""Operator use cases. Every one first checks that the caller is an admin."""

from __future__ import annotations

from uuid import UUID

from agentmate.admin.schemas import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE, AccountState, LexicalRebuildResult
from agentmate.auth import service as auth
from agentmate.auth.credentials import require_admin
from agentmate.core.db import Database
from agentmate.core.errors import invalid
from agentmate.core.principal import Principal
from agentmate.retrieval import service as retrieval


def rebuild_lexical(
    db: Database,
    principal: Principal,
    *,
    account_id: UUID | None = None,
    namespace: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> LexicalRebuildResult:
    """Recompute ``retrieval_documents.lexical_text`` from stored title and content, across accounts, in batches
    (``retrieval.service.rebuild_lexical``). Nothing is re-embedded and the vector index is not touched."""
    if not 1 <= batch_size <= MAX_BATCH_SIZE:
        raise invalid("batch_size", f"must be 1..{MAX_BATCH_SIZE}")
    require_admin(db, principal)
    done = retrieval.rebuild_lexical(
        db,
        admin_account_id=principal.account_id,
        admin_user_id=principal.user_id,
        account_id=account_id,
        namespace=namespace,
        batch_size=batch_size,
    )
    return LexicalRebuildResult(
        updated=done.updated,
        scanned=done.scanned,
        batches=done.batches,
        account_id=account_id,
        namespace=namespace,
        batch_size=batch_size,
    )


def set_account_suspended(
    db: Database, principal: Principal, account_id: UUID, *, suspend: bool
) -> AccountState:
    """Suspend or reactivate another account (auth owns the account's state and checks the admin)."""
    return AccountState(**auth.set_account_suspended(db, principal, account_id, suspend=suspend))
