"""SQL for expenses. RLS scopes every statement to the transaction's account; the explicit account_id filters
are kept as well so the planner uses the (account_id, …) indexes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from agentmate.core import sql
from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import delete_by_id, like_pattern, paged, select_by_id, update_by_id

COLUMNS = "id, amount, currency, description, tags, source, happened_at, created_at, updated_at"
UPDATABLE = ("amount", "currency", "description", "tags", "source", "happened_at")


@dataclass(frozen=True)
class Filters:
    """Already-normalised filters shared by the list and the summary. ``start`` is inclusive, ``end`` exclusive."""

    tags: list[str] = field(default_factory=list)
    q: str | None = None
    source: str | None = None
    currency: str | None = None
    start: datetime | None = None
    end: datetime | None = None


# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "expenses_amount_check": ("amount", "must be greater than 0"),
        "expenses_currency_check": ("currency", "must be an ISO 4217 code of three capital letters"),
        "expenses_description_check": ("description", "must be at most 2000 characters"),
        "expenses_source_check": ("source", "must be 1..255 characters"),
    }
)


def _where(account_id: UUID, f: Filters) -> tuple[list[str], dict[str, Any]]:
    params: dict[str, Any] = {"account_id": account_id}
    where = ["account_id = %(account_id)s"]
    if f.tags:
        where.append("tags @> %(tags)s")
        params["tags"] = f.tags
    if f.q:
        where.append("description ILIKE %(q)s")
        params["q"] = like_pattern(f.q)
    if f.source:
        where.append("source = %(source)s")
        params["source"] = f.source
    if f.currency:
        where.append("currency = %(currency)s")
        params["currency"] = f.currency
    if f.start is not None:
        where.append("happened_at >= %(start)s")
        params["start"] = f.start
    if f.end is not None:
        where.append("happened_at < %(end)s")
        params["end"] = f.end
    return where, params


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO expenses (account_id, user_id, key_id, amount, currency, description, tags, source,
                                  happened_at)
            VALUES (%(account_id)s, %(user_id)s, %(key_id)s, %(amount)s, %(currency)s, %(description)s, %(tags)s,
                    %(source)s, coalesce(%(happened_at)s, now()))
            RETURNING {COLUMNS}""",
        {"account_id": account_id, "user_id": user_id, "key_id": key_id, **data},
    ).fetchone()
    assert row is not None
    return row


def get(conn: Conn, *, account_id: UUID, expense_id: UUID) -> dict[str, Any] | None:
    return select_by_id(conn, table="expenses", columns=COLUMNS, account_id=account_id, record_id=expense_id)


def update(
    conn: Conn, *, account_id: UUID, expense_id: UUID, changes: dict[str, Any]
) -> dict[str, Any] | None:
    return update_by_id(
        conn,
        table="expenses",
        columns=COLUMNS,
        updatable=UPDATABLE,
        account_id=account_id,
        record_id=expense_id,
        changes=changes,
    )


def delete(conn: Conn, *, account_id: UUID, expense_id: UUID) -> bool:
    return delete_by_id(conn, table="expenses", account_id=account_id, record_id=expense_id)


def search(
    conn: Conn, *, account_id: UUID, filters: Filters, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """Matching expenses, most recent ``happened_at`` first."""
    where, params = _where(account_id, filters)
    return paged(
        conn,
        columns=COLUMNS,
        table="expenses",
        where=where,
        params=params,
        order_by="happened_at DESC, id",
        limit=limit,
        offset=offset,
    )


def summary(conn: Conn, *, account_id: UUID, filters: Filters) -> list[dict[str, Any]]:
    """One statement (one snapshot): a row per currency (``level`` 0) and a row per (currency, tag) (``level`` 1).

    Rows come ordered by currency, the currency row first, then its tags by total descending."""
    where, params = _where(account_id, filters)
    return conn.execute(
        f"""WITH m AS MATERIALIZED (SELECT currency, amount, tags FROM expenses WHERE {" AND ".join(where)})
            SELECT currency, 0 AS level, NULL::text AS tag, sum(amount) AS total, count(*) AS count
            FROM m GROUP BY currency
            UNION ALL
            SELECT m.currency, 1, t.tag, sum(m.amount), count(*)
            FROM m CROSS JOIN LATERAL unnest(m.tags) AS t (tag)
            GROUP BY m.currency, t.tag
            ORDER BY currency, level, total DESC, tag""",
        params,
    ).fetchall()


def tag_counts(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[sql.TagCountRow], int]:
    """Each tag of the account's expenses with how many expenses carry it, most used first (``core.sql.tag_counts``)."""
    return sql.tag_counts(conn, table="expenses", account_id=account_id, limit=limit, offset=offset)
