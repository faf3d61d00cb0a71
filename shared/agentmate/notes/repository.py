"""SQL for notes. RLS scopes every statement to the transaction's account; the explicit account_id filters
are kept as well so the planner uses the (account_id, …) indexes."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core import sql
from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import containing_any, delete_by_id, like_pattern, paged, select_by_id, update_by_id
from agentmate.core.text import MAX_CONTENT_BYTES

COLUMNS = "id, title, content, tags, created_at, updated_at"
UPDATABLE = ("title", "content", "tags")

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "notes_title_check": ("title", "must be 1..500 characters"),
        "notes_content_size_check": ("content", f"the note's content would exceed {MAX_CONTENT_BYTES} bytes"),
    }
)


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO notes (account_id, user_id, key_id, title, content, tags)
            VALUES (%(account_id)s, %(user_id)s, %(key_id)s, %(title)s, %(content)s, %(tags)s)
            RETURNING {COLUMNS}""",
        {"account_id": account_id, "user_id": user_id, "key_id": key_id, **data},
    ).fetchone()
    assert row is not None
    return row


def get(conn: Conn, *, account_id: UUID, note_id: UUID) -> dict[str, Any] | None:
    return select_by_id(conn, table="notes", columns=COLUMNS, account_id=account_id, record_id=note_id)


def update(conn: Conn, *, account_id: UUID, note_id: UUID, changes: dict[str, Any]) -> dict[str, Any] | None:
    return update_by_id(
        conn,
        table="notes",
        columns=COLUMNS,
        updatable=UPDATABLE,
        account_id=account_id,
        record_id=note_id,
        changes=changes,
    )


def append(conn: Conn, *, account_id: UUID, note_id: UUID, content: str) -> dict[str, Any] | None:
    """Concatenate in one statement (the row lock serialises concurrent appends); no separator is added."""
    return conn.execute(
        f"""UPDATE notes SET content = content || %(content)s, updated_at = now()
            WHERE account_id = %(account_id)s AND id = %(id)s RETURNING {COLUMNS}""",
        {"content": content, "account_id": account_id, "id": note_id},
    ).fetchone()


def delete(conn: Conn, *, account_id: UUID, note_id: UUID) -> bool:
    return delete_by_id(conn, table="notes", account_id=account_id, record_id=note_id)


def search(
    conn: Conn, *, account_id: UUID, tags: list[str], q: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """Filtered list, newest first. ``q`` is a case-insensitive substring of title or content."""
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if tags:
        where.append("tags @> %(tags)s")
        params["tags"] = tags
    if q:
        where.append("(title ILIKE %(q)s OR content ILIKE %(q)s)")
        params["q"] = like_pattern(q)
    return paged(
        conn,
        columns=COLUMNS,
        table="notes",
        where=where,
        params=params,
        order_by="created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def containing_any_of(
    conn: Conn, *, account_id: UUID, substrings: list[str], limit: int
) -> list[dict[str, Any]]:
    """The context pack's FACTS candidates: notes whose text contains any of ``substrings`` (``core.sql.containing_any``)."""
    return containing_any(
        conn,
        table="notes",
        columns=COLUMNS,
        text_columns=("title", "content"),
        account_id=account_id,
        substrings=substrings,
        limit=limit,
    )


def tag_counts(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[sql.TagCountRow], int]:
    """Each tag of the account's notes with how many notes carry it, most used first (``core.sql.tag_counts``)."""
    return sql.tag_counts(conn, table="notes", account_id=account_id, limit=limit, offset=offset)
