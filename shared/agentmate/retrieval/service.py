"""Retrieval core: index documents into Postgres + the vector index, hybrid (lexical + vector) search, and the
admin lexical rebuild. One ``Retrieval`` object per execution environment (``get_retrieval``) holds the embedder,
the vector index and the vector leg's thread pool; it is passed to the domains that use it, like ``Database``.

Indexing: upsert the row as ``pending`` → embed → vector upsert → mark ``indexed``. Any failure after the row
is written marks it ``failed`` with the error; a failed row still serves the lexical leg. Unchanged documents
(same content, metadata and embedding model, already indexed) are not re-embedded.

Search fails open: the lexical leg (BM25 over the stemmed tsvector of the CJK-aware projection, migrations/0084;
query built from tokens only) and the vector leg (embed the query, filtered vector search, hydrate ``indexed`` rows from Postgres) run
independently; if one raises, the other answers and the result lists the failed leg in ``degraded``. Only when
both fail is it a ``ServiceUnavailable`` (503). Candidates per leg = clamp(top_k * 4, 20, 50); the legs are fused
with reciprocal rank fusion (``fusion.py``).

The embedding call and the vector search happen before the tenant transaction is opened, so a slow embedding
endpoint never holds a database connection; a store that indexes its new document inside its own transaction
(``begin_index``: the memory store) starts the embedding before that transaction opens and waits for it at most
``vector_leg_timeout_s`` inside it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID, uuid4

from agentmate.core import snapstart
from agentmate.core.db import Conn, TenantTransactions, savepoint
from agentmate.core.errors import Forbidden, ServiceUnavailable
from agentmate.core.observability import logger
from agentmate.core.settings import RetrievalSettings, get_retrieval_settings
from agentmate.retrieval import fusion, lexical
from agentmate.retrieval import repository as repo

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.retrieval.embedders import Embedder, PendingVectors
    from agentmate.retrieval.vector_index import FilterValue, VectorIndex

MIN_CANDIDATES = 20
MAX_CANDIDATES = 50
INDEX_BATCH = 64
# The vector leg (query embedding + vector search) runs beside the lexical leg on a small thread pool and is
# abandoned (search degrades to lexical) when it takes longer than this.
VECTOR_LEG_TIMEOUT_S = 5.0
VECTOR_WORKERS = 4


@dataclass(frozen=True)
class DocumentIn:
    """One chunk of a source record to index. ``metadata`` must be a JSON object; its top-level scalar values
    are filterable in both legs."""

    namespace: str
    source_type: str
    source_id: str
    title: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    chunk_key: str = "default"


@dataclass(frozen=True)
class IndexResult:
    status: Literal["indexed", "failed"]
    document_id: UUID | None
    error: str | None = None


@dataclass(frozen=True)
class Healed:
    """What one ``Retrieval.heal`` pass did: rows given their vector, rows still waiting, and the failure that
    stopped it (None when nothing failed)."""

    healed: int
    waiting: int
    error: str | None = None


@dataclass(frozen=True)
class Query:
    namespace: str
    text: str
    top_k: int
    source_type: str | None = None
    metadata: dict[str, Any] | None = None  # exact-match filters on top-level metadata keys
    # The lexical leg's candidate pool (migrations/0084); None = 8 x the leg's limit, at least 400.
    lexical_pool: int | None = None
    # The legs to run (bench/retrieval_quality.py measures each alone); the API always runs both.
    legs: frozenset[fusion.Channel] = frozenset(("lexical", "vector"))


@dataclass(frozen=True)
class LexicalRebuild:
    """What an admin lexical rebuild did."""

    updated: int
    scanned: int
    batches: int


@dataclass(frozen=True)
class Hit:
    document: dict[str, Any]
    score: float  # fused and normalised: 1.0 = first in both legs, 0.5 = first in one leg
    channels: tuple[fusion.Channel, ...]
    lexical_score: float | None
    vector_score: float | None
    lexical_rank: int | None
    vector_rank: int | None
    # Share of the query's terms (stop words aside) the document holds; None when the lexical leg did not find it.
    lexical_coverage: float | None = None

    @property
    def lexical_matched(self) -> bool:
        """The lexical leg found every query term in it (what ``lexical_matched`` reports on every search)."""
        return self.lexical_coverage is not None and self.lexical_coverage >= 1.0

    def similar_enough(self, min_similarity: float) -> bool:
        """``min_similarity``'s rule on every search surface: a hit holding every query term passes (the words are
        there); otherwise its raw vector similarity decides."""
        return self.lexical_matched or (self.vector_score is not None and self.vector_score >= min_similarity)


@dataclass(frozen=True)
class LegFailure:
    leg: Literal["lexical", "vector"]
    reason: str


@dataclass
class SearchResult:
    hits: list[Hit]
    degraded: list[LegFailure]
    candidate_count: int = 0
    embedding_ms: float = 0.0
    timings_ms: dict[str, float] = field(default_factory=dict)


class LegError(Exception):
    """A search leg failed; ``reason`` is safe to show to the caller."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def candidate_limit(top_k: int) -> int:
    return max(MIN_CANDIDATES, min(top_k * 4, MAX_CANDIDATES))


