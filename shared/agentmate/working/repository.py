"""SQL for working memory. RLS scopes every statement to the transaction's account; the explicit account_id
filters are kept so the planner uses the (account_id, …) indexes."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.working.schemas import ItemType, Role, SessionStatus

SESSION_COLUMNS = "id, title, agent, status, metadata, last_seq, created_at, updated_at"
ITEM_COLUMNS = (
    "session_id, seq, item_type, role, content, metadata, idempotency_key, content_hash, created_at"
)
# The replay page's select list: rows past the page cut keep their seq but not their (possibly large) payload.
_PAGE_SELECT = ", ".join(
    f"CASE WHEN p.keep THEN p.{c} END AS {c}" if c in ("content", "metadata") else f"p.{c}"
    for c in ITEM_COLUMNS.split(", ")
)
UPDATABLE = ("title", "status", "metadata")


class SessionRow(TypedDict):
    """A ``working_sessions`` row (``SESSION_COLUMNS``)."""

    id: UUID
    title: str | None
    agent: str | None
    status: SessionStatus
    metadata: dict[str, Any]
    last_seq: int
    created_at: datetime
    updated_at: datetime


class StoredItem(TypedDict):
    """What a replayed append reads of a stored item (no content)."""

    seq: int
    item_type: ItemType
    role: Role | None
    idempotency_key: str
    content_hash: str
    created_at: datetime


class InsertedItem(TypedDict):
    seq: int
    created_at: datetime


class RecentRow(TypedDict):
    """A recent item with at most ``max_chars`` of its content and the content's full length."""

    seq: int
    item_type: ItemType
    role: Role | None
    content: str
    content_chars: int
    created_at: datetime


# --- sessions -------------------------------------------------------------------------------------------------

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "working_sessions_title_check": ("title", "must be 1..500 characters"),
        "working_sessions_agent_check": ("agent", "must be 1..200 characters"),
        "working_sessions_status_check": ("status", "must be one of active, archived"),
        "working_sessions_metadata_check": ("metadata", "must be a JSON object"),
        "working_sessions_last_seq_check": ("last_seq", "must be at least 0"),
        "working_items_item_type_check": ("item_type", "must be one of message, tool_result, draft"),
        "working_items_role_check": ("role", "must be one of system, user, assistant, tool"),
        "working_items_role_required_check": (
            "role",
            "required for message items, not allowed on the others",
        ),
        "working_items_content_size_check": ("content", "must be at most 1048576 bytes (UTF-8)"),
        "working_items_metadata_check": ("metadata", "must be a JSON object"),
        "working_items_idempotency_key_check": ("idempotency_key", "must be 1..512 characters"),
        "working_items_idempotency_key_key": ("idempotency_key", "already used in this session"),
        "working_items_content_hash_check": ("content_hash", "must be 64 lowercase hex characters (sha256)"),
        "working_items_seq_check": ("seq", "must be at least 1"),
        "working_items_size_bytes_check": ("size_bytes", "must be at least 0"),
        "working_items_session_fkey": ("session_id", "unknown working session in this account"),
    }
)


def insert_session(
    conn: Conn, *, account_id: UUID, title: str | None, agent: str | None, metadata: dict[str, Any]
) -> SessionRow:
    row = (
        conn.cursor(row_factory=class_row(SessionRow))
        .execute(
            f"""INSERT INTO working_sessions (account_id, title, agent, metadata)
            VALUES (%(account_id)s, %(title)s, %(agent)s, %(metadata)s)
            RETURNING {SESSION_COLUMNS}""",
            {"account_id": account_id, "title": title, "agent": agent, "metadata": Jsonb(metadata)},
        )
        .fetchone()
    )
    assert row is not None
    return row


def get_session(
    conn: Conn, *, account_id: UUID, session_id: UUID, for_update: bool = False
) -> SessionRow | None:
    """One session; ``for_update`` locks its row so appends (and their seq counter) serialise on it."""
    lock = " FOR UPDATE" if for_update else ""
    return (
        conn.cursor(row_factory=class_row(SessionRow))
        .execute(
            f"SELECT {SESSION_COLUMNS} FROM working_sessions WHERE account_id = %(a)s AND id = %(session_id)s{lock}",
            {"a": account_id, "session_id": session_id},
        )
        .fetchone()
    )


