"""Hybrid (lexical + vector) search over durable memories, ranked with recorded usefulness."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import FieldError, ValidationFailed
from agentmate.core.observability import counted
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.schemas import (
    Degraded,
    EntryDetail,
    Evidence,
    Indexing,
    SearchItem,
    SearchRequest,
    SearchResponse,
)
from agentmate.memory.service import scopes
from agentmate.memory.service.projection import NAMESPACE, SOURCE_TYPE
from agentmate.retrieval.service import Hit, Query, Retrieval, SearchResult

FEEDBACK_WEIGHT = 0.15
FEEDBACK_PRIOR = 3


def feedback_adjustment(useful: int, harmful: int) -> float:
    """0.15 * (u - h) / (u + h + 3): bounded to ±0.15 and weighted by how much evidence exists (§4.3)."""
    return FEEDBACK_WEIGHT * (useful - harmful) / (useful + harmful + FEEDBACK_PRIOR)


def _currently_valid(entry: dict[str, Any], now: datetime) -> bool:
    if entry["valid_from"] > now:
        return False
    if entry["valid_to"] is not None and entry["valid_to"] <= now:
        return False
    return not (entry["ttl_at"] is not None and entry["ttl_at"] <= now)


@counted("MemorySearch")
def search(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, body: SearchRequest
) -> SearchResponse:
    """Hybrid (lexical + vector) search over durable memories, nudged by recorded usefulness."""
    if body.scope_key is not None and body.scope_type is None:
        raise ValidationFailed(
            [
                FieldError("scope_key", "requires scope_type"),
                FieldError("scope_type", "required when scope_key is sent"),
            ]
        )
    metadata: dict[str, Any] = {"status": body.status}
    if body.scope_type is not None:
        metadata["scope_type"] = body.scope_type
    if body.scope_key is not None:
        metadata["scope_key"] = body.scope_key
    if body.memory_type is not None:
        metadata["memory_type"] = body.memory_type
    query = Query(
        namespace=NAMESPACE,
        text=body.query,
        top_k=min(body.top_k * 3, 50),
        source_type=SOURCE_TYPE,
        metadata=metadata,
    )

    def finish(conn: Conn, result: SearchResult) -> SearchResponse:
        hits = [(h, UUID(h.document["source_id"])) for h in result.hits]
        entries = repo.entries_by_ids(conn, account_id=principal.account_id, ids=[i for _, i in hits])
        now = datetime.now(UTC)
        scored: list[tuple[float, int, dict[str, Any], Hit, float]] = []
        filtered = 0
        for position, (hit, entry_id) in enumerate(hits):
            entry = entries.get(entry_id)
            if entry is None or entry["status"] != body.status or not _currently_valid(entry, now):
                continue
            if any(entry[k] != v for k, v in metadata.items() if k != "status"):
                continue
            if body.min_similarity is not None and not hit.similar_enough(body.min_similarity):
                filtered += 1
                continue
            adjustment = feedback_adjustment(entry["useful_count"], entry["harmful_count"])
            score = min(1.0, max(0.0, hit.score + adjustment))
            scored.append((score, position, entry, hit, adjustment))
        scored.sort(key=lambda s: (-s[0], s[1]))
        scored = scored[: body.top_k]
        ids = [s[2]["id"] for s in scored]
        access, evidence = repo.bump_access_with_evidence(conn, account_id=principal.account_id, ids=ids)
        items: list[SearchItem] = []
        for rank, (score, _, entry, hit, adjustment) in enumerate(scored, start=1):
            entry = {**entry, **access.get(entry["id"], {})}
            reason = "+".join(hit.channels) + " match"
            if entry["scope_type"] != "global":
                reason += f" in {entry['scope_type']}:{entry['scope_key']}"
            items.append(
                SearchItem(
                    entry=EntryDetail(
                        **entry,
                        evidence=[Evidence(**e) for e in evidence[entry["id"]]],
                        # The hit is the entry's retrieval projection, so its indexing state is at hand.
                        indexing=Indexing(
                            status=hit.document["status"],
                            document_id=hit.document["id"],
                            error=hit.document.get("error"),
                        ),
                    ),
                    rank=rank,
                    score=round(score, 6),
                    retrieval_score=round(hit.score, 6),
                    feedback_adjustment=round(adjustment, 6),
                    channels=list(hit.channels),
                    hit_reason=reason,
                    lexical_score=hit.lexical_score,
                    vector_score=hit.vector_score,
                    lexical_matched=hit.lexical_matched,
                )
            )
        nearest = None
        if not items and not filtered:
            nearest = scopes.nearest_if_empty(conn, principal.account_id, 0, body.scope_type, body.scope_key)
        return SearchResponse(
            items=items,
            total=len(items),
            degraded=[Degraded(leg=d.leg, reason=d.reason) for d in result.degraded],
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
            nearest_scopes=nearest,
        )

    return retrieval.search(db, principal.account_id, query, then=finish)
