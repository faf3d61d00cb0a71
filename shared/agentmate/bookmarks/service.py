"""Bookmark use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.bookmarks import repository as repo
from agentmate.bookmarks.schemas import Bookmark, BookmarkCreate, BookmarkSummary, BookmarkUpdate
from agentmate.core import records
from agentmate.core.db import Database
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams

NOT_NULL = ("url", "title", "summary", "content", "tags", "is_read")


def create(
    db: Database, principal: Principal, body: BookmarkCreate, idempotency_key: str | None = None
) -> Outcome:
    """Save a bookmark; ``is_read=true`` stamps ``read_at`` now."""
    return records.create(
        db,
        principal,
        body,
        route="bookmarks.create",
        model=Bookmark,
        insert=repo.insert,
        idempotency_key=idempotency_key,
    )


def get(db: Database, principal: Principal, bookmark_id: UUID) -> Bookmark:
    """One bookmark by id; 404 if it does not exist in this account."""
    return records.one(
        db,
        principal,
        "bookmark",
        Bookmark,
        lambda conn, account_id: repo.get(conn, account_id=account_id, bookmark_id=bookmark_id),
    )


def update(db: Database, principal: Principal, bookmark_id: UUID, body: BookmarkUpdate) -> Bookmark:
    """Change the fields sent. ``is_read`` true keeps an existing ``read_at`` (or stamps now); false clears it."""
    changes = records.changes(body, NOT_NULL)
    return records.one(
        db,
        principal,
        "bookmark",
        Bookmark,
        lambda conn, account_id: repo.update(
            conn, account_id=account_id, bookmark_id=bookmark_id, changes=changes
        ),
    )


def delete(db: Database, principal: Principal, bookmark_id: UUID) -> None:
    records.remove(
        db,
        principal,
        "bookmark",
        lambda conn, account_id: repo.delete(conn, account_id=account_id, bookmark_id=bookmark_id),
    )


def search(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    tags: list[str] | None = None,
    is_read: bool | None = None,
    source: str | None = None,
    q: str | None = None,
) -> Page[BookmarkSummary]:
    """Bookmark summaries (without content), newest first. ``tags`` all must match (normalised here);
    ``source`` is an exact label; ``q`` is a case-insensitive substring of title, summary or url. Blank = no
    filter."""
    wanted, given = records.filters(tags, source=source, q=q)
    source = given["source"]
    text = given["q"]
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn,
            account_id=principal.account_id,
            tags=wanted,
            is_read=is_read,
            source=source,
            q=text,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[BookmarkSummary](
        items=[BookmarkSummary(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )
