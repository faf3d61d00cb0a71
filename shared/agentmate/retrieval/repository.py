"""SQL for the retrieval projection (``retrieval_documents``, migrations/0010_retrieval.sql).

Statements run inside the caller's tenant transaction; RLS scopes them to its account and the explicit
``account_id`` filters keep the (account_id, …) indexes in use. The lexical leg receives a tsquery text that
``agentmate.retrieval.lexical.tsquery`` built from tokens, never the user's raw text.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, NamedTuple, TypedDict
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

COLUMNS = (
    "id, namespace, source_type, source_id, chunk_key, title, content, content_hash, metadata, status, error, "
    "point_id, embedding_model, embedding_dimension, indexed_at, created_at, updated_at"
)
_D_COLUMNS = ", ".join("d." + c.strip() for c in COLUMNS.split(","))

# The query log (migrations/0056) is written by the server only; retrieval_documents is internal.
CONSTRAINTS = constraints(
    {
        "retrieval_queries_namespace_check": ("namespace", "a lowercase namespace name"),
        "retrieval_queries_query_check": ("query", "1 to 2000 characters"),
        "retrieval_queries_shape_check": ("filters", "filters is an object; hits and degraded are arrays"),
    }
)

# Statuses the lexical leg may serve (see retrieval_lexical_search): a failed row lost only its vector, a pending
# one is mid-write.
LEXICAL_STATUSES = ("indexed", "failed")

Key = tuple[str, str, str, str]
"""A document's source key: (namespace, source_type, source_id, chunk_key)."""


class PreparedDocument(TypedDict):
    """A document as indexing writes it (the statement parameters of ``upsert_pending``)."""

    namespace: str
    source_type: str
    source_id: str
    chunk_key: str
    title: str
    content: str
    content_hash: str
    metadata: dict[str, Any]
    lexical_text: str


class StoredDocument(NamedTuple):
    """A ``retrieval_documents`` row as indexing reads it back (``COLUMNS``)."""

    id: UUID
    namespace: str
    source_type: str
    source_id: str
    chunk_key: str
    title: str
    content: str
    content_hash: str
    metadata: dict[str, Any]
    status: str
    error: str | None
    point_id: UUID
    embedding_model: str | None
    embedding_dimension: int | None
    indexed_at: datetime | None
    created_at: datetime
    updated_at: datetime

    @property
    def key(self) -> Key:
        return (self.namespace, self.source_type, self.source_id, self.chunk_key)


def get_by_key(
    conn: Conn,
    *,
    account_id: UUID,
    namespace: str,
    source_type: str,
    source_id: str,
    chunk_key: str,
    lock: bool = False,
) -> StoredDocument | None:
    return (
        conn.cursor(row_factory=class_row(StoredDocument))
        .execute(
            f"""SELECT {COLUMNS} FROM retrieval_documents
                WHERE account_id = %(a)s AND namespace = %(ns)s AND source_type = %(st)s AND source_id = %(sid)s
                  AND chunk_key = %(ck)s {"FOR UPDATE" if lock else ""}""",
            {"a": account_id, "ns": namespace, "st": source_type, "sid": source_id, "ck": chunk_key},
        )
        .fetchone()
    )


def key_of(doc: PreparedDocument) -> Key:
    return (doc["namespace"], doc["source_type"], doc["source_id"], doc["chunk_key"])


