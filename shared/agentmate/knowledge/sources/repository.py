"""SQL of the knowledge registry K1 tables (migrations/0055): the package tables plus the revision manifest."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.knowledge.manifest import MANIFEST_PATH
from agentmate.knowledge.search import repository as index_repository  # noqa: F401  (declares the chunk index tables' constraints)
from agentmate.knowledge.sources.schemas import KnowledgeDocument
from agentmate.packages.store import FILE_META_COLUMNS, PackageStore, PackageTables, template_constraints

TABLES = PackageTables("knowledge_sources", "knowledge_source_revisions", "knowledge_documents")
STORE = PackageStore(TABLES)
CONSTRAINTS = constraints(
    {
        **template_constraints(TABLES),
        "knowledge_source_revisions_manifest_check": ("manifest", "must be a mapping"),
    }
)


def set_manifest(conn: Conn, *, account_id: UUID, revision_id: UUID, manifest: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE knowledge_source_revisions SET manifest = %(manifest)s WHERE account_id = %(account_id)s AND id = %(revision_id)s",
        {"manifest": Jsonb(manifest), "account_id": account_id, "revision_id": revision_id},
    )


def manifest(conn: Conn, *, account_id: UUID, revision_id: UUID) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT manifest FROM knowledge_source_revisions WHERE account_id = %(account_id)s AND id = %(revision_id)s",
        {"account_id": account_id, "revision_id": revision_id},
    ).fetchone()
    return row["manifest"] if row else None


def list_documents(
    conn: Conn, *, account_id: UUID, revision_id: UUID, limit: int, offset: int
) -> tuple[list[KnowledgeDocument], int]:
    rows, total = paged(
        conn,
        columns=FILE_META_COLUMNS,
        table="knowledge_documents",
        where=["account_id = %(a)s", "revision_id = %(r)s", "path <> %(m)s"],
        params={"a": account_id, "r": revision_id, "m": MANIFEST_PATH},
        order_by='path COLLATE "C"',
        limit=limit,
        offset=offset,
    )
    return [KnowledgeDocument.model_validate(r) for r in rows], total
