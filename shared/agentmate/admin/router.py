from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Body, Path, Query

from agentmate.admin import service
from agentmate.admin.schemas import (
    DEFAULT_BATCH_SIZE,
    MAX_BATCH_SIZE,
    AccountState,
    LexicalRebuildRequest,
    LexicalRebuildResult,
)
from agentmate.api.deps import CurrentPrincipal, DbDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.errors import ErrorCollector

router = Router(prefix="/api/admin", tags=["admin"], responses=PROBLEM_RESPONSES)


@router.post("/retrieval/lexical/rebuild", response_model=LexicalRebuildResult)
def rebuild_lexical(
    principal: CurrentPrincipal,
    db: DbDep,
    body: Annotated[LexicalRebuildRequest | None, Body()] = None,
    account_id: Annotated[UUID | None, Query(description="Only this account's rows")] = None,
    namespace: Annotated[str | None, Query(max_length=64, description="Only this namespace")] = None,
    batch_size: Annotated[
        int | None, Query(ge=1, le=MAX_BATCH_SIZE, description="1..1000, default 200")
    ] = None,
) -> LexicalRebuildResult:
    """Admin only: recompute the lexical projection (no re-embedding), in id-ordered batches; returns {updated}."""
    errors = ErrorCollector()
    sent = body or LexicalRebuildRequest()
    query = {"account_id": account_id, "namespace": namespace or None, "batch_size": batch_size}
    for name, value in sent.model_dump(exclude_none=True).items():
        if query[name] is not None and query[name] != value:
            errors.add(name, "given in both the query and the body with different values")
    errors.raise_if_any()
    return service.rebuild_lexical(
        db,
        principal,
        account_id=account_id if account_id is not None else sent.account_id,
        namespace=namespace or sent.namespace,
        batch_size=batch_size or sent.batch_size or DEFAULT_BATCH_SIZE,
    )


AccountId = Annotated[UUID, Path(description="The account to act on")]


@router.post("/accounts/{account_id}/suspend", response_model=AccountState)
def suspend_account(principal: CurrentPrincipal, db: DbDep, account_id: AccountId) -> AccountState:
    """Admin only: suspend an account. From the next request on its JWTs and API keys are refused with 401 (REST
    and MCP) and its users cannot log in; nothing is deleted. Suspending a suspended account keeps the first
    `suspended_at`. An admin cannot suspend its own account (409)."""
    return service.set_account_suspended(db, principal, account_id, suspend=True)


@router.post("/accounts/{account_id}/reactivate", response_model=AccountState)
def reactivate_account(principal: CurrentPrincipal, db: DbDep, account_id: AccountId) -> AccountState:
    """Admin only: reactivate a suspended account; its existing credentials work again."""
    return service.set_account_suspended(db, principal, account_id, suspend=False)