def get_many_by_keys(
    conn: Conn, *, account_id: UUID, docs: list[PreparedDocument], lock: bool = False
) -> dict[Key, StoredDocument]:
    """Existing rows for the documents' source keys (one statement), keyed by source key."""
    if not docs:
        return {}
    rows = (
        conn.cursor(row_factory=class_row(StoredDocument))
        .execute(
            f"""SELECT {_D_COLUMNS} FROM retrieval_documents d
                JOIN unnest(%(ns)s::text[], %(st)s::text[], %(sid)s::text[], %(ck)s::text[]) AS k (ns, st, sid, ck)
                  ON d.namespace = k.ns AND d.source_type = k.st AND d.source_id = k.sid AND d.chunk_key = k.ck
                WHERE d.account_id = %(a)s {"FOR UPDATE OF d" if lock else ""}""",
            {
                "a": account_id,
                "ns": [d["namespace"] for d in docs],
                "st": [d["source_type"] for d in docs],
                "sid": [d["source_id"] for d in docs],
                "ck": [d["chunk_key"] for d in docs],
            },
        )
        .fetchall()
    )
    return {r.key: r for r in rows}


def delete_stale(
    conn: Conn,
    *,
    account_id: UUID,
    namespace: str,
    source_type: str,
    metadata: dict[str, Any],
    keep: list[tuple[str, str]],
) -> list[UUID]:
    """Delete the rows whose metadata contains ``metadata`` except the (source_id, chunk_key) pairs in ``keep``;
    returns the vector point ids to remove."""
    rows = conn.execute(
        """DELETE FROM retrieval_documents d
           WHERE d.account_id = %(a)s AND d.namespace = %(ns)s AND d.source_type = %(st)s
             AND d.metadata @> %(meta)s
             AND (d.source_id, d.chunk_key) NOT IN (SELECT * FROM unnest(%(sid)s::text[], %(ck)s::text[]))
           RETURNING d.point_id""",
        {
            "a": account_id,
            "ns": namespace,
            "st": source_type,
            "meta": Jsonb(metadata),
            "sid": [k[0] for k in keep],
            "ck": [k[1] for k in keep],
        },
    ).fetchall()
    return [r["point_id"] for r in rows]


def upsert_pending(conn: Conn, *, account_id: UUID, doc: PreparedDocument) -> StoredDocument:
    """Insert or replace one document by its source key, as ``pending`` (invisible to both legs)."""
    row = (
        conn.cursor(row_factory=class_row(StoredDocument))
        .execute(
            f"""INSERT INTO retrieval_documents
                (account_id, namespace, source_type, source_id, chunk_key, title, content, content_hash, metadata,
                 lexical_text, status)
            VALUES (%(a)s, %(namespace)s, %(source_type)s, %(source_id)s, %(chunk_key)s, %(title)s, %(content)s,
                    %(content_hash)s, %(metadata)s, %(lexical_text)s, 'pending')
            ON CONFLICT (account_id, namespace, source_type, source_id, chunk_key) DO UPDATE SET
                title = EXCLUDED.title, content = EXCLUDED.content, content_hash = EXCLUDED.content_hash,
                metadata = EXCLUDED.metadata, lexical_text = EXCLUDED.lexical_text, status = 'pending',
                error = NULL, updated_at = now()
            RETURNING {COLUMNS}""",
            {**doc, "a": account_id, "metadata": Jsonb(doc["metadata"])},
        )
        .fetchone()
    )
    assert row is not None
    return row


def insert_document(
    conn: Conn,
    *,
    account_id: UUID,
    document_id: UUID,
    point_id: UUID,
    doc: PreparedDocument,
    status: Literal["pending", "indexed", "failed"],
    error: str | None = None,
    embedding_model: str | None = None,
    embedding_dimension: int | None = None,
    vector_collection: str | None = None,
) -> None:
    """Insert a new document with the ids its caller chose (its vector may already be in the index under
    ``point_id``), in its final state when that is known. Its result is not read: in a pipelined transaction it
    travels with the next statement (COMMIT), and a failure surfaces there."""
    conn.execute(
        """INSERT INTO retrieval_documents
            (id, point_id, account_id, namespace, source_type, source_id, chunk_key, title, content, content_hash,
             metadata, lexical_text, status, error, embedding_model, embedding_dimension, vector_collection,
             indexed_at)
        VALUES (%(id)s, %(point)s, %(a)s, %(namespace)s, %(source_type)s, %(source_id)s, %(chunk_key)s, %(title)s,
                %(content)s, %(content_hash)s, %(metadata)s, %(lexical_text)s, %(status)s, %(error)s, %(model)s,
                %(dim)s, %(col)s, CASE WHEN %(status)s = 'indexed' THEN now() END)""",
        {
            **doc,
            "id": document_id,
            "point": point_id,
            "a": account_id,
            "metadata": Jsonb(doc["metadata"]),
            "status": status,
            "error": None if error is None else error[:2000],
            "model": embedding_model,
            "dim": embedding_dimension,
            "col": vector_collection,
        },
    )


