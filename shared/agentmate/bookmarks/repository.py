"""SQL for bookmarks. RLS scopes every statement to the transaction's account; the explicit account_id filters
are kept as well so the planner uses the (account_id, …) indexes.

``read_at`` is owned here: it is set when ``is_read`` becomes true (kept if it already was) and cleared when
``is_read`` is false, on create as well as on update, so the two columns can never disagree."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core import sql
from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import delete_by_id, like_pattern, paged, select_by_id, update_by_id

SUMMARY_COLUMNS = "id, url, title, summary, tags, source, is_read, read_at, created_at, updated_at"
COLUMNS = SUMMARY_COLUMNS + ", content"
UPDATABLE = ("url", "title", "summary", "content", "tags", "source", "is_read")

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "bookmarks_url_check": ("url", "must be an http(s) URL of 1..2048 characters"),
        "bookmarks_title_check": ("title", "must be at most 500 characters"),
        "bookmarks_summary_check": ("summary", "must be at most 20000 characters"),
        "bookmarks_content_size_check": ("content", "must be at most 1048576 bytes (UTF-8)"),
        "bookmarks_source_check": ("source", "must be 1..255 characters"),
        "bookmarks_read_at_check": ("is_read", "read_at is set exactly when is_read is true"),
    }
)


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO bookmarks (account_id, user_id, key_id, url, title, summary, content, tags, source,
                                   is_read, read_at)
            VALUES (%(account_id)s, %(user_id)s, %(key_id)s, %(url)s, %(title)s, %(summary)s, %(content)s,
                    %(tags)s, %(source)s, %(is_read)s, CASE WHEN %(is_read)s THEN now() END)
            RETURNING {COLUMNS}""",
        {"account_id": account_id, "user_id": user_id, "key_id": key_id, **data},
    ).fetchone()
    assert row is not None
    return row


def get(conn: Conn, *, account_id: UUID, bookmark_id: UUID) -> dict[str, Any] | None:
    return select_by_id(
        conn, table="bookmarks", columns=COLUMNS, account_id=account_id, record_id=bookmark_id
    )


def update(
    conn: Conn, *, account_id: UUID, bookmark_id: UUID, changes: dict[str, Any]
) -> dict[str, Any] | None:
    """``is_read`` true keeps an existing ``read_at`` (or stamps now); false clears it."""
    read_at = (
        ("read_at = CASE WHEN %(is_read)s THEN coalesce(read_at, now()) END",) if "is_read" in changes else ()
    )
    return update_by_id(
        conn,
        table="bookmarks",
        columns=COLUMNS,
        updatable=UPDATABLE,
        account_id=account_id,
        record_id=bookmark_id,
        changes=changes,
        extra_sets=read_at,
    )


def delete(conn: Conn, *, account_id: UUID, bookmark_id: UUID) -> bool:
    return delete_by_id(conn, table="bookmarks", account_id=account_id, record_id=bookmark_id)


def search(
    conn: Conn,
    *,
    account_id: UUID,
    tags: list[str],
    is_read: bool | None,
    source: str | None,
    q: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Bookmark summaries (no content), newest first. ``q`` is a case-insensitive substring of title, summary
    or url."""
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if tags:
        where.append("tags @> %(tags)s")
        params["tags"] = tags
    if is_read is not None:
        where.append("is_read = %(is_read)s")
        params["is_read"] = is_read
    if source:
        where.append("source = %(source)s")
        params["source"] = source
    if q:
        where.append("(title ILIKE %(q)s OR summary ILIKE %(q)s OR url ILIKE %(q)s)")
        params["q"] = like_pattern(q)
    return paged(
        conn,
        columns=SUMMARY_COLUMNS,
        table="bookmarks",
        where=where,
        params=params,
        order_by="created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def tag_counts(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[sql.TagCountRow], int]:
    """Each tag of the account's bookmarks with how many bookmarks carry it, most used first (``core.sql.tag_counts``)."""
    return sql.tag_counts(conn, table="bookmarks", account_id=account_id, limit=limit, offset=offset)
