"""Todo use cases. Each runs in one tenant transaction."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import idempotency
from agentmate.core.db import Database
from agentmate.core.errors import NotFound, invalid
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.todos import repository as repo
from agentmate.todos.schemas import STATUSES, Todo, TodoCreate, TodoUpdate


def create(db: Database, principal: Principal, body: TodoCreate, idempotency_key: str | None = None) -> Outcome:
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:

        def insert() -> dict[str, Any]:
            row = repo.insert(conn, account_id=principal.account_id, user_id=principal.user_id,
                              key_id=principal.key_id, data=data)
            return Todo(**row).model_dump(mode="json")

        return idempotency.run_once(conn, account_id=principal.account_id, route="todos.create",
                                    key=idempotency_key, request=body.model_dump(mode="json"), create=insert)


def get(db: Database, principal: Principal, todo_id: UUID) -> Todo:
    with db.tenant(principal.account_id) as conn:
        row = repo.get(conn, account_id=principal.account_id, todo_id=todo_id)
    if row is None:
        raise NotFound("todo")
    return Todo(**row)


def update(db: Database, principal: Principal, todo_id: UUID, body: TodoUpdate) -> Todo:
    changes = body.model_dump(exclude_unset=True)
    for required in ("title", "status", "priority", "tags", "description"):
        if required in changes and changes[required] is None:
            raise invalid(required, "may not be null")
    with db.tenant(principal.account_id) as conn:
        row = repo.update(conn, account_id=principal.account_id, todo_id=todo_id, changes=changes)
    if row is None:
        raise NotFound("todo")
    return Todo(**row)


def delete(db: Database, principal: Principal, todo_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete(conn, account_id=principal.account_id, todo_id=todo_id):
            raise NotFound("todo")


def search(
    db: Database, principal: Principal, page: PageParams, *, status: str | None = None,
    tags: list[str] | None = None, q: str | None = None,
) -> Page[Todo]:
    if status is not None and status not in STATUSES:
        raise invalid("status", "unknown status", list(STATUSES))
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(conn, account_id=principal.account_id, status=status, tags=tags or [], q=q,
                                  limit=page.limit, offset=page.offset)
    return Page[Todo](items=[Todo(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)
