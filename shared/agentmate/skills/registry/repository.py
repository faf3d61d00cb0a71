"""SQL of the registry's sources (migrations/0060): versions bound to package revisions and source deletion.
Package sources/revisions/files go through ``agentmate.packages.store``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.rows import class_row

from agentmate.core.db import Conn
from agentmate.packages.store import PackageStore, PackageTables
from agentmate.skills.repository import VERSION_COLUMNS, VersionRow

STORE = PackageStore(PackageTables("skill_sources", "skill_source_revisions", "skill_revision_files"))


def version_for_revision(conn: Conn, *, account_id: UUID, revision_id: UUID) -> VersionRow | None:
    return (
        conn.cursor(row_factory=class_row(VersionRow))
        .execute(
            f"SELECT {VERSION_COLUMNS} FROM skill_versions "
            "WHERE account_id = %(account_id)s AND source_revision_id = %(revision_id)s",
            {"account_id": account_id, "revision_id": revision_id},
        )
        .fetchone()
    )


def insert_source_version(
    conn: Conn, *, account_id: UUID, user_id: UUID | None, key_id: UUID | None, data: dict[str, Any]
) -> VersionRow:
    row = (
        conn.cursor(row_factory=class_row(VersionRow))
        .execute(
            f"""INSERT INTO skill_versions (account_id, user_id, key_id, source_id, source_revision_id, skill_name,
                                            version, content, content_hash, package_hash, change_summary)
                VALUES (%(a)s, %(u)s, %(k)s, %(source_id)s, %(revision_id)s, %(skill_name)s, %(version)s,
                        %(content)s, %(content_hash)s, %(package_hash)s, %(change_summary)s)
                RETURNING {VERSION_COLUMNS}""",
            {**data, "a": account_id, "u": user_id, "k": key_id},
        )
        .fetchone()
    )
    assert row is not None
    return row


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
