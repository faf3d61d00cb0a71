"""SQL for skill versions and skill logs (migrations/0015_skills.sql)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged

SUMMARY_COLUMNS = (
    "id, skill_name, version, content_hash, package_hash, source_id, source_revision_id, agent_id, change_summary, "
    "eval_pass_rate, is_active, activated_at, published_at"
)
VERSION_COLUMNS = SUMMARY_COLUMNS + ", content"
LOG_COLUMNS = (
    "id, skill_name, skill_version, skill_version_id, agent_id, session_id, trigger_text, was_triggered, outcome, "
    "failure_reason, user_correction, tool_calls, duration_ms, created_at"
)


class VersionRef(NamedTuple):
    """The identity of a version (for attribution checks), without its body."""

    id: UUID
    skill_name: str
    version: str


@dataclass(frozen=True, slots=True)
class VersionRow:
    """A version as ``VERSION_COLUMNS`` reads it (the summary columns and the SKILL.md body)."""

    id: UUID
    skill_name: str
    version: str
    content_hash: str
    package_hash: str | None
    source_id: UUID | None
    source_revision_id: UUID | None
    agent_id: str
    change_summary: str
    eval_pass_rate: float | None
    is_active: bool
    activated_at: datetime | None
    published_at: datetime
    content: str


class StatsRow(NamedTuple):
    """Execution counts of one skill over all its logs."""

    total_runs: int
    triggered_runs: int
    success: int
    failure: int
    partial: int
    user_corrected: int
    avg_duration_ms: float | None
    last_run_at: datetime | None


class VersionStatsRow(NamedTuple):
    """Runs and successes of one version label (or version id) of a skill."""

    skill_version_id: UUID | None
    skill_version: str
    total_runs: int
    success: int


# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "skill_versions_skill_name_check": ("skill_name", "must be 1..200 characters"),
        "skill_versions_version_check": ("version", "must be 1..100 characters"),
        "skill_versions_content_hash_check": ("content_hash", "must be 64 lowercase hex characters (sha256)"),
        "skill_versions_package_hash_check": ("package_hash", "must be 64 lowercase hex characters (sha256)"),
        "skill_versions_eval_pass_rate_check": ("eval_pass_rate", "must be between 0 and 1"),
        "skill_versions_direct_label_key": (
            "version",
            "this version label of the skill is already published",
        ),
        "skill_versions_direct_content_key": (
            "content",
            "this body is already published as a version of the skill",
        ),
        "skill_versions_one_active_key": (
            "activate",
            "another version of this skill became active at the same time",
        ),
        "skill_logs_skill_name_check": ("skill_name", "must be 1..200 characters"),
        "skill_logs_outcome_check": ("outcome", "must be one of success, failure, partial, user_corrected"),
        "skill_logs_duration_check": ("duration_ms", "must be at least 0"),
        "skill_logs_tool_calls_check": ("tool_calls", "must be an array"),
        "skill_logs_skill_version_fkey": (
            "skill_version_id",
            "unknown skill version of this skill in this account",
        ),
    }
)

# The registry's tables (migrations/0060: the package tables from the shared template, artifacts, quality runs);
# their SQL is in the sub-packages' repository.py modules and agentmate.packages.store.
REGISTRY_CONSTRAINTS = constraints(
    {
        "skill_sources_account_name_key": ("name", "a skill source with this name already exists"),
        "skill_sources_active_revision_fkey": (
            "source_id",
            "the active revision must be a revision of this source",
        ),
        "skill_sources_name_check": ("name", "must be 1..128 characters"),
        "skill_sources_package_path_check": ("package_path", "must be at most 512 characters"),
        "skill_sources_repository_url_check": ("repository_url", "must be 1..2048 characters"),
        "skill_sources_status_check": ("status", "must be pending, ready or error"),
        "skill_sources_type_check": ("type", "must be git or local"),
        "skill_source_revisions_commit_sha_check": (
            "commit_sha",
            "must be a 40- or 64-character hex commit id",
        ),
        "skill_source_revisions_counts_check": ("files", "a revision has at least one file"),
        "skill_source_revisions_id_source_account_key": ("source_id", "revision identity"),
        "skill_source_revisions_origin_check": ("origin", "must be git or snapshot"),
        "skill_source_revisions_package_hash_check": (
            "package_hash",
            "must be 64 lowercase hex characters (sha256)",
        ),
        "skill_source_revisions_source_fkey": ("source_id", "unknown skill source in this account"),
        "skill_source_revisions_source_hash_key": (
            "package_hash",
            "this package is already a revision of the source",
        ),
        "skill_revision_files_content_check": ("files", "a text file keeps its content, a binary file none"),
        "skill_revision_files_path_check": ("files", "a path must be 1..512 characters"),
        "skill_revision_files_revision_fkey": ("revision_id", "unknown revision in this account"),
        "skill_revision_files_revision_path_key": ("files", "duplicate path in the package"),
        "skill_revision_files_sha256_check": ("files", "sha256 must be 64 lowercase hex characters"),
        "skill_revision_files_size_check": ("files", "size_bytes must be at least 0"),
        "skill_versions_revision_fkey": (
            "source_revision_id",
            "unknown revision of this source in this account",
        ),
        "skill_versions_revision_key": ("source_revision_id", "this revision already has its version"),
        "skill_versions_source_fkey": ("source_id", "unknown skill source in this account"),
        "skill_versions_source_pair_check": ("source_id", "source_id and source_revision_id go together"),
        "skill_compiled_artifacts_card_check": ("card", "must be a JSON object of at most 64 KiB"),
        "skill_compiled_artifacts_contract_check": ("knowledge_contract", "must be a JSON object"),
        "skill_compiled_artifacts_hash_check": (
            "package_hash",
            "must be 64 lowercase hex characters (sha256)",
        ),
        "skill_compiled_artifacts_manifest_check": ("resource_manifest", "must be a JSON array"),
        "skill_compiled_artifacts_version_fkey": (
            "skill_version_id",
            "unknown skill version in this account",
        ),
        "skill_compile_failures_problems_check": ("problems", "must be a JSON array"),
        "skill_compile_failures_version_fkey": ("skill_version_id", "unknown skill version in this account"),
        "skill_quality_runs_baseline_fkey": ("baseline_version_id", "unknown skill version in this account"),
        "skill_quality_runs_report_check": ("report", "must be a JSON object of at most 1 MiB"),
        "skill_quality_runs_status_check": ("status", "must be completed or failed"),
        "skill_quality_runs_summary_check": ("summary", "must be a JSON object"),
        "skill_quality_runs_version_fkey": ("skill_version_id", "unknown skill version in this account"),
    }
)


def lock_skill(conn: Conn, *, account_id: UUID, skill_name: str) -> None:
    """Serialise publishes/activations of one skill (the one-active partial unique index is the backstop)."""
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%(lock_key)s, 7452015))",
        {"lock_key": f"skill-version:{account_id}:{skill_name}"},
    )


def _versions(conn: Conn) -> Cursor[VersionRow]:
    return conn.cursor(row_factory=class_row(VersionRow))


def get_version(conn: Conn, *, account_id: UUID, version_id: UUID) -> VersionRow | None:
    return (
        _versions(conn)
        .execute(
            f"SELECT {VERSION_COLUMNS} FROM skill_versions WHERE account_id = %(account_id)s AND id = %(version_id)s",
            {"account_id": account_id, "version_id": version_id},
        )
        .fetchone()
    )


def version_ref(conn: Conn, *, account_id: UUID, version_id: UUID) -> VersionRef | None:
    """The identity of a version (for attribution checks), without its body."""
    return (
        conn.cursor(row_factory=class_row(VersionRef))
        .execute(
            "SELECT id, skill_name, version FROM skill_versions "
            "WHERE account_id = %(account_id)s AND id = %(version_id)s",
            {"account_id": account_id, "version_id": version_id},
        )
        .fetchone()
    )


def find_direct(
    conn: Conn, *, account_id: UUID, skill_name: str, version: str, content_hash: str
) -> list[VersionRow]:
    """Direct publishes of this skill that share the label or the body."""
    return (
        _versions(conn)
        .execute(
            f"""SELECT {VERSION_COLUMNS} FROM skill_versions
                WHERE account_id = %(account_id)s AND skill_name = %(skill_name)s AND source_id IS NULL
                  AND (version = %(version)s OR content_hash = %(content_hash)s)""",
            {
                "account_id": account_id,
                "skill_name": skill_name,
                "version": version,
                "content_hash": content_hash,
            },
        )
        .fetchall()
    )


def insert_version(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> VersionRow:
    row = (
        _versions(conn)
        .execute(
            f"""INSERT INTO skill_versions (account_id, user_id, key_id, skill_name, version, content, content_hash,
                                            package_hash, agent_id, change_summary, eval_pass_rate)
                VALUES (%(a)s, %(u)s, %(k)s, %(skill_name)s, %(version)s, %(content)s, %(content_hash)s,
                        %(content_hash)s, %(agent_id)s, %(change_summary)s, %(eval_pass_rate)s)
                RETURNING {VERSION_COLUMNS}""",
            {**data, "a": account_id, "u": user_id, "k": key_id},
        )
        .fetchone()
    )
    assert row is not None
    return row


def activate(conn: Conn, *, account_id: UUID, version_id: UUID, skill_name: str) -> VersionRow | None:
    """Make one version the skill's only active version (caller holds the skill lock)."""
    conn.execute(
        """UPDATE skill_versions SET is_active = false
           WHERE account_id = %(account_id)s AND skill_name = %(skill_name)s AND is_active AND id <> %(version_id)s""",
        {"account_id": account_id, "skill_name": skill_name, "version_id": version_id},
    )
    return (
        _versions(conn)
        .execute(
            f"""UPDATE skill_versions SET is_active = true,
                       activated_at = CASE WHEN is_active THEN activated_at ELSE now() END
                WHERE account_id = %(account_id)s AND id = %(version_id)s RETURNING {VERSION_COLUMNS}""",
            {"account_id": account_id, "version_id": version_id},
        )
        .fetchone()
    )


