"""Chunk-index the active revisions of knowledge sources (spec/001 K2 ``POST /api/knowledge/index``).

Per source: chunk every text document of the active revision (``chunking``), extract its package links
(``links``), write the chunks to the ``knowledge`` retrieval namespace (embedding with the configured embedder; an
unchanged chunk is not re-embedded), then in one transaction make the source's chunk rows, link graph and index
state exactly this revision's and delete its retrieval rows of earlier revisions or keys no longer produced (unless
more than 20 chunks failed: then the earlier rows keep serving, as prior-art does). Vector points of deleted rows
are removed after the commit.

Inline budget (the skills registry's rule): at most ``MAX_INLINE_SOURCES`` sources and ``INLINE_BUDGET_S``
seconds per request, checked between sources and between embedding slices; past it the request is a 413 naming
the limit, the work done so far is kept, and repeating the request continues (unchanged chunks are skipped).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentmate.core.db import Database
from agentmate.core.errors import Conflict, NotFound, TooLarge
from agentmate.core.observability import counted
from agentmate.core.principal import Principal
from agentmate.knowledge import index_repository as repo
from agentmate.knowledge.chunking import chunk_document
from agentmate.knowledge.links import extract_links
from agentmate.knowledge.search_schemas import (
    KnowledgeIndexOutcome,
    KnowledgeIndexReport,
    KnowledgeIndexRequest,
)
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.service import DocumentIn, Retrieval

NAMESPACE = "knowledge"
SOURCE_TYPE = "knowledge_chunk"
MAX_INLINE_SOURCES = 200
INLINE_BUDGET_S = 20.0
EMBED_SLICE = 256  # chunks per retrieval call: the budget is checked between slices
MAX_FAILED_BEFORE_KEEPING_OLD_ROWS = 20


@dataclass(slots=True)
class _Prepared:
    docs: list[DocumentIn]
    chunks: list[dict[str, Any]]
    links: list[dict[str, Any]]
    documents: int
    truncated: int
    dangling: int
    escaping: int


def _within_budget(started: float, what: str) -> None:
    if time.monotonic() - started > INLINE_BUDGET_S:
        raise TooLarge(f"{what} exceeded the inline time budget inline_budget_s={INLINE_BUDGET_S:g}; the work "
                       "done so far is kept, repeat the request to continue")


def prepare(source: dict[str, Any], documents: list[dict[str, Any]]) -> _Prepared:
    """Chunks, retrieval documents and links of one revision (pure apart from its inputs)."""
    by_path = {d["path"]: d["id"] for d in documents}
    out = _Prepared([], [], [], 0, 0, 0, 0)
    for d in documents:
        if not d["is_text"] or d["content"] is None:
            continue
        out.documents += 1
        chunked = chunk_document(d["path"], d["content"], d["mime_type"])
        out.truncated += chunked.truncated
        for c in chunked.chunks:
            out.chunks.append({"document_id": d["id"], "chunk_key": c.key, "ordinal": c.ordinal,
                               "heading_path": c.heading_path, "content": c.content, "start_line": c.start_line,
                               "end_line": c.end_line})
            out.docs.append(DocumentIn(
                namespace=NAMESPACE, source_type=SOURCE_TYPE, source_id=str(d["id"]), chunk_key=c.key,
                title=c.title(d["path"]), content=c.content,
                metadata={"source_id": str(source["id"]), "revision_id": str(source["active_revision_id"]),
                          "document_id": str(d["id"]), "path": d["path"], "heading_path": c.heading_path,
                          "knowledge_base": source["name"]}))
        if not chunked.markdown:
            continue
        extracted = extract_links(d["path"], d["content"])
        out.escaping += extracted.escaping
        for ordinal, link in enumerate(extracted.links):
            target = by_path.get(link.target_path)
            out.dangling += target is None
            out.links.append({"source_document_id": d["id"], "target_path": link.target_path,
                              "target_document_id": target, "kind": link.kind, "ordinal": ordinal})
    return out


def _index_source(db: Database, rt: Retrieval, account_id: UUID, source: dict[str, Any],
                  started: float) -> KnowledgeIndexOutcome:
    revision_id = source["active_revision_id"]
    with db.tenant(account_id) as conn:
        documents = repo.text_documents(conn, account_id=account_id, revision_id=revision_id)
    prep = prepare(source, documents)
    failed = 0
    error: str | None = None
    for start in range(0, len(prep.docs), EMBED_SLICE):
        _within_budget(started, "knowledge index")
        for result in rt.index_documents(db, account_id, prep.docs[start: start + EMBED_SLICE]):
            if result.status == "failed":
                failed += 1
                error = error or result.error
    outcome = KnowledgeIndexOutcome(
        source_id=source["id"], name=source["name"], revision_id=revision_id,
        status="indexed" if failed == 0 else "partial", documents=prep.documents, chunks=len(prep.chunks),
        failed_chunks=failed, truncated_documents=prep.truncated, links=len(prep.links),
        dangling_links=prep.dangling, escaping_links=prep.escaping, removed_chunks=0, error=error)
    state = outcome.model_dump(include={"status", "documents", "chunks", "failed_chunks", "truncated_documents",
                                        "links", "dangling_links", "escaping_links"})
    removed: list[UUID] = []
    with db.tenant(account_id) as conn:
        repo.replace_revision(conn, account_id=account_id, source_id=source["id"], revision_id=revision_id,
                              chunks=prep.chunks, links=prep.links, state=state)
        if failed <= MAX_FAILED_BEFORE_KEEPING_OLD_ROWS:
            removed = retrieval.remove_stale(conn, account_id, namespace=NAMESPACE, source_type=SOURCE_TYPE,
                                             metadata={"source_id": str(source["id"])},
                                             keep=[(d.source_id, d.chunk_key) for d in prep.docs])
    rt.remove_points(account_id, removed)
    outcome.removed_chunks = len(removed)
    return outcome


@counted("KnowledgeIndex")
def index_active(db: Database, rt: Retrieval, principal: Principal, body: KnowledgeIndexRequest
                 ) -> KnowledgeIndexReport:
    started = time.monotonic()
    account = principal.account_id
    with db.tenant(account) as conn:
        if body.source_id is not None and not repo.source_exists(conn, account_id=account,
                                                                  source_id=body.source_id):
            raise NotFound("knowledge source")
        sources = repo.active_sources(conn, account_id=account, source_id=body.source_id,
                                      limit=MAX_INLINE_SOURCES + 1)
    if body.source_id is not None and not sources:
        raise Conflict("the knowledge source has no active revision yet: sync it or push a snapshot first")
    if len(sources) > MAX_INLINE_SOURCES:
        raise TooLarge(f"more than max_inline_sources={MAX_INLINE_SOURCES} sources to index in one request; "
                       "name one (source_id) at a time")
    items = [_index_source(db, rt, account, s, started) for s in sources]
    indexed = sum(1 for i in items if i.status == "indexed")
    return KnowledgeIndexReport(items=items, indexed=indexed, partial=len(items) - indexed, total=len(items))
