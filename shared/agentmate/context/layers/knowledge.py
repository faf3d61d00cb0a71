"""KNOWLEDGE: knowledge search (top_k, ``knowledge_domain``, ``knowledge_source_ids``; the domain only narrows)
with each chunk's body as evidence, cited ``path # heading_path`` (prior-art §4.5). A failed search leg is a
note (echoed in warnings) beside the other leg's hits; nothing indexed or nothing matching is an empty layer with a
note. A searched source whose chunk index lags its active revision (a push since the last index run) is listed in
the layer's ``stale`` and named in a note echoed in warnings: the pack never serves older text silently. (Each pack's search is logged in retrieval_queries like any other; its query_id is not in the pack, which
must pack the same state to the same bytes.)"""

from __future__ import annotations

from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    PackRequest,
    PackStaleSource,
    Principal,
    Retrieval,
    TenantTransactions,
)
from agentmate.context.readmodels import knowledge


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    found = knowledge.evidence(
        db,
        retrieval,
        principal,
        query=req.search_text,
        top_k=req.top_k,
        domain=req.knowledge_domain,
        source_ids=req.knowledge_source_ids,
    )
    items = [
        Candidate(
            source="knowledge",
            ref=f"knowledge_chunk:{hit.document_id}/{hit.chunk_key}",
            title=f"{hit.knowledge_base} · {hit.heading_path or hit.path}",
            content=hit.content if hit.content is not None else hit.snippet,
            citation=hit.citation,
            score=hit.score,
        )
        for hit in found.items
    ]
    parts = []
    if found.degraded:
        parts.append("search degraded: " + "; ".join(f"{d.leg} leg: {d.reason}" for d in found.degraded))
    if found.stale:
        names = ", ".join(s.name for s in found.stale)
        parts.append(
            f"stale: the chunk index of {names} does not reflect the active revision (index it: "
            "POST /api/knowledge/index, MCP knowledge_index_active)"
        )
    if not items:
        parts.append(found.note or "no indexed knowledge chunk matched the query")
    stale = [PackStaleSource.model_validate(s.model_dump()) for s in found.stale] or None
    return Candidates(
        items=items, note="; ".join(parts) or None, warn=bool(found.degraded or stale), stale=stale
    )
