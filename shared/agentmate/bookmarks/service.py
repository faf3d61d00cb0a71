"""Bookmark use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.bookmarks import repository as repo
from agentmate.bookmarks.schemas import NUL_MESSAGE, Bookmark, BookmarkCreate, BookmarkSummary, BookmarkUpdate
from agentmate.core import idempotency
from agentmate.core.db import Database
from agentmate.core.errors import ErrorCollector, NotFound
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.core.text import blank_to_none, normalise_tag

NOT_NULL = ("url", "title", "summary", "content", "tags", "is_read")


def create(db: Database, principal: Principal, body: BookmarkCreate, idempotency_key: str | None = None) -> Outcome:
    """Save a bookmark; ``is_read=true`` stamps ``read_at`` now."""
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:

        def insert() -> dict[str, Any]:
            row = repo.insert(conn, account_id=principal.account_id, user_id=principal.user_id,
                              key_id=principal.key_id, data=data)
            return Bookmark(**row).model_dump(mode="json")

        return idempotency.run_once(conn, account_id=principal.account_id, route="bookmarks.create",
                                    key=idempotency_key, request=body.model_dump(mode="json"), create=insert)


def get(db: Database, principal: Principal, bookmark_id: UUID) -> Bookmark:
    with db.tenant(principal.account_id) as conn:
        row = repo.get(conn, account_id=principal.account_id, bookmark_id=bookmark_id)
    if row is None:
        raise NotFound("bookmark")
    return Bookmark(**row)


def update(db: Database, principal: Principal, bookmark_id: UUID, body: BookmarkUpdate) -> Bookmark:
    """Change the fields sent. ``is_read`` true keeps an existing ``read_at`` (or stamps now); false clears it."""
    changes = body.model_dump(exclude_unset=True)
    errors = ErrorCollector()
    for name in NOT_NULL:
        if name in changes and changes[name] is None:
            errors.add(name, "may not be null")
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        row = repo.update(conn, account_id=principal.account_id, bookmark_id=bookmark_id, changes=changes)
    if row is None:
        raise NotFound("bookmark")
    return Bookmark(**row)


def delete(db: Database, principal: Principal, bookmark_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete(conn, account_id=principal.account_id, bookmark_id=bookmark_id):
            raise NotFound("bookmark")


def search(
    db: Database, principal: Principal, page: PageParams, *, tags: list[str] | None = None,
    is_read: bool | None = None, source: str | None = None, q: str | None = None,
) -> Page[BookmarkSummary]:
    """Bookmark summaries (without content), newest first. ``tags`` all must match (normalised here);
    ``source`` is an exact label; ``q`` is a case-insensitive substring of title, summary or url. Blank = no
    filter."""
    errors = ErrorCollector()
    wanted = list(dict.fromkeys(t for t in (normalise_tag(x) for x in tags or []) if t))
    if any("\x00" in t for t in wanted):
        errors.add("tags", NUL_MESSAGE)
    source = blank_to_none(source)
    if source and "\x00" in source:
        errors.add("source", NUL_MESSAGE)
    text = blank_to_none(q)
    if text and "\x00" in text:
        errors.add("q", NUL_MESSAGE)
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(conn, account_id=principal.account_id, tags=wanted, is_read=is_read,
                                  source=source, q=text, limit=page.limit, offset=page.offset)
    return Page[BookmarkSummary](items=[BookmarkSummary(**r) for r in rows], total=total, limit=page.limit,
                                 offset=page.offset)
