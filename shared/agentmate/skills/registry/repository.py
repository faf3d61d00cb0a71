"""SQL of the skills registry (migrations/0060): versions bound to package revisions, compiled artifacts, compile
failures, the catalog and quality runs. Package sources/revisions/files go through ``agentmate.packages.store``."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.sql import like_pattern, paged
from agentmate.packages.store import PackageStore, PackageTables
from agentmate.skills.compile import compiler
from agentmate.skills.repository import SUMMARY_COLUMNS, VERSION_COLUMNS

STORE = PackageStore(PackageTables("skill_sources", "skill_source_revisions", "skill_revision_files"))

ARTIFACT_COLUMNS = (
    "skill_version_id, compiler_name, compiler_version, input_package_hash, artifact_hash, card, instructions, "
    "frontmatter, resource_manifest, knowledge_contract, knowledge_contract_identity, compiled_at"
)
RUN_SUMMARY_COLUMNS = (
    "id, skill_version_id, baseline_version_id, skill_name, engine_version, checkset_version, input_package_hash, "
    "baseline_package_hash, telemetry_cutoff, status, summary, created_at"
)


# -- versions ----------------------------------------------------------------------------------------------------


def version_for_revision(conn: Conn, *, account_id: UUID, revision_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM skill_versions WHERE account_id = %s AND source_revision_id = %s",
        (account_id, revision_id),
    ).fetchone()


def insert_source_version(
    conn: Conn, *, account_id: UUID, user_id: UUID | None, key_id: UUID | None, data: dict[str, Any]
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO skill_versions (account_id, user_id, key_id, source_id, source_revision_id, skill_name,
                                        version, content, content_hash, package_hash, change_summary)
            VALUES (%(a)s, %(u)s, %(k)s, %(source_id)s, %(revision_id)s, %(skill_name)s, %(version)s, %(content)s,
                    %(content_hash)s, %(package_hash)s, %(change_summary)s)
            RETURNING {VERSION_COLUMNS}""",
        {**data, "a": account_id, "u": user_id, "k": key_id},
    ).fetchone()
    assert row is not None
    return row


def version_context(conn: Conn, *, account_id: UUID, version_id: UUID) -> dict[str, Any] | None:
    """A version with its body and its source's package_path (None for direct publishes)."""
    return conn.execute(
        f"""SELECT v.{VERSION_COLUMNS.replace(", ", ", v.")}, s.package_path, s.name AS source_name
            FROM skill_versions v LEFT JOIN skill_sources s ON s.account_id = v.account_id AND s.id = v.source_id
            WHERE v.account_id = %s AND v.id = %s""",
        (account_id, version_id),
    ).fetchone()


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


def revision_files(conn: Conn, *, account_id: UUID, revision_id: UUID) -> list[dict[str, Any]]:
    """Every file of a revision with its content (for compile and quality runs)."""
    return conn.execute(
        """SELECT id, account_id, revision_id, path, sha256, size_bytes, mime_type, is_text, content
           FROM skill_revision_files WHERE account_id = %s AND revision_id = %s ORDER BY path""",
        (account_id, revision_id),
    ).fetchall()


