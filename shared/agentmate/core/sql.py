"""Small SQL helpers shared by repositories."""

from __future__ import annotations

from typing import Any, TypedDict

from agentmate.core.db import Conn


def like_pattern(q: str) -> str:
    """A case-insensitive substring pattern with LIKE wildcards in the user's text escaped."""
    return "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def paged(
    conn: Conn,
    *,
    columns: str,
    table: str,
    where: list[str],
    params: dict[str, Any],
    order_by: str,
    limit: int,
    offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """One page of rows plus the total match count (a window count; a second query only past the end)."""
    cond = " AND ".join(where) or "TRUE"
    params = {**params, "_limit": limit, "_offset": offset}
    rows = conn.execute(
        f"""SELECT {columns}, count(*) OVER () AS _total FROM {table} WHERE {cond}
            ORDER BY {order_by} LIMIT %(_limit)s OFFSET %(_offset)s""",
        params,
    ).fetchall()
    total = window_total(
        conn, rows, offset=offset, count=f"SELECT count(*) AS n FROM {table} WHERE {cond}", params=params
    )
    for r in rows:
        r.pop("_total", None)
    return rows, total


def window_total(
    conn: Conn, rows: list[dict[str, Any]], *, offset: int, count: str, params: dict[str, Any]
) -> int:
    """The total of a page whose rows carry a window count (``_total``); ``count`` (selecting ``n``) runs only for a
    page past the end, which has no row to carry it."""
    if rows:
        return int(rows[0]["_total"])
    if offset == 0:
        return 0
    found = conn.execute(count, params).fetchone()
    return int(found["n"]) if found else 0


# One record by id, for the record domains. ``table``/``columns``/``updatable`` are the repository's constants,
# never user input; the changed columns are filtered through ``updatable``.


def select_by_id(
    conn: Conn, *, table: str, columns: str, account_id: Any, record_id: Any
) -> dict[str, Any] | None:
    return conn.execute(
        f"SELECT {columns} FROM {table} WHERE account_id = %(account_id)s AND id = %(id)s",
        {"account_id": account_id, "id": record_id},
    ).fetchone()


def update_by_id(
    conn: Conn,
    *,
    table: str,
    columns: str,
    updatable: tuple[str, ...],
    account_id: Any,
    record_id: Any,
    changes: dict[str, Any],
    extra_sets: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """Set the changed updatable columns (plus ``extra_sets`` SQL and ``updated_at``); None if no such row."""
    sets = [f"{col} = %({col})s" for col in changes if col in updatable]
    sets += [*extra_sets, "updated_at = now()"]
    return conn.execute(
        f"""UPDATE {table} SET {", ".join(sets)}
            WHERE account_id = %(_account_id)s AND id = %(_id)s RETURNING {columns}""",
        {**changes, "_account_id": account_id, "_id": record_id},
    ).fetchone()


def delete_by_id(conn: Conn, *, table: str, account_id: Any, record_id: Any) -> bool:
    return (
        conn.execute(
            f"DELETE FROM {table} WHERE account_id = %(account_id)s AND id = %(id)s",
            {"account_id": account_id, "id": record_id},
        ).rowcount
        > 0
    )


def containing_any(
    conn: Conn,
    *,
    table: str,
    columns: str,
    text_columns: tuple[str, ...],
    account_id: Any,
    substrings: list[str],
    limit: int,
) -> list[dict[str, Any]]:
    """Rows whose text columns contain any of ``substrings`` (case-insensitive), those containing the most of them
    first, then newest: a bounded candidate set for ranking in Python (the context pack's FACTS layer). Linear
    LIKE patterns only, the user's text escaped. ``table``/``columns``/``text_columns`` are the repository's
    constants, never user input."""
    if not substrings:
        return []
    text = " || ' ' || ".join(f"coalesce({c}, '')" for c in text_columns)
    return conn.execute(
        f"""SELECT {columns} FROM (
                SELECT {columns}, (SELECT count(*) FROM unnest(%(patterns)s::text[]) AS p
                                   WHERE ({text}) ILIKE p) AS _found
                FROM {table}
                WHERE account_id = %(account_id)s AND ({text}) ILIKE ANY (%(patterns)s::text[])) AS t
            ORDER BY t._found DESC, t.created_at DESC, t.id
            LIMIT %(limit)s""",
        {"account_id": account_id, "patterns": [like_pattern(s) for s in substrings], "limit": limit},
    ).fetchall()


class TagCountRow(TypedDict):
    tag: str
    count: int


def tag_counts(
    conn: Conn, *, table: str, account_id: Any, limit: int, offset: int
) -> tuple[list[TagCountRow], int]:
    """One page of a record table's tag roster: each tag with the number of records carrying it, most used first,
    then by tag; plus the number of distinct tags. ``table`` is the repository's constant, never user input."""
    params = {"account_id": account_id, "limit": limit, "offset": offset}
    rows = conn.execute(
        f"""SELECT tag, count(DISTINCT r.id) AS count, count(*) OVER () AS _total
            FROM {table} r CROSS JOIN LATERAL unnest(r.tags) AS tag
            WHERE r.account_id = %(account_id)s
            GROUP BY tag ORDER BY count(DISTINCT r.id) DESC, tag LIMIT %(limit)s OFFSET %(offset)s""",
        params,
    ).fetchall()
    total = window_total(
        conn,
        rows,
        offset=offset,
        count=f"""SELECT count(DISTINCT tag) AS n FROM {table} r CROSS JOIN LATERAL unnest(r.tags) AS tag
                  WHERE r.account_id = %(account_id)s""",
        params=params,
    )
    return [TagCountRow(tag=r["tag"], count=r["count"]) for r in rows], total
