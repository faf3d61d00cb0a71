"""SQL of the knowledge registry K1 tables (migrations/0055): the package tables plus the revision manifest."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import like_pattern, paged
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
        "UPDATE knowledge_source_revisions SET manifest = %s WHERE account_id = %s AND id = %s",
        (Jsonb(manifest), account_id, revision_id),
    )


def manifest(conn: Conn, *, account_id: UUID, revision_id: UUID) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT manifest FROM knowledge_source_revisions WHERE account_id = %s AND id = %s",
        (account_id, revision_id),
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


# -- K0 catalog: sources with an active revision, joined to the revision's manifest ------------------------------

_CARD_COLUMNS = (
    "s.id AS source_id, s.name AS source_name, s.domain, r.id AS revision_id, r.package_hash, r.manifest, "
    "r.file_count - 1 AS document_count, "  # every revision holds KNOWLEDGE.yaml, which is not a document
    "ix.status AS index_status"  # the last index run of the active revision (NULL: never indexed)
)
_CARDS = (
    "knowledge_sources s JOIN knowledge_source_revisions r "
    "ON r.account_id = s.account_id AND r.id = s.active_revision_id "
    "LEFT JOIN knowledge_revision_index ix ON ix.account_id = s.account_id AND ix.revision_id = r.id"
)
_CARD_ORDER = "lower(COALESCE(r.manifest->>'name', s.name)), s.id"


def catalog_page(
    conn: Conn, *, account_id: UUID, query: str | None, domain: str | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    where: list[str] = ["s.account_id = %(a)s"]
    params: dict[str, Any] = {"a": account_id}
    if query is not None:
        where.append(
            "(r.manifest->>'name' ILIKE %(query)s OR r.manifest->>'description' ILIKE %(query)s "
            "OR s.name ILIKE %(query)s)"
        )
        params["query"] = like_pattern(query)
    if domain is not None:
        where.append("s.domain = %(domain)s")
        params["domain"] = domain
    return paged(
        conn,
        columns=_CARD_COLUMNS,
        table=_CARDS,
        where=where,
        params=params,
        order_by=_CARD_ORDER,
        limit=limit,
        offset=offset,
    )


def catalog_all(conn: Conn, *, account_id: UUID) -> list[dict[str, Any]]:
    """Every card row of the account, in catalog order (discovery reads the whole catalog)."""
    return conn.execute(
        f"SELECT {_CARD_COLUMNS} FROM {_CARDS} WHERE s.account_id = %s ORDER BY {_CARD_ORDER}", (account_id,)
    ).fetchall()


# What discovery reads of every card, in no order (scoring sorts; the fingerprint sorts its own list): the
# manifest whole (one JSON decode per card was cheaper than extracting its fields: 3.9 vs 4.5 ms at 200 cards, and
# unnesting its arrays into text[] cost the server more), and the active revision by its primary key per source (LATERAL ... LIMIT 1 is never flattened into a join: without statistics,
# e.g. for a freshly grown account, the planner's nested loop over every revision of the account cost 32 ms at
# 200 cards instead of 0.5 ms; bench/knowledge_discover_bench.py).
_DISCOVERY_CARDS = """
    SELECT s.id AS source_id, s.name AS source_name, s.domain, r.id AS revision_id, r.package_hash, r.manifest
    FROM knowledge_sources s
    CROSS JOIN LATERAL (SELECT x.id, x.package_hash, x.manifest FROM knowledge_source_revisions x
                        WHERE x.id = s.active_revision_id AND x.account_id = s.account_id LIMIT 1) r
    WHERE s.account_id = %s AND s.active_revision_id IS NOT NULL"""


def discovery_cards(conn: Conn, *, account_id: UUID) -> Any:
    """Every card of the account as discovery matches it (see _DISCOVERY_CARDS). Returns the cursor: in pipeline
    mode the statement is sent now and its rows are read with ``fetchall()`` later, after other statements."""
    return conn.execute(_DISCOVERY_CARDS, (account_id,))


def domain_roster(conn: Conn, *, account_id: UUID) -> list[dict[str, Any]]:
    """Collections per owning domain (null last), over every card of the account."""
    return conn.execute(
        f"""SELECT s.domain, count(*) AS collections FROM {_CARDS} WHERE s.account_id = %s
            GROUP BY s.domain ORDER BY s.domain NULLS LAST""",
        (account_id,),
    ).fetchall()
