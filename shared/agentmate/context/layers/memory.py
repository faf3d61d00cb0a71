"""MEMORY: active durable memories from hybrid search (memory's own ranking, feedback included), optionally in
one scope. Titles follow the derived-label rule of prior-art §4.5."""

from __future__ import annotations

from agentmate.context.budget import derived_title
from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    PackRequest,
    Principal,
    Retrieval,
    TenantTransactions,
)
from agentmate.memory.schemas import SearchRequest
from agentmate.memory.service import ranking


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    found = ranking.search(
        db,
        retrieval,
        principal,
        SearchRequest(
            query=req.search_text,
            top_k=req.top_k,
            scope_type=req.memory_scope_type,
            scope_key=req.memory_scope_key,
            status="active",
        ),
    )
    items = [
        Candidate(
            source="memory",
            ref=f"memory_entry:{hit.entry.id}",
            title=derived_title(hit.entry.memory_type, hit.entry.title, hit.entry.summary, hit.entry.content),
            content=hit.entry.content,
            score=hit.score,
        )
        for hit in found.items
    ]
    out = Candidates(items=items)
    if found.degraded:
        out.note = "search degraded: " + "; ".join(f"{d.leg} leg: {d.reason}" for d in found.degraded)
        out.warn = True
    elif found.nearest_scopes is not None:  # a scoped search that found nothing: maybe the key is off
        near = ", ".join(f"{s.scope_type}:{s.scope_key}" for s in found.nearest_scopes)
        out.note = (
            f"no memories in scope {req.memory_scope_type}:{req.memory_scope_key} (scope keys are exact)"
            + (f"; nearest existing scopes: {near}" if near else "")
        )
        out.warn = True
    return out