def update_session(
    conn: Conn, *, account_id: UUID, session_id: UUID, changes: dict[str, Any]
) -> SessionRow | None:
    params = {
        col: (Jsonb(val) if col == "metadata" else val) for col, val in changes.items() if col in UPDATABLE
    }
    sets = "".join(f"{col} = %({col})s, " for col in params)
    return (
        conn.cursor(row_factory=class_row(SessionRow))
        .execute(
            f"""UPDATE working_sessions SET {sets}updated_at = now()
            WHERE account_id = %(account_id)s AND id = %(id)s RETURNING {SESSION_COLUMNS}""",
            {**params, "account_id": account_id, "id": session_id},
        )
        .fetchone()
    )


def advance_session(conn: Conn, *, account_id: UUID, session_id: UUID, last_seq: int) -> None:
    """Record the new highest seq after an append (the row is already locked by the caller)."""
    conn.execute(
        """UPDATE working_sessions SET last_seq = %(last_seq)s, updated_at = now()
           WHERE account_id = %(account_id)s AND id = %(id)s""",
        {"last_seq": last_seq, "account_id": account_id, "id": session_id},
    )


def touch_session(conn: Conn, *, account_id: UUID, session_id: UUID) -> None:
    conn.execute(
        "UPDATE working_sessions SET updated_at = now() WHERE account_id = %(a)s AND id = %(session_id)s",
        {"a": account_id, "session_id": session_id},
    )


def delete_session(conn: Conn, *, account_id: UUID, session_id: UUID) -> int | None:
    """Delete a session and its items; the number of items removed, or None when there is no such session.

    The session row is locked first so an in-flight append either commits before (and is counted) or finds
    the session gone afterwards. Items are deleted explicitly (rather than only by the cascade) to count them.
    """
    if get_session(conn, account_id=account_id, session_id=session_id, for_update=True) is None:
        return None
    items = conn.execute(
        "DELETE FROM working_items WHERE account_id = %(a)s AND session_id = %(session_id)s",
        {"a": account_id, "session_id": session_id},
    ).rowcount
    conn.execute(
        "DELETE FROM working_sessions WHERE account_id = %(a)s AND id = %(session_id)s",
        {"a": account_id, "session_id": session_id},
    )
    return items