def _content_hash(title: str, content: str) -> str:
    return hashlib.sha256(f"{title}\x00{content}".encode()).hexdigest()


def _describe(exc: BaseException) -> str:
    """A short reason that names the failure without echoing internals (hosts, SQL, keys)."""
    from agentmate.retrieval.embedders import EmbeddingError

    if isinstance(exc, EmbeddingError):
        return f"embedding failed: {str(exc)[:300]}"
    return type(exc).__name__


def _vector_payload(row: repo.StoredDocument) -> dict[str, Any]:
    """What the vector index stores beside a vector (the index adds account_id). Filterable metadata is the
    top-level scalars of the document's metadata, nested under ``metadata`` so the filter path
    ``metadata.<key>`` matches exactly what the lexical leg matches with ``metadata @> {key: value}``."""
    return _payload(row.id, row._asdict())


def _payload(document_id: UUID, doc: Mapping[str, Any]) -> dict[str, Any]:
    """``_vector_payload`` of a stored row (``_asdict()``) or of a new document (``repo.PreparedDocument``)."""
    return {
        "namespace": doc["namespace"],
        "source_type": doc["source_type"],
        "source_id": doc["source_id"],
        "chunk_key": doc["chunk_key"],
        "document_id": str(document_id),
        "content_hash": doc["content_hash"],
        "metadata": {
            k: v for k, v in (doc["metadata"] or {}).items() if isinstance(v, str | int | float | bool)
        },
    }


def _vector_filters(query: Query) -> dict[str, FilterValue]:
    out: dict[str, FilterValue] = {}
    if query.source_type:
        out["source_type"] = query.source_type
    for key, value in (query.metadata or {}).items():
        out[f"metadata.{key}"] = value
    return out


# -- the retrieval object ----------------------------------------------------------------------------------------


def _prepare(doc: DocumentIn) -> repo.PreparedDocument:
    metadata = json.loads(json.dumps(doc.metadata, default=str))  # JSON-safe copy
    return {
        "namespace": doc.namespace,
        "source_type": doc.source_type,
        "source_id": doc.source_id,
        "chunk_key": doc.chunk_key,
        "title": doc.title,
        "content": doc.content,
        "content_hash": _content_hash(doc.title, doc.content),
        "metadata": metadata,
        "lexical_text": lexical.projection(doc.title, doc.content),
    }


def _unchanged(
    existing: repo.StoredDocument | None, prepared: repo.PreparedDocument, model: str | None
) -> bool:
    return (
        existing is not None
        and existing.status == "indexed"
        and model is not None
        and existing.content_hash == prepared["content_hash"]
        and existing.metadata == prepared["metadata"]
        and existing.embedding_model == model
    )


def _write_pending(
    conn: Conn, account_id: UUID, prepared: list[repo.PreparedDocument], model: str | None
) -> tuple[dict[int, IndexResult], list[repo.StoredDocument]]:
    """Write the batch's changed documents as ``pending`` rows (locking the existing ones first); returns the
    results of the unchanged ones by position, and the written rows in the order of the rest."""
    if len(prepared) == 1:  # one keyed lookup
        p = prepared[0]
        existing = repo.get_by_key(
            conn,
            account_id=account_id,
            namespace=p["namespace"],
            source_type=p["source_type"],
            source_id=p["source_id"],
            chunk_key=p["chunk_key"],
            lock=True,
        )
        if existing is not None and _unchanged(existing, p, model):
            return {0: IndexResult("indexed", existing.id)}, []
        return {}, [repo.upsert_pending(conn, account_id=account_id, doc=p)]
    # Unchanged rows (same content, metadata and model, already indexed) are not re-embedded, so re-indexing a
    # large source after a small change, or repeating an interrupted run, is cheap.
    kept: dict[int, IndexResult] = {}
    current = repo.get_many_by_keys(conn, account_id=account_id, docs=prepared, lock=True)
    for i, p in enumerate(prepared):
        found = current.get(repo.key_of(p))
        if found is not None and _unchanged(found, p, model):
            kept[i] = IndexResult("indexed", found.id)
    todo = [p for i, p in enumerate(prepared) if i not in kept]
    if not todo:
        return kept, []
    return kept, repo.upsert_many_pending(conn, account_id=account_id, docs=todo)


# -- inside the caller's transaction (Postgres only: no embedder, no vector index) -------------------------------


def remove_source(
    conn: Conn, account_id: UUID, *, namespace: str, source_type: str, source_id: str
) -> list[UUID]:
    """Delete a source's projection rows inside the caller's transaction; returns their vector point ids
    (pass them to ``remove_points`` after the commit)."""
    return repo.delete_source(
        conn, account_id=account_id, namespace=namespace, source_type=source_type, source_id=source_id
    )