def upsert_many_pending(
    conn: Conn, *, account_id: UUID, docs: list[PreparedDocument]
) -> list[StoredDocument]:
    """Batch form of ``upsert_pending`` (one statement), rows returned in input order."""
    if not docs:
        return []
    keys = (
        "namespace",
        "source_type",
        "source_id",
        "chunk_key",
        "title",
        "content",
        "content_hash",
        "lexical_text",
    )
    params: dict[str, Any] = {k: [d[k] for d in docs] for k in keys}  # type: ignore[literal-required]
    params["metadata"] = [Jsonb(d["metadata"]) for d in docs]
    params["ord"] = list(range(len(docs)))
    rows = (
        conn.cursor(row_factory=class_row(StoredDocument))
        .execute(
            f"""WITH input AS (
                SELECT * FROM unnest(%(ord)s::int[], %(namespace)s::text[], %(source_type)s::text[],
                                     %(source_id)s::text[], %(chunk_key)s::text[], %(title)s::text[],
                                     %(content)s::text[], %(content_hash)s::text[], %(metadata)s::jsonb[],
                                     %(lexical_text)s::text[])
                    AS t (ord, namespace, source_type, source_id, chunk_key, title, content, content_hash, metadata,
                          lexical_text)
            ), upserted AS (
                INSERT INTO retrieval_documents
                    (account_id, namespace, source_type, source_id, chunk_key, title, content, content_hash,
                     metadata, lexical_text, status)
                SELECT %(a)s, namespace, source_type, source_id, chunk_key, title, content, content_hash, metadata,
                       lexical_text, 'pending'
                FROM input ORDER BY ord
                ON CONFLICT (account_id, namespace, source_type, source_id, chunk_key) DO UPDATE SET
                    title = EXCLUDED.title, content = EXCLUDED.content, content_hash = EXCLUDED.content_hash,
                    metadata = EXCLUDED.metadata, lexical_text = EXCLUDED.lexical_text, status = 'pending',
                    error = NULL, updated_at = now()
                RETURNING {COLUMNS}
            )
            SELECT u.* FROM upserted u JOIN input i
              ON (i.namespace, i.source_type, i.source_id, i.chunk_key)
               = (u.namespace, u.source_type, u.source_id, u.chunk_key)
            ORDER BY i.ord""",
            {**params, "a": account_id},
        )
        .fetchall()
    )
    return rows


def mark_indexed(
    conn: Conn,
    *,
    account_id: UUID,
    document_ids: list[UUID],
    content_hashes: list[str],
    embedding_model: str,
    embedding_dimension: int,
    vector_collection: str | None,
) -> int:
    """Flip pending rows to ``indexed`` unless a newer write replaced their content meanwhile."""
    if not document_ids:
        return 0
    return conn.execute(
        """UPDATE retrieval_documents d SET status = 'indexed', error = NULL, indexed_at = now(),
                  embedding_model = %(m)s, embedding_dimension = %(dim)s, vector_collection = %(col)s
           FROM unnest(%(ids)s::uuid[], %(hashes)s::text[]) AS u (id, content_hash)
           WHERE d.account_id = %(a)s AND d.id = u.id AND d.content_hash = u.content_hash""",
        {
            "a": account_id,
            "ids": document_ids,
            "hashes": content_hashes,
            "m": embedding_model,
            "dim": embedding_dimension,
            "col": vector_collection,
        },
    ).rowcount


