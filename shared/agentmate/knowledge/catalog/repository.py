"""SQL of the K0 catalog: the sources with an active revision, joined to the revision's manifest and its chunk
index state (the knowledge_sources/knowledge_source_revisions tables belong to ``knowledge.sources``)."""

from __future__ import annotations

from typing import Any, TypedDict, cast
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.sql import like_pattern, paged
from agentmate.knowledge.catalog.schemas import IndexStatus


class ManifestCard(TypedDict):
    """A source with its active revision and that revision's manifest (discovery reads just this)."""

    source_id: UUID
    source_name: str
    domain: str | None
    revision_id: UUID
    package_hash: str
    manifest: dict[str, Any] | None


class CardRow(ManifestCard):
    document_count: int
    index_status: IndexStatus | None  # NULL: the active revision was never indexed


class DomainCount(TypedDict):
    domain: str | None
    collections: int


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
) -> tuple[list[CardRow], int]:
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
    rows, total = paged(
        conn,
        columns=_CARD_COLUMNS,
        table=_CARDS,
        where=where,
        params=params,
        order_by=_CARD_ORDER,
        limit=limit,
        offset=offset,
    )
    return cast(list[CardRow], rows), total


def catalog_all(conn: Conn, *, account_id: UUID) -> list[CardRow]:
    """Every card row of the account, in catalog order (discovery reads the whole catalog)."""
    rows = conn.execute(
        f"SELECT {_CARD_COLUMNS} FROM {_CARDS} WHERE s.account_id = %(account_id)s ORDER BY {_CARD_ORDER}",
        {"account_id": account_id},
    ).fetchall()
    return cast(list[CardRow], rows)


def domain_roster(conn: Conn, *, account_id: UUID) -> list[DomainCount]:
    """Collections per owning domain (null last), over every card of the account."""
    rows = conn.execute(
        f"""SELECT s.domain, count(*) AS collections FROM {_CARDS} WHERE s.account_id = %(account_id)s
            GROUP BY s.domain ORDER BY s.domain NULLS LAST""",
        {"account_id": account_id},
    ).fetchall()
    return cast(list[DomainCount], rows)
