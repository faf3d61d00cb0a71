"""Small SQL helpers shared by repositories."""

from __future__ import annotations

from typing import Any

from agentmate.core.db import Conn


def like_pattern(q: str) -> str:
    """A case-insensitive substring pattern with LIKE wildcards in the user's text escaped."""
    return "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def paged(
    conn: Conn, *, columns: str, table: str, where: list[str], params: dict[str, Any], order_by: str,
    limit: int, offset: int,
) -> tuple[list[dict[str, Any]], int]:
    """One page of rows plus the total match count (a window count; a second query only past the end)."""
    cond = " AND ".join(where) or "TRUE"
    params = {**params, "_limit": limit, "_offset": offset}
    rows = conn.execute(
        f"""SELECT {columns}, count(*) OVER () AS _total FROM {table} WHERE {cond}
            ORDER BY {order_by} LIMIT %(_limit)s OFFSET %(_offset)s""",
        params,
    ).fetchall()
    if rows:
        total = rows[0]["_total"]
    elif offset == 0:
        total = 0
    else:
        found = conn.execute(f"SELECT count(*) AS n FROM {table} WHERE {cond}", params).fetchone()
        total = found["n"] if found else 0
    for r in rows:
        r.pop("_total", None)
    return rows, total
