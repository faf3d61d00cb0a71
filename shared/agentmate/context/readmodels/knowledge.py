"""Read model: knowledge search for the context pack's KNOWLEDGE layer (chunk bodies included, so the pack can fit
them to its budget). The only module of the context package that reads the knowledge domain."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.core.principal import Principal
from agentmate.knowledge.search import service as search
from agentmate.knowledge.search.schemas import MAX_QUERY_CHARS, KnowledgeSearchRequest, KnowledgeSearchResult
from agentmate.retrieval.service import Retrieval


def evidence(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    *,
    query: str,
    top_k: int,
    domain: str | None,
    source_ids: list[UUID],
) -> KnowledgeSearchResult:
    """Knowledge search hits with their bodies (the query cut to knowledge search's 500 characters)."""
    return search.search(
        db,
        retrieval,
        principal,
        KnowledgeSearchRequest(
            query=query[:MAX_QUERY_CHARS],
            top_k=top_k,
            domain=domain,
            source_ids=source_ids,
            include_content=True,
        ),
    )
