"""SQL for reports. RLS scopes every statement to the transaction's account; the explicit account_id filters
are kept as well so the planner uses the (account_id, …) indexes. Nothing here reads across accounts: there is
deliberately no public (cross-account) report listing."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core import sql
from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import delete_by_id, like_pattern, paged, select_by_id, update_by_id

SUMMARY_COLUMNS = "id, title, format, tags, source, source_key_id, created_at, updated_at"
COLUMNS = SUMMARY_COLUMNS + ", content"
UPDATABLE = ("title", "content", "format", "tags", "source")

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "reports_title_check": ("title", "must be 1..500 characters"),
        "reports_content_size_check": ("content", "must be at most 1048576 bytes (UTF-8)"),
        "reports_format_check": ("format", "must be one of md, html"),
        "reports_source_check": ("source", "must be 1..255 characters"),
    }
)


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO reports (account_id, user_id, source_key_id, title, content, format, tags, source)
            VALUES (%(account_id)s, %(user_id)s, %(key_id)s, %(title)s, %(content)s, %(format)s, %(tags)s,
                    %(source)s)
            RETURNING {COLUMNS}""",
        {"account_id": account_id, "user_id": user_id, "key_id": key_id, **data},
    ).fetchone()
    assert row is not None
    return row


def get(conn: Conn, *, account_id: UUID, report_id: UUID) -> dict[str, Any] | None:
    return select_by_id(conn, table="reports", columns=COLUMNS, account_id=account_id, record_id=report_id)


def update(
    conn: Conn, *, account_id: UUID, report_id: UUID, changes: dict[str, Any]
) -> dict[str, Any] | None:
    return update_by_id(
        conn,
        table="reports",
        columns=COLUMNS,
        updatable=UPDATABLE,
        account_id=account_id,
        record_id=report_id,
        changes=changes,
    )


def delete(conn: Conn, *, account_id: UUID, report_id: UUID) -> bool:
    return delete_by_id(conn, table="reports", account_id=account_id, record_id=report_id)


def search(
    conn: Conn,
    *,
    account_id: UUID,
    tags: list[str],
    source: str | None,
    q: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Report summaries (no content), newest first. ``q`` is a case-insensitive substring of title or content."""
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if tags:
        where.append("tags @> %(tags)s")
        params["tags"] = tags
    if source:
        where.append("source = %(source)s")
        params["source"] = source
    if q:
        where.append("(title ILIKE %(q)s OR content ILIKE %(q)s)")
        params["q"] = like_pattern(q)
    return paged(
        conn,
        columns=SUMMARY_COLUMNS,
        table="reports",
        where=where,
        params=params,
        order_by="created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def sources(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Distinct sources with their report counts, most used first; reports without a source are not listed."""
    rows = conn.execute(
        """SELECT source, count(*) AS count, count(*) OVER () AS _total
           FROM reports WHERE account_id = %(account_id)s AND source IS NOT NULL
           GROUP BY source ORDER BY count(*) DESC, source LIMIT %(limit)s OFFSET %(offset)s""",
        {"account_id": account_id, "limit": limit, "offset": offset},
    ).fetchall()
    if rows:
        total = rows[0]["_total"]
    elif offset == 0:
        total = 0
    else:
        found = conn.execute(
            "SELECT count(DISTINCT source) AS n FROM reports WHERE account_id = %(account_id)s AND source IS NOT NULL",
            {"account_id": account_id},
        ).fetchone()
        total = found["n"] if found else 0
    return [{"source": r["source"], "count": r["count"]} for r in rows], total


def tag_counts(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[sql.TagCountRow], int]:
    """Each tag of the account's reports with how many reports carry it, most used first (``core.sql.tag_counts``)."""
    return sql.tag_counts(conn, table="reports", account_id=account_id, limit=limit, offset=offset)