def active_version(conn: Conn, *, account_id: UUID, skill_name: str) -> VersionRow | None:
    return (
        _versions(conn)
        .execute(
            f"SELECT {VERSION_COLUMNS} FROM skill_versions "
            "WHERE account_id = %(account_id)s AND skill_name = %(skill_name)s AND is_active",
            {"account_id": account_id, "skill_name": skill_name},
        )
        .fetchone()
    )


def active_version_ids(conn: Conn, *, account_id: UUID, skill_name: str | None, limit: int) -> list[UUID]:
    params: dict[str, Any] = {"a": account_id, "lim": limit}
    cond = ""
    if skill_name:
        cond = "AND skill_name = %(n)s"
        params["n"] = skill_name
    rows = conn.execute(
        f"""SELECT id FROM skill_versions WHERE account_id = %(a)s AND is_active {cond}
            ORDER BY skill_name, id LIMIT %(lim)s""",
        params,
    ).fetchall()
    return [r["id"] for r in rows]


def list_versions(
    conn: Conn, *, account_id: UUID, skill_name: str | None, active: bool | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    params: dict[str, Any] = {"a": account_id}
    where = ["account_id = %(a)s"]
    if skill_name:
        where.append("skill_name = %(n)s")
        params["n"] = skill_name
    if active is not None:
        where.append("is_active = %(act)s")
        params["act"] = active
    return paged(
        conn,
        columns=SUMMARY_COLUMNS,
        table="skill_versions",
        where=where,
        params=params,
        order_by="published_at DESC, id",
        limit=limit,
        offset=offset,
    )


def insert_log(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO skill_logs (account_id, user_id, key_id, skill_name, skill_version, skill_version_id, agent_id,
                                    session_id, trigger_text, was_triggered, outcome, failure_reason,
                                    user_correction, tool_calls, duration_ms)
            VALUES (%(a)s, %(u)s, %(k)s, %(skill_name)s, %(skill_version)s, %(skill_version_id)s, %(agent_id)s,
                    %(session_id)s, %(trigger_text)s, %(was_triggered)s, %(outcome)s, %(failure_reason)s,
                    %(user_correction)s, %(tool_calls)s, %(duration_ms)s)
            RETURNING {LOG_COLUMNS}""",
        {**data, "tool_calls": Jsonb(data["tool_calls"]), "a": account_id, "u": user_id, "k": key_id},
    ).fetchone()
    assert row is not None
    return row


def list_logs(
    conn: Conn, *, account_id: UUID, filters: dict[str, Any], limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    params: dict[str, Any] = {"a": account_id}
    where = ["account_id = %(a)s"]
    for column in ("skill_name", "agent_id", "outcome", "session_id", "skill_version_id"):
        value = filters.get(column)
        if value is not None and value != "":
            where.append(f"{column} = %({column})s")
            params[column] = value
    if filters.get("outcomes"):
        where.append("outcome = ANY(%(outcomes)s)")
        params["outcomes"] = list(filters["outcomes"])
    return paged(
        conn,
        columns=LOG_COLUMNS,
        table="skill_logs",
        where=where,
        params=params,
        order_by="created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def stats(conn: Conn, *, account_id: UUID, skill_name: str) -> StatsRow:
    row = (
        conn.cursor(row_factory=class_row(StatsRow))
        .execute(
            """SELECT count(*) AS total_runs,
                      count(*) FILTER (WHERE was_triggered) AS triggered_runs,
                      count(*) FILTER (WHERE outcome = 'success') AS success,
                      count(*) FILTER (WHERE outcome = 'failure') AS failure,
                      count(*) FILTER (WHERE outcome = 'partial') AS partial,
                      count(*) FILTER (WHERE outcome = 'user_corrected') AS user_corrected,
                      avg(duration_ms)::double precision AS avg_duration_ms,
                      max(created_at) AS last_run_at
               FROM skill_logs WHERE account_id = %(account_id)s AND skill_name = %(skill_name)s""",
            {"account_id": account_id, "skill_name": skill_name},
        )
        .fetchone()
    )
    assert row is not None
    return row


def stats_by_version(conn: Conn, *, account_id: UUID, skill_name: str) -> list[VersionStatsRow]:
    return (
        conn.cursor(row_factory=class_row(VersionStatsRow))
        .execute(
            """SELECT skill_version_id, skill_version, count(*) AS total_runs,
                      count(*) FILTER (WHERE outcome = 'success') AS success
               FROM skill_logs WHERE account_id = %(account_id)s AND skill_name = %(skill_name)s
               GROUP BY skill_version_id, skill_version
               ORDER BY max(created_at) DESC, skill_version""",
            {"account_id": account_id, "skill_name": skill_name},
        )
        .fetchall()
    )
