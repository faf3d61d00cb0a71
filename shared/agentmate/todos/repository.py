"""SQL for todos. RLS scopes every statement to the transaction's account; the explicit account_id
filters are kept as well so the planner uses the (account_id, …) indexes."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core import sql
from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import containing_any, delete_by_id, like_pattern, paged, select_by_id, update_by_id

COLUMNS = "id, title, description, status, priority, due_date, tags, created_at, updated_at"
UPDATABLE = ("title", "description", "status", "priority", "due_date", "tags")

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "todos_title_check": ("title", "must be 1..500 characters"),
        "todos_status_check": ("status", "must be one of pending, in_progress, done, cancelled"),
        "todos_priority_check": ("priority", "must be one of low, medium, high"),
    }
)


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO todos (account_id, user_id, key_id, title, description, status, priority, due_date, tags)
            VALUES (%(account_id)s, %(user_id)s, %(key_id)s, %(title)s, %(description)s, %(status)s,
                    %(priority)s, %(due_date)s, %(tags)s)
            RETURNING {COLUMNS}""",
        {"account_id": account_id, "user_id": user_id, "key_id": key_id, **data},
    ).fetchone()
    assert row is not None
    return row


def get(conn: Conn, *, account_id: UUID, todo_id: UUID) -> dict[str, Any] | None:
    return select_by_id(conn, table="todos", columns=COLUMNS, account_id=account_id, record_id=todo_id)


def update(conn: Conn, *, account_id: UUID, todo_id: UUID, changes: dict[str, Any]) -> dict[str, Any] | None:
    return update_by_id(
        conn,
        table="todos",
        columns=COLUMNS,
        updatable=UPDATABLE,
        account_id=account_id,
        record_id=todo_id,
        changes=changes,
    )


def delete(conn: Conn, *, account_id: UUID, todo_id: UUID) -> bool:
    return delete_by_id(conn, table="todos", account_id=account_id, record_id=todo_id)


def search(
    conn: Conn,
    *,
    account_id: UUID,
    status: str | None,
    tags: list[str],
    q: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Filtered list, newest first. ``q`` is a case-insensitive substring of title or description."""
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if status:
        where.append("status = %(status)s")
        params["status"] = status
    if tags:
        where.append("tags @> %(tags)s")
        params["tags"] = tags
    if q:
        where.append("(title ILIKE %(q)s OR description ILIKE %(q)s)")
        params["q"] = like_pattern(q)
    return paged(
        conn,
        columns=COLUMNS,
        table="todos",
        where=where,
        params=params,
        order_by="created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def containing_any_of(
    conn: Conn, *, account_id: UUID, substrings: list[str], limit: int
) -> list[dict[str, Any]]:
    """The context pack's FACTS candidates: todos whose text contains any of ``substrings`` (``core.sql.containing_any``)."""
    return containing_any(
        conn,
        table="todos",
        columns=COLUMNS,
        text_columns=("title", "description"),
        account_id=account_id,
        substrings=substrings,
        limit=limit,
    )


def tag_counts(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[sql.TagCountRow], int]:
    """Each tag of the account's todos with how many todos carry it, most used first (``core.sql.tag_counts``)."""
    return sql.tag_counts(conn, table="todos", account_id=account_id, limit=limit, offset=offset)
