"""Wiki retrieval (spec/001 "Wiki retrieval (K3.6)"): compiled pages in their own namespace, ``knowledge_wiki``,
the first level of a two-level query (find the synthesised page, then follow its citations to the raw documents).

Index: the active build of a source, page by page through the knowledge chunker (``chunk_markdown``), except
``wiki/log.md`` (a transcript of compiling, not knowledge); rows of earlier builds are removed in the same
transaction that records ``indexed_build_id``.

Search filters on each source's active build, never on whatever the index holds: a rolled-back wiki's rows are
skipped, so a stale index returns fewer hits rather than wrong ones, and the gap (active ≠ indexed) is reported.
Hits collapse to one per page with ``matched_chunks``; citations and typed links come from the database, since the
page is model-generated and a claim is only checkable by following it. Every wiki search also runs the raw
knowledge search with the same query, and both are logged in ``retrieval_queries`` (the wiki row names the raw
row's id), so a later validation signal can tell a retrieval miss from a synthesis error.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, NotFound
from agentmate.core.observability import counted
from agentmate.core.principal import Principal
from agentmate.knowledge.chunking import chunk_markdown, snippet
from agentmate.knowledge.search.schemas import KnowledgeSearchRequest
from agentmate.knowledge.search.service import search as raw_search
from agentmate.knowledge.wiki import retrieval_repository as repo
from agentmate.knowledge.wiki.prompt import LOG_PATH
from agentmate.knowledge.wiki.repository import PageCitationRow, PageLinkRow
from agentmate.knowledge.wiki.retrieval_repository import PageContent, PageRow, WikiIndexRow
from agentmate.knowledge.wiki.schemas import (
    Citation,
    PageLink,
    WikiDegraded,
    WikiIndexOutcome,
    WikiIndexReport,
    WikiIndexRequest,
    WikiIndexState,
    WikiIndexStatus,
    WikiSearchHit,
    WikiSearchRequest,
    WikiSearchResult,
)
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.schemas import legs_of
from agentmate.retrieval.service import DocumentIn, Hit, Query, Retrieval, SearchResult

NAMESPACE = "knowledge_wiki"
SOURCE_TYPE = "wiki_page_chunk"
MAX_CANDIDATES = 50


def _documents(source: WikiIndexRow, pages: list[PageContent]) -> list[DocumentIn]:
    out: list[DocumentIn] = []
    for page in pages:
        if page["path"] == LOG_PATH:
            continue
        for chunk in chunk_markdown(page["path"], page["content"]):
            out.append(
                DocumentIn(
                    namespace=NAMESPACE,
                    source_type=SOURCE_TYPE,
                    source_id=str(page["id"]),
                    chunk_key=chunk.key,
                    title=f"{page['title']} ({chunk.title(page['path'])})",
                    content=chunk.content,
                    metadata={
                        "source_id": str(source["source_id"]),
                        "build_id": str(source["active_build_id"]),
                        "page_id": str(page["id"]),
                        "path": page["path"],
                        "kind": page["kind"],
                        "heading_path": chunk.heading_path,
                        "knowledge_base": source["name"],
                    },
                )
            )
    return out


def _index_source(
    db: TenantTransactions, rt: Retrieval, account_id: UUID, source: WikiIndexRow
) -> WikiIndexOutcome:
    build_id = source["active_build_id"]
    assert build_id is not None  # callers pass index_states(only_active=True) rows
    with db.tenant(account_id) as conn:
        pages = repo.pages_with_content(conn, account_id=account_id, build_id=build_id)
    docs = _documents(source, pages)
    failed, error = 0, None
    for result in rt.index_documents(db, account_id, docs):
        if result.status == "failed":
            failed += 1
            error = error or result.error
    with db.tenant(account_id) as conn:
        removed = retrieval.remove_stale(
            conn,
            account_id,
            namespace=NAMESPACE,
            source_type=SOURCE_TYPE,
            metadata={"source_id": str(source["source_id"])},
            keep=[(d.source_id, d.chunk_key) for d in docs],
        )
        repo.mark_indexed(conn, account_id=account_id, source_id=source["source_id"], build_id=build_id)
    rt.remove_points(account_id, removed)
    return WikiIndexOutcome(
        source_id=source["source_id"],
        build_id=build_id,
        pages=sum(1 for p in pages if p["path"] != LOG_PATH),
        chunks=len(docs),
        failed_chunks=failed,
        removed_chunks=len(removed),
        status="indexed" if failed == 0 else "partial",
        error=error,
    )


def sync_source(
    db: TenantTransactions,
    rt: Retrieval,
    account_id: UUID,
    source_id: UUID,
    *,
    force: bool = False,
    rounds: int = 3,
) -> WikiIndexOutcome | None:
    """Index the source's active build unless the index already reflects it (``force``: index anyway, e.g. a
    retry after a partial run); repeated when the source was activated again meanwhile. None when nothing ran."""
    outcome = None
    for _ in range(rounds):
        with db.tenant(account_id) as conn:
            states = repo.index_states(conn, account_id=account_id, source_id=source_id, only_active=True)
        if not states or (states[0]["indexed_build_id"] == states[0]["active_build_id"] and not force):
            return outcome
        outcome, force = _index_source(db, rt, account_id, states[0]), False
    return outcome


@counted("WikiIndex")
def index(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: WikiIndexRequest
) -> WikiIndexReport:
    account = principal.account_id
    with db.tenant(account) as conn:
        if body.source_id is not None and not repo.source_exists(
            conn, account_id=account, source_id=body.source_id
        ):
            raise NotFound("knowledge source")
        sources = repo.index_states(conn, account_id=account, source_id=body.source_id, only_active=True)
    if body.source_id is not None and not sources:
        raise Conflict(
            "the knowledge source has no active wiki build yet: compile it first (POST "
            "/api/knowledge/compile)",
            extra={"reason": "no_active_build"},
        )
    items = [_index_source(db, rt, account, s) for s in sources]
    return WikiIndexReport(items=items, total=len(items))


def status(db: TenantTransactions, principal: Principal, source_id: UUID | None) -> WikiIndexStatus:
    account = principal.account_id
    with db.tenant(account) as conn:
        if source_id is not None and not repo.source_exists(conn, account_id=account, source_id=source_id):
            raise NotFound("knowledge source")
        rows = repo.index_states(conn, account_id=account, source_id=source_id)
    items = [_state(r) for r in rows]
    return WikiIndexStatus(items=items, stale_count=sum(1 for i in items if i.stale))


def _state(row: WikiIndexRow) -> WikiIndexState:
    return WikiIndexState.model_validate({**row, "stale": row["active_build_id"] != row["indexed_build_id"]})


def _log(
    conn: Conn,
    principal: Principal,
    body: WikiSearchRequest,
    hits: list[WikiSearchHit],
    degraded: list[WikiDegraded],
    raw_query_id: UUID | None,
) -> UUID:
    filters: dict[str, Any] = {
        "top_k": body.top_k,
        "include_content": body.include_content,
        "raw_query_id": str(raw_query_id) if raw_query_id else None,
    }
    if body.domain is not None:
        filters["domain"] = body.domain
    if body.source_ids:
        filters["source_ids"] = [str(s) for s in body.source_ids]
    return retrieval.record_query(
        conn,
        principal.account_id,
        user_id=principal.user_id,
        key_id=principal.key_id,
        namespace=NAMESPACE,
        query=body.query,
        filters=filters,
        top_k=body.top_k,
        hits=[
            {
                "rank": h.rank,
                "source_id": str(h.source_id),
                "build_id": str(h.build_id),
                "path": h.path,
                "score": h.score,
                "matched_chunks": h.matched_chunks,
            }
            for h in hits
        ],
        degraded=[d.model_dump() for d in degraded],
    )


_Grouped = list[tuple[tuple[str, str], list[Hit]]]


def _group(
    hits: list[Hit], body: WikiSearchRequest, active: dict[UUID, WikiIndexRow]
) -> tuple[_Grouped, int]:
    """Chunk hits grouped per page (build, path) in rank order, first ``top_k`` pages, only pages of the build each
    source serves and over the similarity floor; and how many hits the floor dropped."""
    pages: dict[tuple[str, str], list[Hit]] = {}
    filtered = 0
    for hit in hits:
        meta = hit.document.get("metadata") or {}
        try:
            src = active.get(UUID(str(meta["source_id"])))
        except (KeyError, ValueError):
            continue
        if src is None or meta.get("build_id") != str(src["active_build_id"]):
            continue  # a page of a build the source does not serve (rolled back, or not yet indexed)
        if body.min_similarity is not None and not hit.similar_enough(body.min_similarity):
            filtered += 1
            continue
        pages.setdefault((meta["build_id"], meta["path"]), []).append(hit)
    return list(pages.items())[: body.top_k], filtered


def _hit(
    rank: int,
    path: str,
    hits: list[Hit],
    src: WikiIndexRow,
    row: PageRow,
    cites: list[PageCitationRow],
    links: list[PageLinkRow],
    include_content: bool,
) -> WikiSearchHit:
    meta = hits[0].document["metadata"]
    return WikiSearchHit(
        rank=rank,
        score=round(hits[0].score, 6),
        source_id=src["source_id"],
        knowledge_base=src["name"],
        domain=src["domain"],
        build_id=row["build_id"],
        path=path,
        title=row["title"],
        kind=row["kind"],
        heading_path=meta.get("heading_path", ""),
        matched_chunks=len(hits),
        snippet=snippet(hits[0].document["content"]),
        content=row["content"] if include_content else None,
        derived_from_build_id=row["derived_from_build_id"],
        citations=[Citation.model_validate(c) for c in cites],
        links_out=[
            PageLink(path=x["other_path"], link_type=x["link_type"], exists=x["exists"])
            for x in links
            if x["direction"] == "out"
        ],
        links_in=[
            PageLink(path=x["other_path"], link_type=x["link_type"], exists=True)
            for x in links
            if x["direction"] == "in"
        ],
        **legs_of(hits[0]),
    )


@counted("WikiSearch")
def search(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: WikiSearchRequest
) -> WikiSearchResult:
    account = principal.account_id
    raw = raw_search(
        db, rt, principal, KnowledgeSearchRequest.model_validate(body.model_dump(exclude={"include_content"}))
    )
    with db.tenant(account) as conn:
        states = repo.index_states(
            conn, account_id=account, source_ids=body.source_ids or None, domain=body.domain, only_active=True
        )
    active = {r["source_id"]: r for r in states}
    stale = [_state(r) for r in states if r["active_build_id"] != r["indexed_build_id"]]
    metadata = {"source_id": str(next(iter(active)))} if len(active) == 1 else None
    query = Query(
        namespace=NAMESPACE, text=body.query, top_k=MAX_CANDIDATES, source_type=SOURCE_TYPE, metadata=metadata
    )

    def finish(conn: Conn, result: SearchResult) -> WikiSearchResult:
        """Inside retrieval's transaction: group chunks into pages, read the pages, log the query."""
        chosen, filtered = _group(result.hits, body, active)
        page_ids = [UUID(str(hits[0].document["metadata"]["page_id"])) for _, hits in chosen]
        rows = repo.pages_by_id(conn, account_id=account, page_ids=page_ids)
        cites = repo.citations_of(conn, account_id=account, page_ids=page_ids)
        links = repo.links_of(conn, account_id=account, page_ids=page_ids)
        items: list[WikiSearchHit] = []
        for (_, path), hits in chosen:
            meta = hits[0].document["metadata"]
            page_id = UUID(str(meta["page_id"]))
            row = rows.get(page_id)
            if row is None:
                continue
            src = active[UUID(str(meta["source_id"]))]
            rank = len(items) + 1
            page_cites, page_links = cites.get(page_id, []), links.get(page_id, [])
            items.append(_hit(rank, path, hits, src, row, page_cites, page_links, body.include_content))
        degraded = [WikiDegraded(leg=d.leg, reason=d.reason) for d in result.degraded]
        query_id = _log(conn, principal, body, items, degraded, raw.query_id)
        return WikiSearchResult(
            query_id=query_id,
            raw_query_id=raw.query_id,
            items=items,
            total=len(items),
            degraded=degraded,
            stale=stale,
            raw_hits=raw.total,
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
        )

    pending = rt.begin_search(account, query)  # the vector leg starts on its thread
    with db.tenant(account, pipeline=True) as conn:  # the hits and the rows finish() reads: one transaction
        return finish(conn, pending.complete(conn))
