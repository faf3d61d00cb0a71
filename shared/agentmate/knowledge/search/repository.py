"""SQL of the knowledge chunk index (migrations/0056): chunk rows, the document link graph, the index state of a
revision. Statements run inside the caller's tenant transaction; RLS scopes them too."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypedDict, cast
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.knowledge.manifest import MANIFEST_PATH

_SERVER = "written by the indexer"
CONSTRAINTS = constraints(
    {
        "knowledge_chunks_document_key": ("chunk_key", "a document's chunk keys are unique"),
        "knowledge_chunks_revision_fkey": ("source_id", "the revision is gone"),
        "knowledge_chunks_document_fkey": ("document_id", "the document is gone"),
        "knowledge_chunks_key_check": ("chunk_key", _SERVER),
        "knowledge_chunks_ordinal_check": ("chunk_key", _SERVER),
        "knowledge_chunks_lines_check": ("chunk_key", _SERVER),
        "knowledge_document_links_pair_key": ("target_path", "a document links to a path once"),
        "knowledge_document_links_revision_fkey": ("source_id", "the revision is gone"),
        "knowledge_document_links_source_document_fkey": ("document_id", "the document is gone"),
        "knowledge_document_links_target_document_fkey": ("document_id", "the target document is gone"),
        "knowledge_document_links_kind_check": ("kind", _SERVER),
        "knowledge_document_links_target_path_check": ("target_path", "at most 1024 characters"),
        "knowledge_document_links_ordinal_check": ("target_path", _SERVER),
        "knowledge_revision_index_revision_fkey": ("source_id", "the revision is gone"),
        "knowledge_revision_index_status_check": ("status", _SERVER),
        "knowledge_revision_index_counts_check": ("status", _SERVER),
    }
)


# -- rows (what the services read; the queries below name exactly these columns) ---------------------------------


class ActiveSource(TypedDict):
    id: UUID
    name: str
    domain: str | None
    active_revision_id: UUID


class SourceRow(TypedDict):
    id: UUID
    name: str
    domain: str | None
    active_revision_id: UUID | None


class TextDocument(TypedDict):
    id: UUID
    path: str
    mime_type: str | None
    is_text: bool
    content: str | None


class ChunkKey(TypedDict):
    revision_id: UUID
    document_id: UUID
    chunk_key: str


class IndexState(TypedDict):
    revision_id: UUID
    status: str
    documents: int
    chunks: int
    failed_chunks: int
    truncated_documents: int
    links: int
    dangling_links: int
    escaping_links: int
    indexed_at: datetime


Direction = Literal["outgoing", "incoming"]


class Neighbour(TypedDict):
    document_id: UUID
    direction: Direction
    path: str
    linked_document_id: UUID | None


class SourceIndexRow(TypedDict):
    source_id: UUID
    name: str
    active_revision_id: UUID
    indexed_revision_id: UUID | None
    indexed_at: datetime | None


class DocumentRow(TypedDict):
    id: UUID
    path: str
    revision_id: UUID
    source_id: UUID


class LinkRow(TypedDict):
    direction: Direction
    path: str
    document_id: UUID | None
    kind: Literal["link", "image", "reference"]  # knowledge_document_links_kind_check
    total: int


def active_sources(conn: Conn, *, account_id: UUID, source_id: UUID | None, limit: int) -> list[ActiveSource]:
    """Sources with an active revision (one, or all in name order), at most ``limit``."""
    rows = conn.execute(
        """SELECT s.id, s.name, s.domain, s.active_revision_id FROM knowledge_sources s
           WHERE s.account_id = %(a)s AND s.active_revision_id IS NOT NULL
             AND (%(s)s::uuid IS NULL OR s.id = %(s)s)
           ORDER BY s.name COLLATE "C", s.id LIMIT %(l)s""",
        {"a": account_id, "s": source_id, "l": limit},
    ).fetchall()
    return cast(list[ActiveSource], rows)


def source_exists(conn: Conn, *, account_id: UUID, source_id: UUID) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM knowledge_sources WHERE account_id = %(account_id)s AND id = %(source_id)s",
            {"account_id": account_id, "source_id": source_id},
        ).fetchone()
        is not None
    )


def text_documents(conn: Conn, *, account_id: UUID, revision_id: UUID) -> list[TextDocument]:
    """Every document of a revision (the manifest excluded), text content where there is one."""
    rows = conn.execute(
        """SELECT id, path, mime_type, is_text, content FROM knowledge_documents
           WHERE account_id = %(a)s AND revision_id = %(r)s AND path <> %(m)s ORDER BY path COLLATE "C" """,
        {"a": account_id, "r": revision_id, "m": MANIFEST_PATH},
    ).fetchall()
    return cast(list[TextDocument], rows)


def chunk_keys(conn: Conn, *, account_id: UUID, source_id: UUID) -> list[ChunkKey]:
    """(revision, document, chunk key) of every chunk row of the source, any revision."""
    rows = conn.execute(
        """SELECT revision_id, document_id, chunk_key FROM knowledge_chunks
           WHERE account_id = %(account_id)s AND source_id = %(source_id)s""",
        {"account_id": account_id, "source_id": source_id},
    ).fetchall()
    return cast(list[ChunkKey], rows)


def replace_revision(
    conn: Conn,
    *,
    account_id: UUID,
    source_id: UUID,
    revision_id: UUID,
    chunks: list[dict[str, Any]],
    links: list[dict[str, Any]],
    state: dict[str, Any],
) -> None:
    """The chunk rows, links and index state of the source become exactly those of this revision: rows of
    other revisions of the source are deleted (the revisions themselves stay, immutable)."""
    params = {"a": account_id, "s": source_id}
    conn.execute("DELETE FROM knowledge_chunks WHERE account_id = %(a)s AND source_id = %(s)s", params)
    conn.execute(
        "DELETE FROM knowledge_document_links WHERE account_id = %(a)s AND source_id = %(s)s", params
    )
    conn.execute(
        "DELETE FROM knowledge_revision_index WHERE account_id = %(a)s AND source_id = %(s)s", params
    )
    if chunks:
        conn.execute(
            """INSERT INTO knowledge_chunks (account_id, source_id, revision_id, document_id, chunk_key, ordinal,
                                             heading_path, content, start_line, end_line)
               SELECT %(a)s, %(s)s, %(r)s, * FROM unnest(%(doc)s::uuid[], %(key)s::text[], %(ord)s::int[],
                                                        %(hp)s::text[], %(body)s::text[], %(sl)s::int[],
                                                        %(el)s::int[])""",
            {
                **params,
                "r": revision_id,
                "doc": [c["document_id"] for c in chunks],
                "key": [c["chunk_key"] for c in chunks],
                "ord": [c["ordinal"] for c in chunks],
                "hp": [c["heading_path"] for c in chunks],
                "body": [c["content"] for c in chunks],
                "sl": [c["start_line"] for c in chunks],
                "el": [c["end_line"] for c in chunks],
            },
        )
    if links:
        conn.execute(
            """INSERT INTO knowledge_document_links (account_id, source_id, revision_id, source_document_id,
                                                     target_path, target_document_id, kind, ordinal)
               SELECT %(a)s, %(s)s, %(r)s, * FROM unnest(%(src)s::uuid[], %(path)s::text[], %(tgt)s::uuid[],
                                                        %(kind)s::text[], %(ord)s::int[])""",
            {
                **params,
                "r": revision_id,
                "src": [link["source_document_id"] for link in links],
                "path": [link["target_path"] for link in links],
                "tgt": [link["target_document_id"] for link in links],
                "kind": [link["kind"] for link in links],
                "ord": [link["ordinal"] for link in links],
            },
        )
    conn.execute(
        """INSERT INTO knowledge_revision_index (revision_id, account_id, source_id, status, documents, chunks,
                                                 failed_chunks, truncated_documents, links, dangling_links,
                                                 escaping_links)
           VALUES (%(r)s, %(a)s, %(s)s, %(status)s, %(documents)s, %(chunks)s, %(failed_chunks)s,
                   %(truncated_documents)s, %(links)s, %(dangling_links)s, %(escaping_links)s)""",
        {**params, "r": revision_id, **state},
    )


def indexed_since(conn: Conn, *, account_id: UUID, revision_ids: list[UUID], since: Any) -> set[UUID]:
    """The revisions among ``revision_ids`` whose last index run finished at or after ``since``."""
    if not revision_ids:
        return set()
    rows = conn.execute(
        "SELECT revision_id FROM knowledge_revision_index WHERE account_id = %(account_id)s "
        "AND revision_id = ANY(%(revision_ids)s) AND indexed_at >= %(since)s",
        {"account_id": account_id, "revision_ids": revision_ids, "since": since},
    ).fetchall()
    return {r["revision_id"] for r in rows}


def sources_with_failed_chunks(conn: Conn, *, account_id: UUID, limit: int) -> list[ActiveSource]:
    """Sources whose active revision's last index run left chunks without a vector (the heal job's work), in name
    order, at most ``limit``."""
    rows = conn.execute(
        """SELECT s.id, s.name, s.domain, s.active_revision_id FROM knowledge_sources s
           JOIN knowledge_revision_index ix
             ON ix.account_id = s.account_id AND ix.revision_id = s.active_revision_id
           WHERE s.account_id = %(account_id)s AND ix.failed_chunks > 0
           ORDER BY s.name COLLATE "C", s.id LIMIT %(limit)s""",
        {"account_id": account_id, "limit": limit},
    ).fetchall()
    return cast(list[ActiveSource], rows)


def accounts_partial(conn: Conn, *, heal_kind: str, limit: int) -> list[UUID]:
    """Accounts with an active revision whose last index run left chunks without a vector and no unfinished
    ``heal_kind`` job, oldest first, across accounts (migrations/0103; the sweep's owner-less transaction)."""
    rows = conn.execute(
        "SELECT account_id FROM knowledge_accounts_partial(%(heal_kind)s, %(limit)s)",
        {"heal_kind": heal_kind, "limit": limit},
    ).fetchall()
    return [r["account_id"] for r in rows]


def index_states(conn: Conn, *, account_id: UUID, revision_ids: list[UUID]) -> dict[UUID, IndexState]:
    """The last index run per revision (for the catalog's chunk index status)."""
    if not revision_ids:
        return {}
    rows = conn.execute(
        """SELECT revision_id, status, documents, chunks, failed_chunks, truncated_documents, links,
                  dangling_links, escaping_links, indexed_at
           FROM knowledge_revision_index WHERE account_id = %(account_id)s AND revision_id = ANY(%(revision_ids)s)""",
        {"account_id": account_id, "revision_ids": revision_ids},
    ).fetchall()
    return {r["revision_id"]: cast(IndexState, r) for r in rows}


def sources(
    conn: Conn, *, account_id: UUID, source_ids: list[UUID] | None = None, domain: str | None = None
) -> list[SourceRow]:
    """Sources by id and/or domain (either filter optional), with their active revision."""
    rows = conn.execute(
        """SELECT id, name, domain, active_revision_id FROM knowledge_sources
           WHERE account_id = %(a)s AND (%(ids)s::uuid[] IS NULL OR id = ANY(%(ids)s))
             AND (%(d)s::text IS NULL OR domain = %(d)s)""",
        {"a": account_id, "ids": source_ids, "d": domain},
    ).fetchall()
    return cast(list[SourceRow], rows)


def stale_sources(conn: Conn, *, account_id: UUID, source_ids: list[UUID] | None) -> list[SourceIndexRow]:
    """Sources (these, or all of the account) with an active revision that the chunk index does not reflect:
    never indexed, or indexed at another revision (a push or sync since the last index run), in name order."""
    rows = conn.execute(
        """SELECT s.id AS source_id, s.name, s.active_revision_id, ix.revision_id AS indexed_revision_id,
                  ix.indexed_at
           FROM knowledge_sources s
           LEFT JOIN LATERAL (
               SELECT i.revision_id, i.indexed_at FROM knowledge_revision_index i
               WHERE i.account_id = s.account_id AND i.source_id = s.id
               ORDER BY i.indexed_at DESC LIMIT 1) ix ON true
           WHERE s.account_id = %(account_id)s AND s.active_revision_id IS NOT NULL
             AND (%(source_ids)s::uuid[] IS NULL OR s.id = ANY(%(source_ids)s))
             AND ix.revision_id IS DISTINCT FROM s.active_revision_id
           ORDER BY s.name COLLATE "C", s.id""",
        {"account_id": account_id, "source_ids": source_ids},
    ).fetchall()
    return cast(list[SourceIndexRow], rows)


def neighbours(
    conn: Conn, *, account_id: UUID, document_ids: list[UUID], per_document: int
) -> dict[UUID, list[Neighbour]]:
    """Up to ``per_document`` one-hop links per document, metadata only: outgoing first (link order), then
    incoming (linking path order)."""
    if not document_ids:
        return {}
    rows = conn.execute(
        """SELECT document_id, direction, path, linked_document_id FROM (
               SELECT e.*, row_number() OVER (PARTITION BY e.document_id ORDER BY e.dir_order, e.sort_key) AS n
               FROM (
                   SELECT l.source_document_id AS document_id, 'outgoing' AS direction, 0 AS dir_order,
                          l.target_path AS path, l.target_document_id AS linked_document_id,
                          lpad(l.ordinal::text, 4, '0') AS sort_key
                   FROM knowledge_document_links l
                   WHERE l.account_id = %(a)s AND l.source_document_id = ANY(%(ids)s)
                   UNION ALL
                   SELECT l.target_document_id, 'incoming', 1, d.path, l.source_document_id, d.path
                   FROM knowledge_document_links l
                   JOIN knowledge_documents d ON d.id = l.source_document_id AND d.account_id = l.account_id
                   WHERE l.account_id = %(a)s AND l.target_document_id = ANY(%(ids)s)
               ) e
           ) ranked WHERE n <= %(k)s
           ORDER BY document_id, direction DESC, n""",
        {"a": account_id, "ids": document_ids, "k": per_document},
    ).fetchall()
    out: dict[UUID, list[Neighbour]] = {}
    for r in rows:
        out.setdefault(r["document_id"], []).append(cast(Neighbour, r))
    return out


def document(conn: Conn, *, account_id: UUID, document_id: UUID) -> DocumentRow | None:
    row = conn.execute(
        """SELECT d.id, d.path, d.revision_id, r.source_id FROM knowledge_documents d
           JOIN knowledge_source_revisions r ON r.id = d.revision_id AND r.account_id = d.account_id
           WHERE d.account_id = %(account_id)s AND d.id = %(document_id)s AND d.path <> %(manifest_path)s""",
        {"account_id": account_id, "document_id": document_id, "manifest_path": MANIFEST_PATH},
    ).fetchone()
    return cast(DocumentRow | None, row)


def document_links(
    conn: Conn, *, account_id: UUID, document_id: UUID, limit: int, offset: int
) -> tuple[list[LinkRow], int]:
    """Both directions of one document's links, outgoing first (link order) then incoming (linking path)."""
    rows = conn.execute(
        """WITH e AS (
               SELECT 'outgoing' AS direction, 0 AS dir_order, l.target_path AS path,
                      l.target_document_id AS document_id, l.kind, lpad(l.ordinal::text, 4, '0') AS sort_key
               FROM knowledge_document_links l
               WHERE l.account_id = %(a)s AND l.source_document_id = %(d)s
               UNION ALL
               SELECT 'incoming', 1, d.path, l.source_document_id, l.kind, d.path
               FROM knowledge_document_links l
               JOIN knowledge_documents d ON d.id = l.source_document_id AND d.account_id = l.account_id
               WHERE l.account_id = %(a)s AND l.target_document_id = %(d)s)
           SELECT direction, path, document_id, kind, count(*) OVER () AS total FROM e
           ORDER BY dir_order, sort_key COLLATE "C", document_id LIMIT %(l)s OFFSET %(o)s""",
        {"a": account_id, "d": document_id, "l": limit, "o": offset},
    ).fetchall()
    if rows:
        return cast(list[LinkRow], rows), int(rows[0]["total"])
    total = conn.execute(
        """SELECT (SELECT count(*) FROM knowledge_document_links WHERE account_id = %(a)s
                     AND source_document_id = %(d)s)
                + (SELECT count(*) FROM knowledge_document_links WHERE account_id = %(a)s
                     AND target_document_id = %(d)s) AS n""",
        {"a": account_id, "d": document_id},
    ).fetchone()
    return [], int(total["n"]) if total else 0
