"""K0 catalog: one card per knowledge source with an active revision (spec/001 "GET /api/knowledge/catalog").

A card is the revision's manifest metadata (the singular ``language`` folded into ``languages``), the source's
derived domain, its document count, package hash and chunk index status. Discovery (``knowledge.discover``)
reads every card with ``cards``; the route pages them with an ILIKE name/description filter and an exact domain
filter, ordered by name (case-insensitive) then source id, so pages are stable.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.pagination import PageParams
from agentmate.knowledge.catalog import repository
from agentmate.knowledge.catalog.repository import CardRow
from agentmate.knowledge.catalog.schemas import (
    IndexStatus,
    KnowledgeCatalog,
    KnowledgeCatalogCard,
    KnowledgeDomainCount,
)
from agentmate.packages.service import Actor
from agentmate.retrieval import service as retrieval

# The status is the active revision's last index run (knowledge_revision_index, migration 0056); none = not indexed.
_NO_INDEX: IndexStatus = "not_indexed"


def fold_languages(manifest: dict[str, Any]) -> list[str]:
    """``languages`` with the singular ``language`` appended unless already listed (case-insensitively)."""
    langs = list(manifest.get("languages") or [])
    single = manifest.get("language")
    if single and single.lower() not in {v.lower() for v in langs}:
        langs.append(single)
    return langs


def card(row: CardRow, waiting: int = 0) -> KnowledgeCatalogCard:
    m = row["manifest"] or {}
    return KnowledgeCatalogCard(
        source_id=row["source_id"],
        source_name=row["source_name"],
        revision_id=row["revision_id"],
        name=m.get("name") or row["source_name"],
        description=m.get("description"),
        profile=m.get("profile"),
        language=m.get("language"),
        citation_policy=m.get("citation_policy"),
        capabilities=list(m.get("capabilities") or []),
        languages=fold_languages(m),
        domain=row["domain"],
        document_count=row["document_count"],
        package_hash=row["package_hash"],
        index_status=row.get("index_status") or _NO_INDEX,
        waiting_chunks=waiting,
    )


def _cards(conn: Conn, account_id: UUID, rows: list[CardRow]) -> list[KnowledgeCatalogCard]:
    """The rows' cards with each source's chunks waiting for their vector (one count over the account's waiting
    rows, which are none outside an outage)."""
    waiting = retrieval.waiting_by(
        conn,
        account_id,
        namespace="knowledge",  # knowledge.search.index.NAMESPACE (the catalog does not import the indexer)
        key="source_id",
        values=[str(r["source_id"]) for r in rows],
    )
    return [card(r, waiting.get(str(r["source_id"]), 0)) for r in rows]


def cards(conn: Conn, *, account_id: UUID) -> list[KnowledgeCatalogCard]:
    """Every card of the account in catalog order, inside the caller's tenant transaction."""
    return _cards(conn, account_id, repository.catalog_all(conn, account_id=account_id))


def catalog(
    db: TenantTransactions,
    actor: Actor,
    page: PageParams,
    query: str | None = None,
    domain: str | None = None,
) -> KnowledgeCatalog:
    with db.tenant(actor.account_id) as conn:
        rows, total = repository.catalog_page(
            conn,
            account_id=actor.account_id,
            query=query,
            domain=domain,
            limit=page.limit,
            offset=page.offset,
        )
        roster = repository.domain_roster(conn, account_id=actor.account_id)
        items = _cards(conn, actor.account_id, rows)
    return KnowledgeCatalog(
        items=items,
        total=total,
        limit=page.limit,
        offset=page.offset,
        domains=[KnowledgeDomainCount(**r) for r in roster],
    )