def remove_stale(
    conn: Conn,
    account_id: UUID,
    *,
    namespace: str,
    source_type: str,
    metadata: dict[str, Any],
    keep: list[tuple[str, str]],
) -> list[UUID]:
    """Delete, inside the caller's transaction, the rows whose metadata contains ``metadata`` except the
    (source_id, chunk_key) pairs in ``keep`` (e.g. a source's rows of earlier revisions); returns their vector
    point ids (pass them to ``remove_points`` after the commit)."""
    return repo.delete_stale(
        conn,
        account_id=account_id,
        namespace=namespace,
        source_type=source_type,
        metadata=metadata,
        keep=keep,
    )


def record_query(conn: Conn, account_id: UUID, **fields: Any) -> UUID:
    """Log one search in ``retrieval_queries`` inside the caller's transaction; returns its query id."""
    return repo.record_query(conn, account_id=account_id, **fields)


def indexing_state(
    conn: Conn, account_id: UUID, *, namespace: str, source_type: str, source_ids: list[str]
) -> dict[str, dict[str, Any]]:
    return repo.status_of(
        conn, account_id=account_id, namespace=namespace, source_type=source_type, source_ids=source_ids
    )


def waiting_count(conn: Conn, account_id: UUID, namespace: str | None = None) -> int:
    """How many of the account's projections (of one namespace, or all) still wait for their vector (failed, or
    pending past a grace), inside the caller's transaction: what ``Retrieval.heal`` has left to do."""
    return repo.count_waiting(conn, account_id=account_id, namespace=namespace)


def waiting_by(
    conn: Conn, account_id: UUID, *, namespace: str, key: str, values: list[str]
) -> dict[str, int]:
    """``waiting_count`` of one namespace per value of a metadata ``key`` (e.g. a knowledge source's chunks by
    ``source_id``), for ``values``; a value with nothing waiting is absent."""
    return repo.count_waiting_by(conn, account_id=account_id, namespace=namespace, key=key, values=values)


def accounts_waiting(conn: Conn, *, heal_kind: str, limit: int) -> list[UUID]:
    """Accounts whose projections wait for their vector and that have no unfinished ``heal_kind`` job (the sweep
    that queues one each), read across accounts in the caller's owner-less transaction."""
    return repo.accounts_waiting(conn, heal_kind=heal_kind, limit=limit)


def rebuild_lexical(
    db: TenantTransactions,
    *,
    admin_account_id: UUID,
    admin_user_id: UUID,
    account_id: UUID | None,
    namespace: str | None,
    batch_size: int,
) -> LexicalRebuild:
    """Recompute ``lexical_text`` from stored title and content, in id order, one transaction per batch, across
    accounts (through the admin's SECURITY DEFINER functions: the database checks the admin role). Nothing is
    re-embedded and the vector index is not touched. Raises ``Forbidden`` for a non-admin."""
    updated = scanned = batches = 0
    after: UUID | None = None
    try:
        while True:
            with db.tenant(admin_account_id) as conn:
                rows = repo.admin_lexical_batch(
                    conn,
                    admin_user_id=admin_user_id,
                    account_id=account_id,
                    namespace=namespace,
                    after=after,
                    limit=batch_size,
                )
                if not rows:
                    break
                texts = [lexical.projection(r["title"], r["content"]) for r in rows]
                updated += repo.admin_lexical_update(
                    conn, admin_user_id=admin_user_id, ids=[r["id"] for r in rows], texts=texts
                )
            scanned += len(rows)
            batches += 1
            after = rows[-1]["id"]
            if len(rows) < batch_size:
                break
    except Forbidden:  # the database refused a non-admin (core.dberrors translated it)
        raise Forbidden("admin access required") from None
    return LexicalRebuild(updated=updated, scanned=scanned, batches=batches)


