"""Todo tools (``/mcp/todos``): thin calls into ``agentmate.todos.service``, scopes as the REST twins."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.errors import invalid
from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.records import TagCount
from agentmate.core.text import normalise_tags
from agentmate.mcp.context import db, principal
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import Deleted, IdempotencyKey, Limit, Offset, Tag, TagList, given, with_tag
from agentmate.todos import service
from agentmate.todos.schemas import Todo, TodoCreate, TodoPriority, TodoStatus, TodoUpdate

tools = ToolSet(
    "todos",
    instructions=(
        "Todos of the account that owns the API key. Reading needs the todos:r scope, writing todos:rw. "
        "status is one of pending, in_progress, done, cancelled; priority one of low, medium, high; "
        "due_date is an RFC 3339 timestamp; tags are trimmed and lowercased. Lists return "
        "{items, total, limit, offset}."
    ),
)

TodoId = Annotated[UUID, Field(description="The todo's id (UUID), as returned by todo_create or todo_list")]
Title = Annotated[str, Field(min_length=1, max_length=500, description="Short title, 1..500 characters")]
Description = Annotated[str, Field(max_length=20000, description="Free text, up to 20000 characters")]
Status = Annotated[TodoStatus, Field(description="One of: pending, in_progress, done, cancelled")]
Priority = Annotated[TodoPriority, Field(description="One of: low, medium, high")]
DueDate = Annotated[datetime | None, Field(description="RFC 3339 timestamp, e.g. 2026-12-01T10:00:00Z")]
Tags = Annotated[list[str], Field(description="Tags; trimmed and lowercased on write, duplicates dropped")]
Query = Annotated[str, Field(description="Case-insensitive substring of title or description")]


@tools.tool("todos:rw", rest="POST /api/todos", title="Create a todo")
def todo_create(
    title: Title,
    description: Description = "",
    status: Status = "pending",
    priority: Priority = "medium",
    due_date: DueDate = None,
    tags: Tags | None = None,
    idempotency_key: IdempotencyKey = None,
) -> Todo:
    """Create a todo. status: pending (default) | in_progress | done | cancelled; priority: low | medium
    (default) | high; due_date: RFC 3339; tags are trimmed and lowercased. Pass idempotency_key so a
    retry returns the original todo instead of creating a duplicate. Requires todos:rw."""
    body = TodoCreate(
        title=title,
        description=description,
        status=status,
        priority=priority,
        due_date=due_date,
        tags=tags or [],
    )
    return service.create(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("todos:r", rest="GET /api/todos/{todo_id}", title="Get a todo")
def todo_get(id: TodoId) -> Todo:
    """Get one todo by id. Requires todos:r."""
    return service.get(db(), principal(), id)


@tools.tool("todos:r", rest="GET /api/todos", title="List todos")
def todo_list(
    status: Annotated[
        TodoStatus | None, Field(description="Only this status: pending, in_progress, done, cancelled")
    ] = None,
    tags: TagList = None,
    tag: Tag = None,
    q: Annotated[str | None, Field(description="Case-insensitive substring of title or description")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[Todo]:
    """List todos, newest first, optionally filtered by status (pending | in_progress | done | cancelled),
    tags (a list, all must match; tag for one) and a text fragment q. Returns {items, total, limit, offset}; page with
    limit (1..100) and offset. Requires todos:r."""
    return service.search(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        status=status,
        tags=_tags(with_tag(tag, tags)),
        q=(q or "").strip() or None,
    )


@tools.tool("todos:r", rest="GET /api/todos/search", title="Search todos")
def todo_search(q: Query, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[Todo]:
    """Search todos whose title or description contains q (case-insensitive). Returns
    {items, total, limit, offset}, newest first. Requires todos:r."""
    return service.search(db(), principal(), PageParams(limit=limit, offset=offset), q=q.strip() or None)


@tools.tool(
    "todos:rw", rest="PATCH /api/todos/{todo_id}", title="Update a todo", idempotent=True, patch=TodoUpdate
)
def todo_update(
    id: TodoId,
    title: Title | None = None,
    description: Annotated[str, Field(max_length=20000, description="New description")] | None = None,
    status: Annotated[
        TodoStatus | None, Field(description="New status: pending, in_progress, done, cancelled")
    ] = None,
    priority: Annotated[TodoPriority | None, Field(description="New priority: low, medium, high")] = None,
    due_date: DueDate = None,
    clear_due_date: Annotated[bool, Field(description="true removes the due date")] = False,
    tags: Annotated[list[str] | None, Field(description="Replaces all tags (trimmed, lowercased)")] = None,
) -> Todo:
    """Change the fields given; the others stay as they are. status: pending | in_progress | done |
    cancelled; priority: low | medium | high; due_date null (or clear_due_date=true) removes the due date;
    null on any other field is refused. Returns the updated todo. Requires todos:rw."""
    changes = given(
        title=title, description=description, status=status, priority=priority, due_date=due_date, tags=tags
    )
    if clear_due_date:
        if "due_date" in changes:
            raise invalid("clear_due_date", "send either due_date or clear_due_date=true, not both")
        changes["due_date"] = None
    return service.update(db(), principal(), id, TodoUpdate.model_validate(changes))


@tools.tool(
    "todos:rw", rest="DELETE /api/todos/{todo_id}", title="Delete a todo", destructive=True, idempotent=True
)
def todo_delete(id: TodoId) -> Deleted:
    """Delete a todo permanently. A second delete of the same id reports "todo not found". Requires
    todos:rw."""
    service.delete(db(), principal(), id)
    return Deleted(id=id)


@tools.tool("todos:r", rest="GET /api/tags?module=todos", title="List todo tags")
def todos_tags(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[TagCount]:
    """Which tags the account's todos carry, with how many todos carry each, most used first, then by tag: ask
    before filtering todo_list by a tag. Returns {items: [{tag, count}], total, limit, offset}; page with limit
    (1..100) and offset. Requires todos:r."""
    return service.tags(db(), principal(), PageParams(limit=limit, offset=offset))


def _tags(tags: list[str] | None) -> list[str]:
    try:
        normalised = normalise_tags(tags or [])
    except ValueError as exc:
        raise invalid("tags", str(exc)) from None
    return normalised if isinstance(normalised, list) else []