def mark_failed(
    conn: Conn, *, account_id: UUID, document_ids: list[UUID], content_hashes: list[str], error: str
) -> int:
    """Record an indexing failure; the row keeps serving the lexical leg."""
    if not document_ids:
        return 0
    return conn.execute(
        """UPDATE retrieval_documents d SET status = 'failed', error = %(e)s
           FROM unnest(%(ids)s::uuid[], %(hashes)s::text[]) AS u (id, content_hash)
           WHERE d.account_id = %(a)s AND d.id = u.id AND d.content_hash = u.content_hash""",
        {"a": account_id, "ids": document_ids, "hashes": content_hashes, "e": error[:2000]},
    ).rowcount


def delete_source(
    conn: Conn, *, account_id: UUID, namespace: str, source_type: str, source_id: str
) -> list[UUID]:
    """Delete every chunk of one source record; returns the vector point ids to remove."""
    rows = conn.execute(
        """DELETE FROM retrieval_documents
           WHERE account_id = %(a)s AND namespace = %(ns)s AND source_type = %(st)s AND source_id = %(sid)s
           RETURNING point_id""",
        {"a": account_id, "ns": namespace, "st": source_type, "sid": source_id},
    ).fetchall()
    return [r["point_id"] for r in rows]


def status_of(
    conn: Conn, *, account_id: UUID, namespace: str, source_type: str, source_ids: list[str]
) -> dict[str, dict[str, Any]]:
    """Current indexing state per source id (first chunk by key)."""
    if not source_ids:
        return {}
    rows = conn.execute(
        """SELECT DISTINCT ON (source_id) source_id, id, status, error FROM retrieval_documents
           WHERE account_id = %(a)s AND namespace = %(ns)s AND source_type = %(st)s AND source_id = ANY(%(ids)s)
           ORDER BY source_id, chunk_key""",
        {"a": account_id, "ns": namespace, "st": source_type, "ids": source_ids},
    ).fetchall()
    return {r["source_id"]: r for r in rows}


def _filters(source_type: str | None, metadata: dict[str, Any] | None, params: dict[str, Any]) -> str:
    sql = ""
    if source_type:
        sql += " AND d.source_type = %(source_type)s"
        params["source_type"] = source_type
    if metadata:
        sql += " AND d.metadata @> %(meta)s"
        params["meta"] = Jsonb(metadata)
    return sql


def lexical_search(
    conn: Conn,
    *,
    account_id: UUID,
    namespace: str,
    tokens: list[str],
    fallback_tsquery: str | None,
    limit: int,
    source_type: str | None = None,
    metadata: dict[str, Any] | None = None,
    pool: int | None = None,
) -> list[dict[str, Any]]:
    """Rows ranked by BM25 over the query's terms, best first (newer first on ties).

    The ranking runs in ``retrieval_bm25_search`` (0084): stemmed terms, stop words dropped, any term may match,
    the candidate pool (``pool``, default 8 x limit, at least 400) filled rarest term first. A query of stop words
    only falls back to ``fallback_tsquery`` (every word required, 0014). The function reads the tenant from the
    transaction, as 0011 explains; the rows are then read back under RLS.
    """
    rows = conn.execute(
        # LATERAL ... LIMIT 1 (never flattened into a join): one primary-key lookup per ranked id, whatever row
        # count the planner guesses for the function (a hash join over the account's rows would cost 25 ms at 10k).
        f"""SELECT {_D_COLUMNS}, s.lexical_score, s.lexical_coverage
            FROM retrieval_bm25_search(%(ns)s, %(tokens)s, %(limit)s, %(st)s, %(meta)s, %(pool)s, %(q)s) AS s
            CROSS JOIN LATERAL (
                SELECT * FROM retrieval_documents r WHERE r.id = s.id AND r.account_id = %(a)s LIMIT 1
            ) AS d
            ORDER BY s.lexical_score DESC, d.updated_at DESC, d.id""",
        {
            "a": account_id,
            "ns": namespace,
            "tokens": tokens,
            "q": fallback_tsquery,
            "limit": limit,
            "st": source_type or None,
            "meta": Jsonb(metadata) if metadata else None,
            "pool": pool,
        },
    ).fetchall()
    return rows