class Retrieval:
    """Indexing and hybrid search over one embedder and one vector index.

    Parts not given are built from ``settings`` (default: the process settings) on first use, by
    ``config.build_embedder`` / ``config.build_vector_index``; a failed build is not cached, so a transient error
    is retried on the next call. Tests build their own (``Retrieval(embedder=..., index=...)``) and pass it where
    the app would pass ``get_retrieval()``. ``close()`` closes what this object built.
    """

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        index: VectorIndex | None = None,
        settings: RetrievalSettings | None = None,
        index_batch: int = INDEX_BATCH,
        vector_leg_timeout_s: float = VECTOR_LEG_TIMEOUT_S,
        embed_grace_s: float | None = None,
    ) -> None:
        self._settings = settings
        self._embedder = embedder
        self._index = index
        self._built_index = False
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None
        self.index_batch = index_batch
        self.vector_leg_timeout_s = vector_leg_timeout_s
        self._embed_grace_s = embed_grace_s

    def __repr__(self) -> str:
        return f"Retrieval(embedder={self._embedder!r}, index={self._index!r})"

    @property
    def embed_grace_s(self) -> float:
        """How long a writer's transaction waits for an overlapped embedding before it commits the row
        ``pending`` and finishes the indexing holding no connection (``PendingIndex``; ``MEMORY_EMBED_GRACE_MS``)."""
        if self._embed_grace_s is None:
            self._embed_grace_s = (self._settings or get_retrieval_settings()).memory_embed_grace_ms / 1000
        return self._embed_grace_s

    # -- parts -------------------------------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        if self._embedder is None:
            with self._lock:
                if self._embedder is None:
                    from agentmate.retrieval import config

                    self._embedder = config.build_embedder(self._settings or get_retrieval_settings())
        return self._embedder

    def vector_index(self) -> VectorIndex:
        """The vector index (built with the embedder's vector size when not given)."""
        if self._index is None:
            dimensions = self.embedder().dimensions
            with self._lock:
                if self._index is None:
                    from agentmate.retrieval import config

                    self._index = config.build_vector_index(
                        self._settings or get_retrieval_settings(), dimensions
                    )
                    self._built_index = True
        return self._index

    def close(self) -> None:
        """Stop the vector leg's threads and close the vector index this object built."""
        with self._lock:
            pool, self._pool = self._pool, None
            index = self._index if self._built_index else None
            if index is not None:
                self._index, self._built_index = None, False
        if pool is not None:
            pool.shutdown(wait=True)
        if index is not None:
            index.close()

    def _executor(self) -> ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=VECTOR_WORKERS, thread_name_prefix="retrieval-vector"
                    )
        return self._pool

    # -- vector index adapter ----------------------------------------------------------------------------------

    def _vector_upsert(
        self, account_id: UUID, dimensions: int, points: list[tuple[UUID, list[float], dict[str, Any]]]
    ) -> str:
        from agentmate.retrieval.vector_index import VectorPoint

        index = self.vector_index()
        index.ensure_collection(dimensions)
        index.upsert(str(account_id), [VectorPoint(str(pid), vec, payload) for pid, vec, payload in points])
        return index.collection

    def _vector_search(
        self, account_id: UUID, query: Query, vector: list[float], limit: int
    ) -> list[tuple[UUID, float]]:
        hits = self.vector_index().search(
            str(account_id), query.namespace, vector, limit, _vector_filters(query)
        )
        return [(UUID(h.id), float(h.score)) for h in hits]

    # -- indexing ----------------------------------------------------------------------------------------------

    def index_document(self, db: TenantTransactions, account_id: UUID, doc: DocumentIn) -> IndexResult:
        """Index one document; never raises for embedding or vector-index failures (they are recorded)."""
        return self.index_documents(db, account_id, [doc])[0]

    def index_documents(
        self, db: TenantTransactions, account_id: UUID, docs: list[DocumentIn]
    ) -> list[IndexResult]:
        """Index documents in batches: one upsert statement, one embedding call and one vector upsert per batch."""
        results: list[IndexResult] = []
        for start in range(0, len(docs), self.index_batch):
            results.extend(self._index_batch(db, account_id, docs[start : start + self.index_batch]))
        return results

    def _index_batch(
        self, db: TenantTransactions, account_id: UUID, docs: list[DocumentIn]
    ) -> list[IndexResult]:
        """Write the changed documents as ``pending``, embed them and upsert their vectors (outside any
        transaction: a slow embedding endpoint holds no connection), then mark them ``indexed`` or ``failed``."""
        prepared = [_prepare(d) for d in docs]
        embedder: Embedder | None = None
        build_error: Exception | None = None
        try:
            embedder = self.embedder()
        except Exception as exc:  # configuration failure: rows still go in, marked failed below
            build_error = exc
        with db.tenant(account_id) as conn:
            kept, rows = _write_pending(conn, account_id, prepared, embedder.name if embedder else None)
        if not rows:
            return [kept[i] for i in range(len(prepared))]
        error: str | None = None
        collection = ""
        try:
            if embedder is None:
                raise build_error or RuntimeError("no embedder")
            collection = self._embed_and_upsert(account_id, embedder, rows)
        except Exception as exc:
            error = _describe(exc) if not isinstance(exc, LegError) else exc.reason
            logger.warning("retrieval indexing failed", extra={"error": error, "documents": len(rows)})
        written = iter(self._record_outcome(db, account_id, rows, embedder, collection, error))
        return [kept[i] if i in kept else next(written) for i in range(len(prepared))]

    def _embed_and_upsert(self, account_id: UUID, embedder: Embedder, rows: list[repo.StoredDocument]) -> str:
        """Embed the rows and upsert their vectors; returns the vector collection."""
        vectors = embedder.embed([r.content or r.title for r in rows])
        return self._vector_upsert(
            account_id,
            embedder.dimensions,
            [(r.point_id, v, _vector_payload(r)) for r, v in zip(rows, vectors, strict=True)],
        )

    @staticmethod
    def _record_outcome(
        db: TenantTransactions,
        account_id: UUID,
        rows: list[repo.StoredDocument],
        embedder: Embedder | None,
        collection: str,
        error: str | None,
    ) -> list[IndexResult]:
        """Mark the written rows ``indexed`` (vectors stored) or ``failed`` with the error; a row whose content a
        newer write replaced meanwhile is left to that write."""
        ids, hashes = [r.id for r in rows], [r.content_hash for r in rows]
        with db.tenant(account_id) as conn:
            if error is None and embedder is not None:
                repo.mark_indexed(
                    conn,
                    account_id=account_id,
                    document_ids=ids,
                    content_hashes=hashes,
                    embedding_model=embedder.name,
                    embedding_dimension=embedder.dimensions,
                    vector_collection=collection,
                )
                return [IndexResult("indexed", i) for i in ids]
            repo.mark_failed(
                conn, account_id=account_id, document_ids=ids, content_hashes=hashes, error=error or "failed"
            )
        return [IndexResult("failed", i, error) for i in ids]

    def begin_index(self, text: str) -> PendingIndex:
        """The first step of indexing one new document inside its writer's transaction: start embedding ``text``
        (the document's content, or its title when it has none) before the transaction opens, so the embedding
        overlaps the writer's database work. Finish it with ``PendingIndex.complete(conn, ...)`` in that
        transaction.

        An embedder that can send its request now and read the reply later (``OpenAIEmbedder.start``, over a
        kept-alive connection) overlaps on this thread: no worker-thread hand-off, no second thread contending for
        the GIL (bench/peer_mem0.py). Any other embedding runs on a worker thread."""
        try:
            embedder = self.embedder()
        except Exception as exc:  # configuration failure: the row still goes in, marked failed
            return PendingIndex(self, None, None, text, exc)
        start = getattr(embedder, "start", None)
        try:
            pending = start([text]) if start is not None else None
        except Exception as exc:  # a request that could not even be sent: the row goes in, marked failed
            return PendingIndex(self, embedder, None, text, exc)
        if pending is None:
            pending = self._executor().submit(embedder.embed, [text])
        return PendingIndex(self, embedder, pending, text, None)

    def heal(self, db: TenantTransactions, account_id: UUID, *, max_rows: int = 10_000) -> Healed:
        """Re-embed and re-index the account's waiting projections (``failed``, or ``pending`` past a grace), a
        batch at a time, until none is left, ``max_rows`` were tried, or the embedder or the vector index fails
        (then ``error`` says why and the rows stay as they were). Idempotent: a row healed meanwhile is skipped,
        and one whose content a newer write replaced is left to that write."""
        healed = tried = 0
        after: UUID | None = None
        error: str | None = None
        while tried < max_rows:
            with db.tenant(account_id) as conn:
                rows = repo.waiting(conn, account_id=account_id, limit=self.index_batch, after=after)
            if not rows:
                break
            tried += len(rows)
            after = rows[-1].id
            try:
                embedder = self.embedder()
                collection = self._embed_and_upsert(account_id, embedder, rows)
            except Exception as exc:
                error = _describe(exc)
                logger.warning("retrieval heal failed", extra={"error": error, "documents": len(rows)})
                break
            results = self._record_outcome(db, account_id, rows, embedder, collection, None)
            healed += len(results)
        with db.tenant(account_id) as conn:
            left = repo.count_waiting(conn, account_id=account_id)
        return Healed(healed=healed, waiting=left, error=error)

    def remove_points(self, account_id: UUID, point_ids: list[UUID]) -> str | None:
        """Best-effort vector deletion; returns a reason on failure. A stale point is harmless: hits are hydrated
        from Postgres, and a point without an ``indexed`` row is dropped."""
        if not point_ids:
            return None
        try:
            self.vector_index().delete(str(account_id), [str(p) for p in point_ids])
        except Exception as exc:
            reason = _describe(exc)
            logger.warning(
                "retrieval vector delete failed", extra={"error": reason, "points": len(point_ids)}
            )
            return reason
        return None

    def remove_account(self, account_id: UUID) -> None:
        """Delete every vector of the account (account deletion); raises ServiceUnavailable when the index fails,
        so the caller can stop before deleting the rows that would let it retry."""
        try:
            self.vector_index().delete_account(str(account_id))
        except Exception as exc:
            logger.warning("retrieval account vector delete failed", extra={"error": _describe(exc)})
            raise ServiceUnavailable(
                "the vector index could not delete the account's vectors: retry"
            ) from exc

    # -- search ------------------------------------------------------------------------------------------------

    def _vector_candidates(
        self, account_id: UUID, query: Query, limit: int, timings: dict[str, float]
    ) -> list[tuple[UUID, float]]:
        try:
            embedder = self.embedder()
            t0 = time.perf_counter()
            vector = embedder.embed([query.text])[0]
            timings["embed"] = (time.perf_counter() - t0) * 1000
        except Exception as exc:
            raise LegError(_describe(exc)) from exc
        try:
            t0 = time.perf_counter()
            found = self._vector_search(account_id, query, vector, limit)
            timings["vector_search"] = (time.perf_counter() - t0) * 1000
            return found
        except Exception as exc:
            raise LegError(f"vector index unavailable: {_describe(exc)}") from exc

    def begin_search(self, account_id: UUID, query: Query) -> PendingSearch:
        """The first step of a hybrid search: start the vector leg (query embedding + vector search) on a worker
        thread, before any transaction is open. Finish it with ``PendingSearch.complete(conn)`` inside a tenant
        transaction the caller opens with ``pipeline=True``; the caller reads what it needs beside the hits
        (e.g. the source rows of the hits) in that same transaction::

            pending = rt.begin_search(account_id, query)
            with db.tenant(account_id, pipeline=True) as conn:
                result = pending.complete(conn)
                rows = repo.rows_of(conn, ...)
        """
        limit = candidate_limit(query.top_k)
        timings: dict[str, float] = {}
        vector_future = (
            self._executor().submit(self._vector_candidates, account_id, query, limit, timings)
            if "vector" in query.legs
            else None
        )
        tokens = lexical.search_tokens(query.text) if "lexical" in query.legs else []
        return PendingSearch(
            account_id, query, limit, tokens, vector_future, timings, self.vector_leg_timeout_s
        )

    def search(self, db: TenantTransactions, account_id: UUID, query: Query) -> SearchResult:
        """Hybrid search in a tenant transaction of its own (``begin_search`` for a caller that reads more in
        the same transaction)."""
        pending = self.begin_search(account_id, query)
        with db.tenant(account_id, pipeline=True) as conn:
            return pending.complete(conn)


