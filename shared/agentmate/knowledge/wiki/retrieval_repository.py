"""SQL of wiki retrieval: which build each source serves and which one its index reflects, and the pages,
citations and links a hit carries (read from the database, never from the index)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TypedDict, cast
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.knowledge.wiki import repository as wiki_repo
from agentmate.knowledge.wiki.repository import PageCitationRow, PageLinkRow

STATE_COLUMNS = (
    """s.id AS source_id, s.name, s.domain, s.active_build_id, s.indexed_build_id, s.wiki_indexed_at"""
)


class WikiIndexRow(TypedDict):
    source_id: UUID
    name: str
    domain: str | None
    active_build_id: UUID | None
    indexed_build_id: UUID | None
    wiki_indexed_at: datetime | None


class PageContent(TypedDict):
    id: UUID
    path: str
    kind: str
    title: str
    content: str


class PageRow(PageContent):
    build_id: UUID
    derived_from_build_id: UUID | None


def source_exists(conn: Conn, *, account_id: UUID, source_id: UUID) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM knowledge_sources WHERE account_id = %(account_id)s AND id = %(source_id)s",
            {"account_id": account_id, "source_id": source_id},
        ).fetchone()
        is not None
    )


def index_states(
    conn: Conn,
    *,
    account_id: UUID,
    source_id: UUID | None = None,
    source_ids: Sequence[UUID] | None = None,
    domain: str | None = None,
    only_active: bool = False,
) -> list[WikiIndexRow]:
    where = ["s.account_id = %(a)s"]
    if source_id is not None:
        where.append("s.id = %(s)s")
    if source_ids:
        where.append("s.id = ANY(%(ids)s)")
    if domain is not None:
        where.append("s.domain = %(d)s")
    if only_active:
        where.append("s.active_build_id IS NOT NULL")
    rows = conn.execute(
        f"SELECT {STATE_COLUMNS} FROM knowledge_sources s WHERE {' AND '.join(where)} ORDER BY s.name, s.id",
        {"a": account_id, "s": source_id, "ids": list(source_ids or []), "d": domain},
    ).fetchall()
    return cast(list[WikiIndexRow], rows)


def pages_with_content(conn: Conn, *, account_id: UUID, build_id: UUID) -> list[PageContent]:
    rows = conn.execute(
        "SELECT id, path, kind, title, content FROM knowledge_pages "
        'WHERE account_id = %(account_id)s AND build_id = %(build_id)s ORDER BY path COLLATE "C"',
        {"account_id": account_id, "build_id": build_id},
    ).fetchall()
    return cast(list[PageContent], rows)


def mark_indexed(conn: Conn, *, account_id: UUID, source_id: UUID, build_id: UUID) -> None:
    conn.execute(
        "UPDATE knowledge_sources SET indexed_build_id = %(build_id)s, wiki_indexed_at = now() "
        "WHERE account_id = %(account_id)s AND id = %(source_id)s",
        {"build_id": build_id, "account_id": account_id, "source_id": source_id},
    )


def pages_by_id(conn: Conn, *, account_id: UUID, page_ids: Sequence[UUID]) -> dict[UUID, PageRow]:
    rows = conn.execute(
        "SELECT id, build_id, path, kind, title, content, derived_from_build_id FROM knowledge_pages "
        "WHERE account_id = %(account_id)s AND id = ANY(%(page_ids)s)",
        {"account_id": account_id, "page_ids": list(page_ids)},
    ).fetchall()
    return {r["id"]: cast(PageRow, r) for r in rows}


def citations_of(
    conn: Conn, *, account_id: UUID, page_ids: Sequence[UUID]
) -> dict[UUID, list[PageCitationRow]]:
    out: dict[UUID, list[PageCitationRow]] = {}
    for c in wiki_repo.page_citations(conn, account_id=account_id, page_ids=page_ids):
        out.setdefault(c["page_id"], []).append(c)
    return out


def links_of(conn: Conn, *, account_id: UUID, page_ids: Sequence[UUID]) -> dict[UUID, list[PageLinkRow]]:
    out: dict[UUID, list[PageLinkRow]] = {}
    for link in wiki_repo.page_links(conn, account_id=account_id, page_ids=page_ids):
        out.setdefault(link["page_id"], []).append(link)
    return out
