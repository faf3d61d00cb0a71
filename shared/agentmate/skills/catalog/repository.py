"""SQL of the catalog reads: active versions with their current card (L0), a revision's package files (L2)."""

from __future__ import annotations

from typing import Any, NamedTuple
from uuid import UUID

from psycopg.rows import class_row

from agentmate.core.db import Conn
from agentmate.core.sql import like_pattern, paged
from agentmate.skills.compile import compiler
from agentmate.skills.compile.repository import CURRENT, FileRow


class CardRow(NamedTuple):
    """A version with its current L0 card (None when no current artifact exists) and, when asked for, its L1
    instructions and stored body."""

    id: UUID
    skill_name: str
    version: str
    source_id: UUID | None
    package_hash: str | None
    card: dict[str, Any] | None
    instructions: str | None = None
    content: str | None = None


def catalog(
    conn: Conn, *, account_id: UUID, query: str | None, limit: int, offset: int
) -> tuple[list[CardRow], int]:
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
    rows, total = paged(
        conn,
        columns="v.id, v.skill_name, v.version, v.source_id, v.package_hash, a.card",
        table=table,
        where=where,
        params=params,
        order_by="v.skill_name, v.id",
        limit=limit,
        offset=offset,
    )
    return [CardRow(**r) for r in rows], total


def cards(
    conn: Conn,
    *,
    account_id: UUID,
    version_ids: list[UUID],
    with_instructions: bool,
    active_only: bool = True,
) -> dict[UUID, CardRow]:
    """Versions (active only by default) with their current card and, optionally, L1 instructions.

    Driven by the id list (one primary-key lookup each, LATERAL ... LIMIT 1 so it is never flattened): the cost
    is the number of hits, whatever the account's version count and whether the statistics are fresh (a plan
    from stale statistics scanned every active version of the account)."""
    extra = ", a.instructions, v.content" if with_instructions else ""
    rows = (
        conn.cursor(row_factory=class_row(CardRow))
        .execute(
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
        )
        .fetchall()
    )
    return {r.id: r for r in rows}


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


def revision_file(conn: Conn, *, account_id: UUID, revision_id: UUID, file_id: UUID) -> FileRow | None:
    return (
        conn.cursor(row_factory=class_row(FileRow))
        .execute(
            """SELECT id, account_id, revision_id, path, sha256, size_bytes, mime_type, is_text, content
           FROM skill_revision_files WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND id = %(file_id)s""",
            {"account_id": account_id, "revision_id": revision_id, "file_id": file_id},
        )
        .fetchone()
    )