class PendingSearch:
    """A hybrid search whose vector leg is running (``Retrieval.begin_search``); ``complete(conn)`` does the rest
    on the caller's tenant transaction.

    The vector leg runs on a worker thread beside the lexical leg, which waits on Postgres, so a search costs
    about the slower leg rather than the sum of both; it has a deadline (``vector_leg_timeout_s``): a slow
    embedding endpoint or vector store degrades the search instead of stalling it. The transaction is in
    pipeline mode (``TenantTransactions.tenant(pipeline=True)``): BEGIN, the tenant setting and each leg's
    savepoint travel with the leg's query, so a search costs a round trip per query plus COMMIT (9 round trips
    before, docs/benchmarks.md issue 11), and the caller's reads after it run one statement per ``execute``.
    """

    def __init__(
        self,
        account_id: UUID,
        query: Query,
        limit: int,
        tokens: list[str],
        vector_future: Future[list[tuple[UUID, float]]] | None,
        timings: dict[str, float],
        vector_leg_timeout_s: float,
    ) -> None:
        self._account_id = account_id
        self._query = query
        self._limit = limit
        self._tokens = tokens
        self._vector_future = vector_future
        self._timings = timings
        self._timeout_s = vector_leg_timeout_s
        self._degraded: list[LegFailure] = []

    def complete(self, conn: Conn) -> SearchResult:
        """Run the lexical leg, wait for the vector leg and hydrate its hits, then fuse both (each leg in a
        savepoint: a failed leg degrades the search; both failed is a ``ServiceUnavailable``)."""
        lexical_rows = self._lexical_leg(conn)
        vector_found = self._vector_leg()
        vector_rows = self._hydrate(conn, vector_found) if vector_found is not None else None
        lexical_failed = any(d.leg == "lexical" for d in self._degraded)
        if lexical_failed and vector_rows is None:
            raise ServiceUnavailable(
                "search is unavailable: both the lexical and the vector leg failed",
                extra={"degraded": [{"leg": d.leg, "reason": d.reason} for d in self._degraded]},
            )
        return self._fuse(lexical_rows or [], vector_rows or [])

    def _degrade(self, leg: Literal["lexical", "vector"], reason: str) -> None:
        self._degraded.append(LegFailure(leg, reason))
        logger.warning(f"retrieval {leg} leg degraded", extra={"reason": reason})

    def _lexical_leg(self, conn: Conn) -> list[dict[str, Any]] | None:
        """The lexical candidates; None when the query has no tokens or the leg failed (then degraded)."""
        t0 = time.perf_counter()
        rows: list[dict[str, Any]] | None = None
        if self._tokens:
            query = self._query
            try:
                with savepoint(conn, "retrieval_lexical"):
                    rows = repo.lexical_search(
                        conn,
                        account_id=self._account_id,
                        namespace=query.namespace,
                        tokens=self._tokens,
                        fallback_tsquery=lexical.tsquery(query.text),
                        limit=self._limit,
                        source_type=query.source_type,
                        metadata=query.metadata,
                        pool=query.lexical_pool,
                    )
            except Exception as exc:
                self._degrade("lexical", f"lexical query failed: {_describe(exc)}")
        self._timings["lexical"] = (time.perf_counter() - t0) * 1000
        return rows

    def _vector_leg(self) -> list[tuple[UUID, float]] | None:
        """The vector leg's (point id, similarity) pairs; None when it did not run or failed (then degraded)."""
        if self._vector_future is None:
            return None
        try:
            return self._vector_future.result(timeout=self._timeout_s)
        except FutureTimeout:
            self._degrade("vector", f"vector leg timed out after {self._timeout_s:g}s")
        except LegError as exc:
            self._degrade("vector", exc.reason)
        return None

    def _hydrate(
        self, conn: Conn, found: list[tuple[UUID, float]]
    ) -> list[tuple[dict[str, Any], float]] | None:
        """The vector hits' ``indexed`` rows with their similarity (a stale point has none and is dropped);
        None when hydration failed (then degraded)."""
        t0 = time.perf_counter()
        rows: list[tuple[dict[str, Any], float]] | None = None
        try:
            with savepoint(conn, "retrieval_vector"):
                by_point = repo.hydrate_points(
                    conn,
                    account_id=self._account_id,
                    namespace=self._query.namespace,
                    point_ids=[p for p, _ in found],
                    source_type=self._query.source_type,
                    metadata=self._query.metadata,
                )
            rows = [(by_point[p], s) for p, s in found if p in by_point]
        except Exception as exc:
            self._degrade("vector", f"vector hydration failed: {_describe(exc)}")
        self._timings["hydrate"] = (time.perf_counter() - t0) * 1000
        return rows

    def _fuse(
        self, lexical_rows: list[dict[str, Any]], vector_rows: list[tuple[dict[str, Any], float]]
    ) -> SearchResult:
        """Reciprocal rank fusion of both legs' candidates into the top ``top_k`` hits."""
        docs: dict[str, dict[str, Any]] = {}
        coverage: dict[str, float] = {}
        lex_cands = []
        for row in lexical_rows:
            docs[str(row["id"])] = row
            coverage[str(row["id"])] = float(row["lexical_coverage"])
            lex_cands.append(fusion.Candidate(str(row["id"]), float(row["lexical_score"]), row["updated_at"]))
        vec_cands = []
        for row, score in vector_rows:
            docs.setdefault(str(row["id"]), row)
            vec_cands.append(fusion.Candidate(str(row["id"]), score, row["updated_at"]))
        fused = fusion.reciprocal_rank_fusion(lex_cands, vec_cands, limit=self._query.top_k)
        return SearchResult(
            hits=[_hit(docs[f.id], f, coverage.get(f.id)) for f in fused],
            degraded=self._degraded,
            candidate_count=len(docs),
            embedding_ms=self._timings.get("embed", 0.0),
            timings_ms=self._timings,
        )


