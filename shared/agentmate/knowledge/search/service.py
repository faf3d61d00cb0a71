"""Hybrid search over indexed knowledge chunks (spec/001 K2 ``POST /api/knowledge/search``, prior-art §4.6).

The legs are the retrieval core's (lexical over the stored, GIN-indexed tsvector of the CJK-aware projection;
vector over the embedded chunks), fused by reciprocal rank and failing open: a failed leg is listed in
``degraded`` and the other answers; both failing is a 503. ``min_similarity`` compares the raw vector similarity
(a lexical match always passes), as memory search does.

Filters: ``domain`` resolves to that domain's sources and is intersected with ``source_ids``, so it only narrows.
Exactly one source is pushed down into both legs (``metadata.source_id``); several are post-filtered from a
widened candidate list (top_k x n, at most 50). Unknown or foreign source ids select nothing.

The lexical leg ranks by BM25 over the query's stemmed terms, any of which may match (migrations/0084); its
candidate pool is filled rarest term first, so a query of common words costs a bounded pool, not every match.

Every search that ran is logged in ``retrieval_queries`` in the search's own transaction (query, filters, hit
refs and scores, degraded legs); its id is the response's ``query_id``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound
from agentmate.core.observability import counted
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.chunking import snippet
from agentmate.knowledge.search import repository as repo
from agentmate.knowledge.search.index import NAMESPACE, SOURCE_TYPE
from agentmate.knowledge.search.repository import Neighbour, SourceRow
from agentmate.knowledge.search.schemas import (
    MAX_NEIGHBOURS,
    KnowledgeDegraded,
    KnowledgeDocumentLink,
    KnowledgeDocumentLinks,
    KnowledgeNeighbour,
    KnowledgeSearchHit,
    KnowledgeSearchRequest,
    KnowledgeSearchResult,
    KnowledgeSourceIndexState,
)
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.service import Hit, Query, Retrieval, SearchResult

MAX_WIDENED = 50
# The lexical leg's candidate pool (migrations/0084, docs/decisions.md): a query of common words matches a third of
# a 100k-chunk account; the pool, filled rarest term first, bounds what is read and ranked.
LEXICAL_POOL = 400


def citation(path: str, heading_path: str) -> str:
    return f"{path} # {heading_path}" if heading_path else path


def _filters(body: KnowledgeSearchRequest) -> dict[str, Any]:
    out: dict[str, Any] = {"top_k": body.top_k, "include_content": body.include_content}
    if body.domain is not None:
        out["domain"] = body.domain
    if body.source_ids:
        out["source_ids"] = [str(s) for s in body.source_ids]
    if body.min_similarity is not None:
        out["min_similarity"] = body.min_similarity
    return out


def _log(
    conn: Conn,
    principal: Principal,
    body: KnowledgeSearchRequest,
    hits: list[KnowledgeSearchHit],
    degraded: list[KnowledgeDegraded],
) -> UUID:
    return retrieval.record_query(
        conn,
        principal.account_id,
        user_id=principal.user_id,
        key_id=principal.key_id,
        namespace=NAMESPACE,
        query=body.query,
        filters=_filters(body),
        top_k=body.top_k,
        hits=[
            {
                "rank": h.rank,
                "document_id": str(h.document_id),
                "chunk_key": h.chunk_key,
                "source_id": str(h.source_id),
                "revision_id": str(h.revision_id),
                "path": h.path,
                "score": h.score,
                "lexical_score": h.lexical_score,
                "vector_score": h.vector_score,
                "channels": h.channels,
            }
            for h in hits
        ],
        degraded=[d.model_dump() for d in degraded],
    )


def _allowed_sources(
    db: TenantTransactions, principal: Principal, body: KnowledgeSearchRequest
) -> tuple[dict[UUID, SourceRow] | None, str | None]:
    """The sources the filters select (None: no filter), or a note when they select none."""
    if body.domain is None and not body.source_ids:
        return None, None
    with db.tenant(principal.account_id) as conn:
        rows = repo.sources(
            conn, account_id=principal.account_id, source_ids=body.source_ids or None, domain=body.domain
        )
    if rows:
        return {r["id"]: r for r in rows}, None
    if body.domain is not None and body.source_ids:
        return {}, f"no source of domain {body.domain!r} is among source_ids"
    if body.domain is not None:
        return {}, f"no knowledge source of this account has domain {body.domain!r}"
    return {}, "none of source_ids is a knowledge source of this account"


def _hit_ids(hit: Hit) -> tuple[UUID, UUID, UUID] | None:
    meta = hit.document.get("metadata") or {}
    try:
        return UUID(str(meta["source_id"])), UUID(str(meta["revision_id"])), UUID(str(meta["document_id"]))
    except (KeyError, ValueError):
        return None


def _query(body: KnowledgeSearchRequest, allowed: dict[UUID, SourceRow] | None) -> Query:
    """The retrieval query: one source filters in the vector store; several widen the fetch (filtered after), as
    does a similarity floor (hits under it are dropped after)."""
    metadata: dict[str, Any] | None = None
    fetch = body.top_k
    if allowed is not None and len(allowed) == 1:
        metadata = {"source_id": str(next(iter(allowed)))}
    elif allowed is not None:
        fetch = min(body.top_k * len(allowed), MAX_WIDENED)
    if body.min_similarity is not None:
        fetch = min(max(fetch, body.top_k * 3), MAX_WIDENED)
    return Query(
        namespace=NAMESPACE,
        text=body.query,
        top_k=fetch,
        source_type=SOURCE_TYPE,
        metadata=metadata,
        lexical_pool=LEXICAL_POOL,
    )


_Kept = list[tuple[Hit, tuple[UUID, UUID, UUID]]]


def _keep(
    hits: list[Hit], body: KnowledgeSearchRequest, allowed: dict[UUID, SourceRow] | None
) -> tuple[_Kept, int]:
    """The first ``top_k`` hits of the allowed sources over the similarity floor, and how many the floor dropped."""
    kept: _Kept = []
    filtered = 0
    for hit in hits:
        ids = _hit_ids(hit)
        if ids is None or (allowed is not None and ids[0] not in allowed):
            continue
        if body.min_similarity is not None and not hit.similar_enough(body.min_similarity):
            filtered += 1
            continue
        kept.append((hit, ids))
        if len(kept) == body.top_k:
            break
    return kept, filtered


def _sources_of(
    conn: Conn, account: UUID, kept: _Kept, allowed: dict[UUID, SourceRow] | None
) -> dict[UUID, SourceRow]:
    """The kept hits' sources: the filter's, plus a read of those it did not name (no filter: all of them)."""
    srcs = allowed if allowed is not None else {}
    missing = list({ids[0] for _, ids in kept} - set(srcs))
    if missing:
        srcs = {
            **srcs,
            **{r["id"]: r for r in repo.sources(conn, account_id=account, source_ids=missing)},
        }
    return srcs


def _hit(
    rank: int,
    hit: Hit,
    ids: tuple[UUID, UUID, UUID],
    src: SourceRow,
    neighbours: list[Neighbour],
    include_content: bool,
) -> KnowledgeSearchHit:
    source_id, revision_id, document_id = ids
    meta = hit.document["metadata"]
    content = hit.document["content"]
    return KnowledgeSearchHit(
        rank=rank,
        score=round(hit.score, 6),
        channels=list(hit.channels),
        lexical_score=hit.lexical_score,
        vector_score=hit.vector_score,
        lexical_matched=hit.lexical_matched,
        source_id=source_id,
        knowledge_base=src["name"],
        domain=src["domain"],
        revision_id=revision_id,
        document_id=document_id,
        path=meta["path"],
        heading_path=meta.get("heading_path", ""),
        chunk_key=hit.document["chunk_key"],
        citation=citation(meta["path"], meta.get("heading_path", "")),
        snippet=snippet(content),
        content=content if include_content else None,
        links=[
            KnowledgeNeighbour(direction=n["direction"], path=n["path"], document_id=n["linked_document_id"])
            for n in neighbours
        ],
    )


def _stale(
    conn: Conn, account: UUID, allowed: dict[UUID, SourceRow] | None
) -> list[KnowledgeSourceIndexState]:
    """The searched sources whose chunk index does not reflect their active revision."""
    rows = repo.stale_sources(conn, account_id=account, source_ids=None if allowed is None else list(allowed))
    return [KnowledgeSourceIndexState.model_validate(r) for r in rows]


@counted("KnowledgeSearch")
def search(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: KnowledgeSearchRequest
) -> KnowledgeSearchResult:
    account = principal.account_id
    allowed, note = _allowed_sources(db, principal, body)
    if allowed is not None and not allowed:
        with db.tenant(account) as conn:
            query_id = _log(conn, principal, body, [], [])
        return KnowledgeSearchResult(query_id=query_id, items=[], total=0, note=note)

    def finish(conn: Conn, result: SearchResult) -> KnowledgeSearchResult:
        """Inside retrieval's transaction: keep, join the sources and one-hop links, log the query."""
        kept, filtered = _keep(result.hits, body, allowed)
        srcs = _sources_of(conn, account, kept, allowed)
        links = repo.neighbours(
            conn,
            account_id=account,
            document_ids=list({ids[2] for _, ids in kept}),
            per_document=MAX_NEIGHBOURS,
        )
        items: list[KnowledgeSearchHit] = []
        for hit, ids in kept:
            src = srcs.get(ids[0])
            if src is None:  # the source was deleted since it was indexed
                continue
            items.append(_hit(len(items) + 1, hit, ids, src, links.get(ids[2], []), body.include_content))
        degraded = [KnowledgeDegraded(leg=d.leg, reason=d.reason) for d in result.degraded]
        query_id = _log(conn, principal, body, items, degraded)
        return KnowledgeSearchResult(
            query_id=query_id,
            items=items,
            total=len(items),
            degraded=degraded,
            stale=_stale(conn, account, allowed),
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
        )

    pending = rt.begin_search(account, _query(body, allowed))  # the vector leg starts on its thread
    with db.tenant(account, pipeline=True) as conn:  # the hits and the rows finish() reads: one transaction
        return finish(conn, pending.complete(conn))


def document_links(
    db: TenantTransactions, principal: Principal, document_id: UUID, page: PageParams
) -> KnowledgeDocumentLinks:
    """Both directions of one document's package-internal links (from its revision's last index run)."""
    account = principal.account_id
    with db.tenant(account) as conn:
        doc = repo.document(conn, account_id=account, document_id=document_id)
        if doc is None:
            raise NotFound("knowledge document")
        rows, total = repo.document_links(
            conn, account_id=account, document_id=document_id, limit=page.limit, offset=page.offset
        )
        indexed = bool(repo.index_states(conn, account_id=account, revision_ids=[doc["revision_id"]]))
    return KnowledgeDocumentLinks(
        document_id=doc["id"],
        path=doc["path"],
        source_id=doc["source_id"],
        revision_id=doc["revision_id"],
        indexed=indexed,
        total=total,
        limit=page.limit,
        offset=page.offset,
        items=[
            KnowledgeDocumentLink(
                direction=r["direction"], path=r["path"], document_id=r["document_id"], kind=r["kind"]
            )
            for r in rows
        ],
    )
