"""Todo use cases. Each runs in one tenant transaction."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import records
from agentmate.core.db import Database
from agentmate.core.errors import invalid
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.todos import repository as repo
from agentmate.todos.schemas import STATUSES, Todo, TodoCreate, TodoUpdate

NOT_NULL = ("title", "description", "status", "priority", "tags")


def create(
    db: Database, principal: Principal, body: TodoCreate, idempotency_key: str | None = None
) -> Outcome:
    return records.create(
        db,
        principal,
        body,
        route="todos.create",
        model=Todo,
        insert=repo.insert,
        idempotency_key=idempotency_key,
    )


def get(db: Database, principal: Principal, todo_id: UUID) -> Todo:
    """One todo by id; 404 if it does not exist in this account."""
    return records.one(
        db,
        principal,
        "todo",
        Todo,
        lambda conn, account_id: repo.get(conn, account_id=account_id, todo_id=todo_id),
    )


def update(db: Database, principal: Principal, todo_id: UUID, body: TodoUpdate) -> Todo:
    """Change the fields sent; the others stay as they are."""
    changes = records.changes(body, NOT_NULL)
    return records.one(
        db,
        principal,
        "todo",
        Todo,
        lambda conn, account_id: repo.update(conn, account_id=account_id, todo_id=todo_id, changes=changes),
    )


def delete(db: Database, principal: Principal, todo_id: UUID) -> None:
    records.remove(
        db,
        principal,
        "todo",
        lambda conn, account_id: repo.delete(conn, account_id=account_id, todo_id=todo_id),
    )


def search(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    status: str | None = None,
    tags: list[str] | None = None,
    q: str | None = None,
) -> Page[Todo]:
    if status is not None and status not in STATUSES:
        raise invalid("status", "unknown status", list(STATUSES))
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn,
            account_id=principal.account_id,
            status=status,
            tags=tags or [],
            q=q,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[Todo](items=[Todo(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)
