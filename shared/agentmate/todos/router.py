from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, PageDep, TodosRead, TodosWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none, tag_filter
from agentmate.todos import service
from agentmate.todos.schemas import Todo, TodoCreate, TodoStatus, TodoUpdate

router = Router(prefix="/api/todos", tags=["todos"], responses=PROBLEM_RESPONSES)


@router.post("", status_code=201, response_model=Todo)
def create_todo(
    body: TodoCreate, principal: TodosWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Create a todo. Send an `Idempotency-Key` header to make retries safe."""
    result = service.create(db, principal, body, idempotency_key)
    return created(result)


@router.get("", response_model=Page[Todo])
def list_todos(
    principal: TodosRead,
    db: DbDep,
    page: PageDep,
    status: Annotated[TodoStatus | None, Query()] = None,
    tag: Annotated[str | None, Query(description="Exact tag (normalised)")] = None,
    tags: Annotated[str | None, Query(description="Comma-separated tags; all must match")] = None,
    q: Annotated[str | None, Query(description="Case-insensitive substring of title or description")] = None,
) -> Page[Todo]:
    """List todos, newest first."""
    return service.search(db, principal, page, status=status, tags=tag_filter(tag, tags), q=blank_to_none(q))


@router.get("/search", response_model=Page[Todo])
def search_todos(
    principal: TodosRead,
    db: DbDep,
    page: PageDep,
    q: Annotated[str, Query(description="Case-insensitive substring of title or description")] = "",
) -> Page[Todo]:
    """Search todos by text."""
    return service.search(db, principal, page, q=blank_to_none(q))


@router.get("/{todo_id}", response_model=Todo)
def get_todo(todo_id: UUID, principal: TodosRead, db: DbDep) -> Todo:
    """Get one todo by id; 404 if it does not exist in this account."""
    return service.get(db, principal, todo_id)


@router.patch("/{todo_id}", response_model=Todo)
def update_todo(todo_id: UUID, body: TodoUpdate, principal: TodosWrite, db: DbDep) -> Todo:
    """Change the fields sent; others stay as they are."""
    return service.update(db, principal, todo_id, body)


@router.delete("/{todo_id}", status_code=204, response_class=Response)
def delete_todo(todo_id: UUID, principal: TodosWrite, db: DbDep) -> Response:
    """Delete a todo; 404 if it does not exist."""
    service.delete(db, principal, todo_id)
    return Response(status_code=204)