def _hit(row: dict[str, Any], fused: fusion.FusedHit, coverage: float | None) -> Hit:
    document = dict(row)
    document.pop("lexical_score", None)
    document.pop("lexical_coverage", None)
    return Hit(
        document=document,
        score=fused.score,
        channels=fused.channels,
        lexical_score=fused.lexical_score,
        vector_score=fused.vector_score,
        lexical_rank=fused.lexical_rank,
        vector_rank=fused.vector_rank,
        lexical_coverage=coverage,
    )


_retrieval: Retrieval | None = None
_retrieval_lock = threading.Lock()


class PendingIndex:
    """One new document whose embedding is running (``Retrieval.begin_index``). ``complete`` waits for the vector
    only a short grace (``embed_grace_s``) inside its writer's transaction: a vector ready within it is upserted
    into the vector index and the document's row inserted already ``indexed`` (``failed`` if embedding failed), in
    the statement that travels with the writer's COMMIT, so the projection costs the transaction no round trip of
    its own. The row's id and point id are chosen here, which is what lets the vector go in before the row. A vector
    not ready in the grace leaves the row ``pending`` (``complete`` answers None): the caller commits, releases its
    connection, and calls ``finish``, which waits for the rest of ``vector_leg_timeout_s`` holding no connection
    and records the outcome in a second short transaction, where the caller queues the heal on a failure
    (``on_failed``). A slow embedder thus never holds a pooled connection longer than the grace (plus, for a
    reply that began to arrive within it, ``embedders.FINISH_READING_S`` to finish arriving). A ``pending`` row
    left by a crash between the two transactions is the heal sweep's (it re-indexes rows pending past its grace).
    A vector upserted for a transaction that then rolls back is a stale point, which is never served (hits are
    hydrated from ``indexed`` rows); nothing acknowledges it."""

    def __init__(
        self,
        retrieval: Retrieval,
        embedder: Embedder | None,
        future: PendingVectors | None,
        text: str,
        error: Exception | None,
    ) -> None:
        self._rt = retrieval
        self._embedder = embedder
        self._future = future
        self._text = text
        self._error = error
        self._doc: repo.PreparedDocument | None = None
        self._document_id = uuid4()
        self._point_id = uuid4()
        self._account_id: UUID | None = None
        self._deadline = 0.0
        self._collection: str | None = None

    def discard(self) -> None:
        """The document was not written after all (a replay, a deduplicated store): drop the embedding."""
        if self._future is not None:
            self._future.cancel()

    @property
    def document_id(self) -> UUID | None:
        """The row ``complete`` wrote."""
        return None if self._doc is None else self._document_id

    def complete(self, conn: Conn, account_id: UUID, doc: DocumentIn) -> IndexResult | None:
        """Insert the document's row ``indexed`` (or ``failed``) when the vector comes within the grace, else
        ``pending`` and answer None (finish with ``finish`` after the commit)."""
        prepared = self._doc = _prepare(doc)
        self._account_id = account_id
        timeout = self._rt.vector_leg_timeout_s
        grace = min(self._rt.embed_grace_s, timeout)
        self._deadline = time.monotonic() + timeout
        if (
            self._error is None and (prepared["content"] or prepared["title"]) != self._text
        ):  # pragma: no cover
            self._error = RuntimeError("the document's text changed after its embedding started")
        if self._future is not None and self._error is None and grace < timeout:
            try:
                self._future.result(timeout=grace)
            except FutureTimeout:
                self._insert(conn, "pending")
                return None
            except Exception:  # _settle records it
                pass
        self._settle()
        result = self._outcome()
        self._insert(conn, result.status, result.error)
        return result

    def finish(
        self,
        db: TenantTransactions,
        account_id: UUID,
        on_failed: Callable[[Conn], object] | None = None,
    ) -> IndexResult:
        """After the writer's commit, for a row ``complete`` left ``pending``: wait for the vector (the rest of
        ``vector_leg_timeout_s``) and upsert it with no connection held, then mark the row in one short
        transaction (``on_failed(conn)`` runs in it when indexing failed)."""
        self._settle()
        result = self._outcome()
        doc = self._doc
        assert doc is not None
        with db.tenant(account_id, pipeline=True) as conn:
            if result.status == "indexed":
                assert self._embedder is not None
                repo.mark_indexed(
                    conn,
                    account_id=account_id,
                    document_ids=[self._document_id],
                    content_hashes=[doc["content_hash"]],
                    embedding_model=self._embedder.name,
                    embedding_dimension=self._embedder.dimensions,
                    vector_collection=self._collection,
                )
            else:
                repo.mark_failed(
                    conn,
                    account_id=account_id,
                    document_ids=[self._document_id],
                    content_hashes=[doc["content_hash"]],
                    error=result.error or "",
                )
                if on_failed is not None:
                    on_failed(conn)
        return result

    def _insert(
        self, conn: Conn, status: Literal["pending", "indexed", "failed"], error: str | None = None
    ) -> None:
        doc, account_id = self._doc, self._account_id
        assert doc is not None and account_id is not None
        embedder = self._embedder if status == "indexed" else None  # what an indexed row records
        repo.insert_document(
            conn,
            account_id=account_id,
            document_id=self._document_id,
            point_id=self._point_id,
            doc=doc,
            status=status,
            error=error,
            embedding_model=embedder.name if embedder else None,
            embedding_dimension=embedder.dimensions if embedder else None,
            vector_collection=self._collection if embedder else None,
        )

    def _settle(self) -> None:
        """Wait for the vector until the deadline and upsert it into the vector index (no database work); any
        failure is kept in ``_error``."""
        doc, account_id = self._doc, self._account_id
        if self._error is not None or doc is None or account_id is None:
            return
        try:
            if self._embedder is None or self._future is None:
                raise RuntimeError("no embedder")
            vectors = self._future.result(timeout=max(0.0, self._deadline - time.monotonic()))
            payload = _payload(self._document_id, doc)
            self._collection = self._rt._vector_upsert(
                account_id=account_id,
                dimensions=self._embedder.dimensions,
                points=[(self._point_id, vectors[0], payload)],
            )
        except Exception as exc:  # FutureTimeout included
            self._error = exc

    def _outcome(self) -> IndexResult:
        if self._error is None and self._embedder is not None:
            return IndexResult("indexed", self._document_id)
        exc = self._error or RuntimeError("no embedder")
        error = (
            f"embedding took longer than {self._rt.vector_leg_timeout_s:g} s"
            if isinstance(exc, FutureTimeout)
            else _describe(exc)
        )
        logger.warning("retrieval indexing failed", extra={"error": error, "documents": 1})
        return IndexResult("failed", self._document_id, error)


def get_retrieval() -> Retrieval:
    """The execution environment's Retrieval, built from settings on first use (its parts are built lazily)."""
    global _retrieval
    if _retrieval is None:
        with _retrieval_lock:
            if _retrieval is None:
                _retrieval = Retrieval()
    return _retrieval


@snapstart.before_snapshot
def forget_retrieval() -> None:
    """Close the execution environment's Retrieval (the vector index handle: a Qdrant client's sockets or the
    embedded index's files, the vector leg's threads, an HTTP embedder's client and its API key) and forget it:
    no snapshot captures them; after a restore ``get_retrieval()`` builds a fresh one on first use."""
    global _retrieval
    with _retrieval_lock:
        retrieval, _retrieval = _retrieval, None
    if retrieval is None:
        return
    retrieval.close()
    close = getattr(retrieval._embedder, "close", None)
    if callable(close):
        close()