def hydrate_points(
    conn: Conn,
    *,
    account_id: UUID,
    namespace: str,
    point_ids: list[UUID],
    source_type: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[UUID, dict[str, Any]]:
    """Rows behind vector hits, keyed by point id: only ``indexed`` rows (stale points drop out).

    Driven by the point ids (one unique-index lookup each, LATERAL ... LIMIT 1 so it is never flattened): with
    statistics older than a bulk load the planner otherwise scanned the account's whole namespace (1,000 rows
    read to return 20 at 1,000 skill cards)."""
    if not point_ids:
        return {}
    params: dict[str, Any] = {"a": account_id, "ns": namespace, "ids": point_ids}
    extra = _filters(source_type, metadata, params)
    rows = conn.execute(
        f"""SELECT {_D_COLUMNS} FROM unnest(%(ids)s::uuid[]) AS p(point_id)
            CROSS JOIN LATERAL (SELECT * FROM retrieval_documents r WHERE r.point_id = p.point_id LIMIT 1) AS d
            WHERE d.account_id = %(a)s AND d.namespace = %(ns)s AND d.status = 'indexed'{extra}""",
        params,
    ).fetchall()
    return {r["point_id"]: r for r in rows}


# -- operator repair (SECURITY DEFINER functions of 0010_retrieval.sql) -----------------------------------------


def admin_lexical_batch(
    conn: Conn,
    *,
    admin_user_id: UUID,
    account_id: UUID | None,
    namespace: str | None,
    after: UUID | None,
    limit: int,
) -> list[dict[str, Any]]:
    return conn.execute(
        "SELECT id, title, content, lexical_text FROM admin_lexical_batch(%(u)s, %(a)s, %(ns)s, %(after)s, %(n)s)",
        {"u": admin_user_id, "a": account_id, "ns": namespace, "after": after, "n": limit},
    ).fetchall()


def admin_lexical_update(conn: Conn, *, admin_user_id: UUID, ids: list[UUID], texts: list[str]) -> int:
    row = conn.execute(
        "SELECT admin_lexical_update(%(u)s, %(ids)s, %(texts)s) AS n",
        {"u": admin_user_id, "ids": ids, "texts": texts},
    ).fetchone()
    return int(row["n"]) if row else 0


# -- the query log (retrieval_queries) ---------------------------------------------------------------------------


def record_query(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID | None,
    key_id: UUID | None,
    namespace: str,
    query: str,
    filters: dict[str, Any],
    top_k: int,
    hits: list[dict[str, Any]],
    degraded: list[dict[str, Any]],
) -> UUID:
    row = conn.execute(
        """INSERT INTO retrieval_queries (account_id, user_id, key_id, namespace, query, filters, top_k, hits,
                                          hit_count, degraded)
           VALUES (%(a)s, %(u)s, %(k)s, %(ns)s, %(q)s, %(filters)s, %(top_k)s, %(hits)s, %(n)s, %(degraded)s)
           RETURNING id""",
        {
            "a": account_id,
            "u": user_id,
            "k": key_id,
            "ns": namespace,
            "q": query,
            "filters": Jsonb(filters),
            "top_k": top_k,
            "hits": Jsonb(hits),
            "n": len(hits),
            "degraded": Jsonb(degraded),
        },
    ).fetchone()
    assert row is not None
    return UUID(str(row["id"]))


class QueryRow(TypedDict):
    """A ``retrieval_queries`` row as ``get_query`` reads it (what ``record_query`` wrote)."""

    id: UUID
    namespace: str
    query: str
    filters: dict[str, Any]
    top_k: int
    hits: list[dict[str, Any]]
    hit_count: int
    degraded: list[dict[str, Any]]
    created_at: datetime


def get_query(conn: Conn, *, account_id: UUID, query_id: UUID) -> QueryRow | None:
    return (
        conn.cursor(row_factory=class_row(QueryRow))
        .execute(
            """SELECT id, namespace, query, filters, top_k, hits, hit_count, degraded, created_at
               FROM retrieval_queries WHERE account_id = %(a)s AND id = %(id)s""",
            {"a": account_id, "id": query_id},
        )
        .fetchone()
    )


# A row still ``pending`` this long after its write lost its indexer (a crash between the write and the outcome).
STALE_PENDING_SECONDS = 300
_WAITING = """account_id = %(a)s AND (status = 'failed'
              OR (status = 'pending' AND updated_at < now() - make_interval(secs => %(stale)s)))"""


def waiting(conn: Conn, *, account_id: UUID, limit: int, after: UUID | None = None) -> list[StoredDocument]:
    """Rows whose vector is missing (``failed``, or ``pending`` past ``STALE_PENDING_SECONDS``), in id order
    after ``after``. Not locked: they are embedded outside any transaction, and ``mark_indexed`` leaves a row
    whose content a newer write replaced meanwhile to that write."""
    return (
        conn.cursor(row_factory=class_row(StoredDocument))
        .execute(
            f"""SELECT {COLUMNS} FROM retrieval_documents
                WHERE {_WAITING} AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid)
                ORDER BY id LIMIT %(limit)s""",
            {"a": account_id, "stale": STALE_PENDING_SECONDS, "after": after, "limit": limit},
        )
        .fetchall()
    )


def count_waiting(conn: Conn, *, account_id: UUID, namespace: str | None = None) -> int:
    """How many of the account's rows (of one namespace, or all) still wait for their vector (``waiting``'s
    rows)."""
    row = conn.execute(
        f"""SELECT count(*) AS n FROM retrieval_documents
            WHERE {_WAITING} AND (%(namespace)s::text IS NULL OR namespace = %(namespace)s::text)""",
        {"a": account_id, "stale": STALE_PENDING_SECONDS, "namespace": namespace},
    ).fetchone()
    return int(row["n"]) if row else 0


def count_waiting_by(
    conn: Conn, *, account_id: UUID, namespace: str, key: str, values: list[str]
) -> dict[str, int]:
    """``count_waiting`` of one namespace per value of the metadata ``key``, for ``values`` (absent: none)."""
    if not values:
        return {}
    rows = conn.execute(
        f"""SELECT metadata->>%(key)s AS value, count(*) AS n FROM retrieval_documents
            WHERE {_WAITING} AND status IN ('failed', 'pending') AND namespace = %(namespace)s
              AND metadata->>%(key)s = ANY(%(values)s::text[])
            GROUP BY 1""",
        {
            "a": account_id,
            "stale": STALE_PENDING_SECONDS,
            "namespace": namespace,
            "key": key,
            "values": values,
        },
    ).fetchall()
    return {r["value"]: int(r["n"]) for r in rows}


def accounts_waiting(conn: Conn, *, heal_kind: str, limit: int) -> list[UUID]:
    """Accounts with waiting rows and no unfinished ``heal_kind`` job, across accounts (migrations/0095)."""
    rows = conn.execute(
        "SELECT account_id FROM retrieval_accounts_waiting(%(heal_kind)s, %(stale)s, %(limit)s)",
        {"heal_kind": heal_kind, "stale": STALE_PENDING_SECONDS, "limit": limit},
    ).fetchall()
    return [r["account_id"] for r in rows]
