"""SQL of compiled artifacts (migrations/0060): a version's compile inputs (its body, its package files), the
artifact or the recorded compile failure, and the rule that an artifact is current."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.skills.compile import compiler
from agentmate.skills.repository import VERSION_COLUMNS, VersionRow

ARTIFACT_COLUMNS = (
    "skill_version_id, compiler_name, compiler_version, input_package_hash, artifact_hash, card, instructions, "
    "frontmatter, resource_manifest, knowledge_contract, knowledge_contract_identity, compiled_at"
)


@dataclass(frozen=True, slots=True)
class VersionContext(VersionRow):
    """A version with its body, and its source's package_path and name (None for direct publishes)."""

    package_path: str | None
    source_name: str | None


class FileRow(NamedTuple):
    """A package file of a revision with its text snapshot (None for binary)."""

    id: UUID
    account_id: UUID
    revision_id: UUID
    path: str
    sha256: str
    size_bytes: int
    mime_type: str
    is_text: bool
    content: str | None


class ArtifactRow(NamedTuple):
    skill_version_id: UUID
    compiler_name: str
    compiler_version: str
    input_package_hash: str
    artifact_hash: str
    card: dict[str, Any]
    instructions: str
    frontmatter: dict[str, Any]
    resource_manifest: list[dict[str, Any]]
    knowledge_contract: dict[str, Any] | None
    knowledge_contract_identity: str | None
    compiled_at: datetime


def version_context(conn: Conn, *, account_id: UUID, version_id: UUID) -> VersionContext | None:
    """A version with its body and its source's package_path (None for direct publishes)."""
    return (
        conn.cursor(row_factory=class_row(VersionContext))
        .execute(
            f"""SELECT v.{VERSION_COLUMNS.replace(", ", ", v.")}, s.package_path, s.name AS source_name
            FROM skill_versions v LEFT JOIN skill_sources s ON s.account_id = v.account_id AND s.id = v.source_id
            WHERE v.account_id = %(account_id)s AND v.id = %(version_id)s""",
            {"account_id": account_id, "version_id": version_id},
        )
        .fetchone()
    )


def revision_files(conn: Conn, *, account_id: UUID, revision_id: UUID) -> list[FileRow]:
    """Every file of a revision with its content (for compile and quality runs)."""
    return (
        conn.cursor(row_factory=class_row(FileRow))
        .execute(
            """SELECT id, account_id, revision_id, path, sha256, size_bytes, mime_type, is_text, content
           FROM skill_revision_files WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s ORDER BY path""",
            {"account_id": account_id, "revision_id": revision_id},
        )
        .fetchall()
    )


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
        "DELETE FROM skill_compile_failures WHERE account_id = %(account_id)s AND skill_version_id = %(version_id)s",
        {"account_id": account_id, "version_id": version_id},
    )


def record_compile_failure(conn: Conn, *, account_id: UUID, version_id: UUID, problems: list[str]) -> None:
    """A failed compile leaves no artifact (the catalog shows a basic card) and records why."""
    conn.execute(
        "DELETE FROM skill_compiled_artifacts WHERE account_id = %(account_id)s AND skill_version_id = %(version_id)s",
        {"account_id": account_id, "version_id": version_id},
    )
    conn.execute(
        """INSERT INTO skill_compile_failures (skill_version_id, account_id, compiler_version, problems)
           VALUES (%(version_id)s, %(account_id)s, %(compiler_version)s, %(problems)s)
           ON CONFLICT (skill_version_id) DO UPDATE SET compiler_version = EXCLUDED.compiler_version,
               problems = EXCLUDED.problems, failed_at = now()""",
        {
            "version_id": version_id,
            "account_id": account_id,
            "compiler_version": compiler.COMPILER_VERSION,
            "problems": Jsonb([p[:500] for p in problems[:50]]),
        },
    )


def artifact(conn: Conn, *, account_id: UUID, version_id: UUID) -> ArtifactRow | None:
    return (
        conn.cursor(row_factory=class_row(ArtifactRow))
        .execute(
            f"SELECT {ARTIFACT_COLUMNS} FROM skill_compiled_artifacts WHERE account_id = %(account_id)s AND skill_version_id = %(version_id)s",
            {"account_id": account_id, "version_id": version_id},
        )
        .fetchone()
    )


# The artifact counts as current only for this compiler version and the version's own package identity.
CURRENT = "a.compiler_version = %(cv)s AND a.input_package_hash = coalesce(v.package_hash, v.content_hash)"
