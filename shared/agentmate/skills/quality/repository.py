"""SQL of quality runs (migrations/0060): the telemetry a run reads and the runs' audit rows."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.sql import paged

RUN_SUMMARY_COLUMNS = (
    "id, skill_version_id, baseline_version_id, skill_name, engine_version, checkset_version, input_package_hash, "
    "baseline_package_hash, telemetry_cutoff, status, summary, created_at"
)


class TelemetryLog(NamedTuple):
    """A version-bound log as the telemetry check reads it (never its body)."""

    id: UUID
    skill_version_id: UUID
    created_at: datetime
    was_triggered: bool
    outcome: str


def telemetry_logs(
    conn: Conn, *, account_id: UUID, version_id: UUID, cutoff: datetime, limit: int
) -> list[TelemetryLog]:
    return (
        conn.cursor(row_factory=class_row(TelemetryLog))
        .execute(
            """SELECT id, skill_version_id, created_at, was_triggered, outcome FROM skill_logs
           WHERE account_id = %(account_id)s AND skill_version_id = %(version_id)s AND created_at <= %(cutoff)s
           ORDER BY created_at DESC, id DESC LIMIT %(limit)s""",
            {"account_id": account_id, "version_id": version_id, "cutoff": cutoff, "limit": limit},
        )
        .fetchall()
    )


def insert_quality_run(
    conn: Conn, *, account_id: UUID, user_id: UUID | None, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO skill_quality_runs (account_id, user_id, key_id, skill_version_id, baseline_version_id,
                   skill_name, engine_version, checkset_version, input_package_hash, baseline_package_hash,
                   telemetry_cutoff, status, summary, report)
            VALUES (%(a)s, %(u)s, %(k)s, %(skill_version_id)s, %(baseline_version_id)s, %(skill_name)s,
                    %(engine_version)s, %(checkset_version)s, %(input_package_hash)s, %(baseline_package_hash)s,
                    %(telemetry_cutoff)s, %(status)s, %(summary)s, %(report)s)
            RETURNING {RUN_SUMMARY_COLUMNS}, report""",
        {
            **data,
            "summary": Jsonb(data["summary"]),
            "report": Jsonb(data["report"]),
            "a": account_id,
            "u": user_id,
            "k": key_id,
        },
    ).fetchone()
    assert row is not None
    return row


def list_quality_runs(
    conn: Conn, *, account_id: UUID, version_id: UUID, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    return paged(
        conn,
        columns=RUN_SUMMARY_COLUMNS,
        table="skill_quality_runs",
        where=["account_id = %(a)s", "skill_version_id = %(v)s"],
        params={"a": account_id, "v": version_id},
        order_by="created_at DESC, id DESC",
        limit=limit,
        offset=offset,
    )


def get_quality_run(conn: Conn, *, account_id: UUID, run_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        f"SELECT {RUN_SUMMARY_COLUMNS}, report FROM skill_quality_runs WHERE account_id = %(account_id)s AND id = %(run_id)s",
        {"account_id": account_id, "run_id": run_id},
    ).fetchone()