def list_revision_files(
    conn: Conn, *, account_id: UUID, revision_id: UUID, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    return paged(
        conn,
        columns="id, revision_id, path, sha256, size_bytes, mime_type, is_text",
        table="skill_revision_files",
        where=["account_id = %(a)s", "revision_id = %(r)s"],
        params={"a": account_id, "r": revision_id},
        order_by="path, id",
        limit=limit,
        offset=offset,
    )


def revision_file(conn: Conn, *, account_id: UUID, revision_id: UUID, file_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        """SELECT id, revision_id, path, sha256, size_bytes, mime_type, is_text, content
           FROM skill_revision_files WHERE account_id = %s AND revision_id = %s AND id = %s""",
        (account_id, revision_id, file_id),
    ).fetchone()


def delete_source(conn: Conn, *, account_id: UUID, source_id: UUID) -> bool:
    """Delete a source (its revisions and versions cascade). A version still referenced by a version-bound log,
    a quality run or a knowledge resolution run makes the NO ACTION foreign key refuse it: that is a 409, nothing
    is deleted."""
    return STORE.delete_source(
        conn,
        account_id=account_id,
        source_id=source_id,
        referenced=(
            "a version of this source is referenced by a skill log, a quality run or a knowledge resolution run (audit "
            "rows are append-only); the source cannot be deleted"
        ),
    )


# -- artifacts ---------------------------------------------------------------------------------------------------


def upsert_artifact(conn: Conn, *, account_id: UUID, version_id: UUID, artifact: compiler.Artifact) -> None:
    conn.execute(
        """INSERT INTO skill_compiled_artifacts (skill_version_id, account_id, compiler_name, compiler_version,
                   input_package_hash, artifact_hash, card, instructions, frontmatter, resource_manifest,
                   knowledge_contract, knowledge_contract_identity)
           VALUES (%(v)s, %(a)s, %(cn)s, %(cv)s, %(h)s, %(ah)s, %(card)s, %(ins)s, %(fm)s, %(man)s, %(kc)s, %(kci)s)
           ON CONFLICT (skill_version_id) DO UPDATE SET compiler_name = EXCLUDED.compiler_name,
               compiler_version = EXCLUDED.compiler_version, input_package_hash = EXCLUDED.input_package_hash,
               artifact_hash = EXCLUDED.artifact_hash, card = EXCLUDED.card, instructions = EXCLUDED.instructions,
               frontmatter = EXCLUDED.frontmatter, resource_manifest = EXCLUDED.resource_manifest,
               knowledge_contract = EXCLUDED.knowledge_contract,
               knowledge_contract_identity = EXCLUDED.knowledge_contract_identity, compiled_at = now()
           WHERE skill_compiled_artifacts.artifact_hash IS DISTINCT FROM EXCLUDED.artifact_hash
              OR skill_compiled_artifacts.compiler_version IS DISTINCT FROM EXCLUDED.compiler_version""",
        {
            "v": version_id,
            "a": account_id,
            "cn": artifact.compiler_name,
            "cv": artifact.compiler_version,
            "h": artifact.input_package_hash,
            "ah": artifact.artifact_hash,
            "card": Jsonb(artifact.card),
            "ins": artifact.instructions,
            "fm": Jsonb(artifact.frontmatter),
            "man": Jsonb(artifact.resource_manifest),
            "kc": Jsonb(artifact.knowledge_contract) if artifact.knowledge_contract is not None else None,
            "kci": artifact.knowledge_contract_identity,
        },
    )
    conn.execute(
        "DELETE FROM skill_compile_failures WHERE account_id = %s AND skill_version_id = %s",
        (account_id, version_id),
    )


def record_compile_failure(conn: Conn, *, account_id: UUID, version_id: UUID, problems: list[str]) -> None:
    """A failed compile leaves no artifact (the catalog shows a basic card) and records why."""
    conn.execute(
        "DELETE FROM skill_compiled_artifacts WHERE account_id = %s AND skill_version_id = %s",
        (account_id, version_id),
    )
    conn.execute(
        """INSERT INTO skill_compile_failures (skill_version_id, account_id, compiler_version, problems)
           VALUES (%s, %s, %s, %s)
           ON CONFLICT (skill_version_id) DO UPDATE SET compiler_version = EXCLUDED.compiler_version,
               problems = EXCLUDED.problems, failed_at = now()""",
        (version_id, account_id, compiler.COMPILER_VERSION, Jsonb([p[:500] for p in problems[:50]])),
    )


def artifact(conn: Conn, *, account_id: UUID, version_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        f"SELECT {ARTIFACT_COLUMNS} FROM skill_compiled_artifacts WHERE account_id = %s AND skill_version_id = %s",
        (account_id, version_id),
    ).fetchone()


# The artifact counts as current only for this compiler version and the version's own package identity.
CURRENT = "a.compiler_version = %(cv)s AND a.input_package_hash = coalesce(v.package_hash, v.content_hash)"


def catalog(
    conn: Conn, *, account_id: UUID, query: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    params: dict[str, Any] = {"a": account_id, "cv": compiler.COMPILER_VERSION}
    where = ["v.account_id = %(a)s", "v.is_active"]
    if query:
        params["q"] = like_pattern(query)
        where.append(
            "(v.skill_name ILIKE %(q)s OR a.card->>'name' ILIKE %(q)s OR a.card->>'description' ILIKE %(q)s)"
        )
    table = (
        f"skill_versions v LEFT JOIN skill_compiled_artifacts a ON a.account_id = v.account_id "
        f"AND a.skill_version_id = v.id AND {CURRENT}"
    )
    return paged(
        conn,
        columns="v.id, v.skill_name, v.version, v.source_id, v.package_hash, a.card",
        table=table,
        where=where,
        params=params,
        order_by="v.skill_name, v.id",
        limit=limit,
        offset=offset,
    )


def cards(
    conn: Conn,
    *,
    account_id: UUID,
    version_ids: list[UUID],
    with_instructions: bool,
    active_only: bool = True,
) -> dict[UUID, dict[str, Any]]:
    """Versions (active only by default) with their current card and, optionally, L1 instructions.

    Driven by the id list (one primary-key lookup each, LATERAL ... LIMIT 1 so it is never flattened): the cost
    is the number of hits, whatever the account's version count and whether the statistics are fresh (a plan
    from stale statistics scanned every active version of the account)."""
    extra = ", a.instructions, v.content" if with_instructions else ""
    rows = conn.execute(
        f"""SELECT v.id, v.skill_name, v.version, v.source_id, v.package_hash, a.card{extra}
            FROM unnest(%(ids)s::uuid[]) AS w(id)
            CROSS JOIN LATERAL (
                SELECT v.id, v.account_id, v.skill_name, v.version, v.source_id, v.package_hash, v.content_hash,
                       v.content, v.is_active
                FROM skill_versions v WHERE v.id = w.id AND v.account_id = %(a)s LIMIT 1) AS v
            LEFT JOIN skill_compiled_artifacts a ON a.account_id = v.account_id
                 AND a.skill_version_id = v.id AND {CURRENT}
            {"WHERE v.is_active" if active_only else ""}""",
        {"a": account_id, "ids": version_ids, "cv": compiler.COMPILER_VERSION},
    ).fetchall()
    return {r["id"]: r for r in rows}


# -- quality runs ------------------------------------------------------------------------------------------------


def telemetry_logs(
    conn: Conn, *, account_id: UUID, version_id: UUID, cutoff: datetime, limit: int
) -> list[dict[str, Any]]:
    return conn.execute(
        """SELECT id, skill_version_id, created_at, was_triggered, outcome FROM skill_logs
           WHERE account_id = %s AND skill_version_id = %s AND created_at <= %s
           ORDER BY created_at DESC, id DESC LIMIT %s""",
        (account_id, version_id, cutoff, limit),
    ).fetchall()


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
        f"SELECT {RUN_SUMMARY_COLUMNS}, report FROM skill_quality_runs WHERE account_id = %s AND id = %s",
        (account_id, run_id),
    ).fetchone()


__all__ = ["STORE", "SUMMARY_COLUMNS"]