def search_sessions(
    conn: Conn,
    *,
    account_id: UUID,
    status: str | None,
    agent: str | None,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """Filtered sessions, most recently updated first."""
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if status:
        where.append("status = %(status)s")
        params["status"] = status
    if agent:
        where.append("agent = %(agent)s")
        params["agent"] = agent
    return paged(
        conn,
        columns=SESSION_COLUMNS,
        table="working_sessions",
        where=where,
        params=params,
        order_by="updated_at DESC, id",
        limit=limit,
        offset=offset,
    )


# --- items ----------------------------------------------------------------------------------------------------


def items_by_keys(
    conn: Conn, *, account_id: UUID, session_id: UUID, keys: list[str]
) -> dict[str, StoredItem]:
    """Stored items of this session holding any of ``keys``, by key (no content: only what a replay needs)."""
    rows = (
        conn.cursor(row_factory=class_row(StoredItem))
        .execute(
            """SELECT seq, item_type, role, idempotency_key, content_hash, created_at FROM working_items
           WHERE account_id = %(a)s AND session_id = %(session_id)s AND idempotency_key = ANY(%(keys)s)""",
            {"a": account_id, "session_id": session_id, "keys": keys},
        )
        .fetchall()
    )
    return {r["idempotency_key"]: r for r in rows}


def insert_items(
    conn: Conn, *, account_id: UUID, session_id: UUID, items: list[dict[str, Any]]
) -> list[InsertedItem]:
    """Insert pre-numbered items in one statement; returns (seq, created_at) per item, in seq order.

    Each item dict has seq, item_type, role, content, metadata_json (serialized object), idempotency_key,
    content_hash and size_bytes.
    """
    if not items:
        return []
    cols = (
        "seq",
        "item_type",
        "role",
        "content",
        "metadata_json",
        "idempotency_key",
        "content_hash",
        "size_bytes",
    )
    arrays = {c: [it[c] for it in items] for c in cols}
    return (
        conn.cursor(row_factory=class_row(InsertedItem))
        .execute(
            """INSERT INTO working_items (account_id, session_id, seq, item_type, role, content, metadata,
                                      idempotency_key, content_hash, size_bytes)
           SELECT %(account_id)s, %(session_id)s, t.seq, t.item_type, t.role, t.content, t.metadata_json::jsonb,
                  t.idempotency_key, t.content_hash, t.size_bytes
           FROM unnest(%(seq)s::bigint[], %(item_type)s::text[], %(role)s::text[], %(content)s::text[],
                       %(metadata_json)s::text[], %(idempotency_key)s::text[], %(content_hash)s::text[],
                       %(size_bytes)s::integer[])
                AS t(seq, item_type, role, content, metadata_json, idempotency_key, content_hash, size_bytes)
           ORDER BY t.seq
           RETURNING seq, created_at""",
            {"account_id": account_id, "session_id": session_id, **arrays},
        )
        .fetchall()
    )


def page_items(
    conn: Conn,
    *,
    account_id: UUID,
    session_id: UUID,
    after_seq: int,
    limit: int,
    max_bytes: int,
) -> tuple[list[dict[str, Any]], bool, bool]:
    """Items with seq > after_seq in seq order: (items, has_more, size_limited).

    Reads limit + 1 rows so ``has_more`` is exact whatever gaps deletions left. The page also stops once the
    running size of content + metadata would pass ``max_bytes`` (the first item is always returned), so a page
    of large items still fits a Lambda response; rows past the cut come back without their content.
    """
    rows = conn.execute(
        f"""SELECT p.keep, p.n, {_PAGE_SELECT}
            FROM (
                SELECT w.*, (w.n <= %(limit)s AND (w.n = 1 OR w.running <= %(max_bytes)s)) AS keep
                FROM (
                    SELECT {ITEM_COLUMNS},
                           row_number() OVER win AS n,
                           sum(size_bytes) OVER win AS running
                    FROM working_items
                    WHERE account_id = %(account_id)s AND session_id = %(session_id)s AND seq > %(after_seq)s
                    WINDOW win AS (ORDER BY seq ROWS UNBOUNDED PRECEDING)
                    ORDER BY seq
                    LIMIT %(limit)s + 1
                ) w
            ) p
            ORDER BY p.seq""",
        {
            "account_id": account_id,
            "session_id": session_id,
            "after_seq": after_seq,
            "limit": limit,
            "max_bytes": max_bytes,
        },
    ).fetchall()
    kept = [r for r in rows if r["keep"]]
    size_limited = any(not r["keep"] and r["n"] <= limit for r in rows)
    for r in kept:
        del r["keep"], r["n"]
    return kept, len(rows) > len(kept), size_limited


def delete_item(conn: Conn, *, account_id: UUID, session_id: UUID, seq: int) -> bool:
    return (
        conn.execute(
            "DELETE FROM working_items WHERE account_id = %(a)s AND session_id = %(session_id)s AND seq = %(seq)s",
            {"a": account_id, "session_id": session_id, "seq": seq},
        ).rowcount
        > 0
    )


_RECENT = """SELECT seq, item_type, role, left(content, %(max_chars)s) AS content,
                    char_length(content) AS content_chars, created_at
             FROM working_items
             WHERE account_id = %(account_id)s AND session_id = %(session_id)s AND seq < %(before_seq)s
             ORDER BY seq DESC
             LIMIT %(limit)s"""


def _recent_params(
    account_id: UUID, session_id: UUID, before_seq: int, limit: int, max_chars: int
) -> dict[str, Any]:
    return {
        "account_id": account_id,
        "session_id": session_id,
        "before_seq": before_seq,
        "limit": limit,
        "max_chars": max_chars,
    }


def recent_items(
    conn: Conn, *, account_id: UUID, session_id: UUID, before_seq: int, limit: int, max_chars: int
) -> list[RecentRow]:
    """Items with seq < before_seq, newest first, each with at most ``max_chars`` of its content and its full
    length in characters (the context pack's WORKING layer reads a session backwards under a budget)."""
    return (
        conn.cursor(row_factory=class_row(RecentRow))
        .execute(
            _RECENT,
            _recent_params(account_id, session_id, before_seq, limit, max_chars),
        )
        .fetchall()
    )


def recent_window(
    conn: Conn, *, account_id: UUID, session_id: UUID, before_seq: int, limit: int, max_chars: int
) -> tuple[bool, int, list[RecentRow]]:
    """Whether the session exists, how many items it has, and its first page of ``recent_items``.
    The three statements are sent before any result is read: in pipeline mode they cost one round trip."""
    found = conn.execute(
        "SELECT 1 AS found FROM working_sessions WHERE account_id = %(a)s AND id = %(session_id)s",
        {"a": account_id, "session_id": session_id},
    )
    count = conn.execute(
        "SELECT count(*) AS n FROM working_items WHERE account_id = %(a)s AND session_id = %(session_id)s",
        {"a": account_id, "session_id": session_id},
    )
    page = conn.cursor(row_factory=class_row(RecentRow)).execute(
        _RECENT,
        _recent_params(account_id, session_id, before_seq, limit, max_chars),
    )
    rows = page.fetchall()
    total = count.fetchone()
    return found.fetchone() is not None, int(total["n"]) if total else 0, rows
