"""Hybrid (lexical + vector) search over durable memories, ranked with recorded usefulness.

One tenant transaction (pipeline mode) holds the search and everything read around it: the retrieval legs,
the hits' entries, the access counts the search bumps and the entries' evidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import FieldError, ValidationFailed
from agentmate.core.observability import counted
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.repository import EntryRow
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
from agentmate.retrieval.service import Hit, Query, Retrieval

FEEDBACK_WEIGHT = 0.15
FEEDBACK_PRIOR = 3


def feedback_adjustment(useful: int, harmful: int) -> float:
    """0.15 * (u - h) / (u + h + 3): bounded to ±0.15 and weighted by how much evidence exists (§4.3)."""
    return FEEDBACK_WEIGHT * (useful - harmful) / (useful + harmful + FEEDBACK_PRIOR)


def _currently_valid(entry: EntryRow, now: datetime) -> bool:
    if entry["valid_from"] > now:
        return False
    if entry["valid_to"] is not None and entry["valid_to"] <= now:
        return False
    return not (entry["ttl_at"] is not None and entry["ttl_at"] <= now)


@dataclass(frozen=True, slots=True)
class _Scored:
    """A hit whose entry passed the filters, with its feedback-adjusted score."""

    score: float
    position: int  # the hit's place in the retrieval ranking (the tie-breaker)
    entry: EntryRow
    hit: Hit
    adjustment: float


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
    account = principal.account_id
    metadata = _metadata_filters(body)
    query = Query(
        namespace=NAMESPACE,
        text=body.query,
        top_k=min(body.top_k * 3, 50),  # over-fetch: the entry filters and feedback reorder and drop hits
        source_type=SOURCE_TYPE,
        metadata=metadata,
    )
    pending = retrieval.begin_search(account, query)  # the vector leg starts on its thread
    with db.tenant(account, pipeline=True) as conn:
        result = pending.complete(conn)
        scored, filtered = _score(conn, account, body, metadata, result.hits)
        items = _items(conn, account, scored)
        nearest = None
        if not items and not filtered:
            nearest = scopes.nearest_if_empty(conn, account, 0, body.scope_type, body.scope_key)
        return SearchResponse(
            items=items,
            total=len(items),
            degraded=[Degraded(leg=d.leg, reason=d.reason) for d in result.degraded],
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
            nearest_scopes=nearest,
        )


def _metadata_filters(body: SearchRequest) -> dict[str, Any]:
    """Exact-match filters on the projection's metadata; the entries are checked against them again
    (``_score``), since the projection may lag behind an entry's status."""
    metadata: dict[str, Any] = {"status": body.status}
    if body.scope_type is not None:
        metadata["scope_type"] = body.scope_type
    if body.scope_key is not None:
        metadata["scope_key"] = body.scope_key
    if body.memory_type is not None:
        metadata["memory_type"] = body.memory_type
    return metadata


def _score(
    conn: Conn, account: UUID, body: SearchRequest, metadata: dict[str, Any], hits: list[Hit]
) -> tuple[list[_Scored], int]:
    """The top ``top_k`` hits whose entries are current and match the filters, by adjusted score (then
    retrieval rank), and how many ``min_similarity`` dropped."""
    entry_ids = [UUID(h.document["source_id"]) for h in hits]
    entries = repo.entries_by_ids(conn, account_id=account, ids=entry_ids)
    now = datetime.now(UTC)
    scored: list[_Scored] = []
    filtered = 0
    for position, (hit, entry_id) in enumerate(zip(hits, entry_ids, strict=True)):
        entry = entries.get(entry_id)
        if entry is None or entry["status"] != body.status or not _currently_valid(entry, now):
            continue
        # the filter keys are entry columns
        if any(entry[k] != v for k, v in metadata.items() if k != "status"):  # type: ignore[literal-required]
            continue
        if body.min_similarity is not None and not hit.similar_enough(body.min_similarity):
            filtered += 1
            continue
        adjustment = feedback_adjustment(entry["useful_count"], entry["harmful_count"])
        score = min(1.0, max(0.0, hit.score + adjustment))
        scored.append(_Scored(score, position, entry, hit, adjustment))
    scored.sort(key=lambda s: (-s.score, s.position))
    return scored[: body.top_k], filtered


def _items(conn: Conn, account: UUID, scored: list[_Scored]) -> list[SearchItem]:
    """The response items; counts each returned entry as accessed (the item shows the new count)."""
    access, evidence = repo.bump_access_with_evidence(
        conn, account_id=account, ids=[s.entry["id"] for s in scored]
    )
    items: list[SearchItem] = []
    for rank, s in enumerate(scored, start=1):
        entry, hit = s.entry, s.hit
        bumped = access.get(entry["id"])
        if bumped is not None:
            entry = {
                **entry,
                "access_count": bumped["access_count"],
                "last_accessed_at": bumped["last_accessed_at"],
            }
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
                score=round(s.score, 6),
                retrieval_score=round(hit.score, 6),
                feedback_adjustment=round(s.adjustment, 6),
                channels=list(hit.channels),
                hit_reason=reason,
                lexical_score=hit.lexical_score,
                vector_score=hit.vector_score,
                lexical_matched=hit.lexical_matched,
            )
        )
    return items
