"""SQL of portability: the export and import rows, and the generic reads and writes of the catalogued tables
(``archive.TABLES``; a table name is only ever one of those, quoted as an identifier)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal, NamedTuple
from uuid import UUID

from psycopg import sql
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.jobs.schemas import Job
from agentmate.portability.archive import DROPPED, VERSION, Table

CONSTRAINTS = constraints(
    {
        "account_exports_status_check": ("status", "must be a job status"),
        "account_exports_counts_check": ("counts", "must be an object"),
        "account_imports_status_check": ("status", "must be awaiting_upload or a job status"),
        "account_imports_counts_check": ("counts", "must be an object"),
    }
)

Kind = Literal["account_exports", "account_imports"]


class TransferRow(NamedTuple):
    id: UUID
    status: str
    job_id: UUID | None
    object_key: str
    format_version: int | None
    counts: dict[str, Any]
    error: str | None
    created_at: datetime
    finished_at: datetime | None


_COLUMNS = "id, status, job_id, object_key, format_version, counts, error, created_at, finished_at"


def insert(conn: Conn, kind: Kind, *, account_id: UUID, transfer_id: UUID, object_key: str) -> TransferRow:
    query = sql.SQL(
        "INSERT INTO {table} (id, account_id, object_key) VALUES (%(id)s, %(account_id)s, %(object_key)s) "
        "RETURNING " + _COLUMNS
    ).format(table=sql.Identifier(kind))
    params = {"id": transfer_id, "account_id": account_id, "object_key": object_key}
    row = conn.cursor(row_factory=class_row(TransferRow)).execute(query, params).fetchone()
    assert row is not None
    return row


def get(
    conn: Conn, kind: Kind, *, account_id: UUID, transfer_id: UUID, lock: bool = False
) -> TransferRow | None:
    query = sql.SQL(
        "SELECT "
        + _COLUMNS
        + " FROM {table} WHERE id = %(id)s AND account_id = %(account_id)s"
        + (" FOR UPDATE" if lock else "")
    ).format(table=sql.Identifier(kind))
    cur = conn.cursor(row_factory=class_row(TransferRow))
    return cur.execute(query, {"id": transfer_id, "account_id": account_id}).fetchone()


def set_job(conn: Conn, kind: Kind, *, account_id: UUID, transfer_id: UUID, job: Job) -> TransferRow:
    """The job that does the export's or import's work, and its status."""
    query = sql.SQL(
        "UPDATE {table} SET job_id = %(job_id)s, status = %(status)s"
        + (", started_at = now()" if kind == "account_imports" else "")
        + " WHERE id = %(id)s AND account_id = %(account_id)s RETURNING "
        + _COLUMNS
    ).format(table=sql.Identifier(kind))
    params = {"job_id": job.id, "status": job.status, "id": transfer_id, "account_id": account_id}
    row = conn.cursor(row_factory=class_row(TransferRow)).execute(query, params).fetchone()
    assert row is not None
    return row


def mirror(conn: Conn, kind: Kind, *, account_id: UUID, job_id: UUID, status: str, error: str | None) -> None:
    """The job's status on its export or import row (the kind's on_change)."""
    conn.execute(
        sql.SQL(
            "UPDATE {table} SET status = %(status)s, error = %(error)s, "
            "finished_at = CASE WHEN %(status)s IN ('succeeded', 'failed', 'cancelled') THEN now() END "
            "WHERE job_id = %(job_id)s AND account_id = %(account_id)s"
        ).format(table=sql.Identifier(kind)),
        {"status": status, "error": error, "job_id": job_id, "account_id": account_id},
    )


def record_result(conn: Conn, kind: Kind, job: Job, counts: dict[str, Any]) -> None:
    """What the job did (rows per table, the archive format's version), in its success transaction."""
    conn.execute(
        sql.SQL(
            "UPDATE {table} SET counts = %(counts)s, format_version = %(format_version)s "
            "WHERE job_id = %(job_id)s AND account_id = %(account_id)s"
        ).format(table=sql.Identifier(kind)),
        {"counts": Jsonb(counts), "format_version": VERSION, "job_id": job.id, "account_id": job.account_id},
    )


def columns(conn: Conn, table: Table) -> list[str]:
    """The table's stored columns (generated ones are derived, never carried), minus the dropped and omitted ones."""
    rows = conn.execute(
        """SELECT column_name FROM information_schema.columns
        WHERE table_schema = current_schema() AND table_name = %(table)s AND is_generated = 'NEVER'
        ORDER BY ordinal_position""",
        {"table": table.name},
    ).fetchall()
    return [
        r["column_name"]
        for r in rows
        if r["column_name"] not in DROPPED and r["column_name"] not in table.omit
    ]


def dump(conn: Conn, table: Table, names: list[str], *, account_id: UUID) -> Iterator[str]:
    """Each row of the account's table as one line of JSON (Postgres renders it: types round-trip as text)."""
    order = table.order  # a column list of the catalogue, never input
    query = sql.SQL(
        "SELECT json_build_object({pairs})::text AS line FROM {table} WHERE account_id = %(account_id)s "
        "ORDER BY " + order
    ).format(
        pairs=sql.SQL(", ").join(sql.SQL("{}, {}").format(sql.Literal(n), sql.Identifier(n)) for n in names),
        table=sql.Identifier(table.name),
    )
    with conn.cursor(name=f"dump_{table.name}") as cur:
        cur.itersize = 500
        cur.execute(query, {"account_id": account_id})
        for row in cur:
            yield str(row["line"])


def count(conn: Conn, table: Table, *, account_id: UUID) -> int:
    query = sql.SQL("SELECT count(*) AS n FROM {table} WHERE account_id = %(account_id)s").format(
        table=sql.Identifier(table.name)
    )
    row = conn.execute(query, {"account_id": account_id}).fetchone()
    return int(row["n"]) if row else 0


def load(conn: Conn, table: Table, names: list[str], rows: list[dict[str, Any]], *, account_id: UUID) -> None:
    """Insert rows (already remapped) into the account's table; absent columns take their defaults."""
    if not rows:
        return
    query = sql.SQL(
        "INSERT INTO {table} (account_id, {cols}) SELECT %(account_id)s, {cols} "
        "FROM jsonb_populate_recordset(NULL::{table}, %(rows)s)"
    ).format(table=sql.Identifier(table.name), cols=sql.SQL(", ").join(map(sql.Identifier, names)))
    conn.execute(query, {"account_id": account_id, "rows": Jsonb(rows, dumps=_dumps)})


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def set_late(
    conn: Conn, table: Table, column: str, pairs: list[tuple[str, str]], *, account_id: UUID
) -> None:
    """Set a self-reference after the table's rows are in: ``pairs`` is (row id, referenced id)."""
    if not pairs:
        return
    query = sql.SQL(
        "UPDATE {table} AS t SET {col} = p.ref FROM jsonb_to_recordset(%(pairs)s) AS p(id uuid, ref uuid) "
        "WHERE t.id = p.id AND t.account_id = %(account_id)s"
    ).format(table=sql.Identifier(table.name), col=sql.Identifier(column))
    conn.execute(query, {"pairs": Jsonb([{"id": i, "ref": r} for i, r in pairs]), "account_id": account_id})


def imported_entries(conn: Conn, *, account_id: UUID, after: UUID | None, limit: int) -> list[dict[str, Any]]:
    """Memory entries in id order (the re-index job walks them in pages)."""
    return conn.execute(
        """SELECT * FROM memory_entries WHERE account_id = %(account_id)s
        AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid) ORDER BY id LIMIT %(limit)s""",
        {"account_id": account_id, "after": after, "limit": limit},
    ).fetchall()
