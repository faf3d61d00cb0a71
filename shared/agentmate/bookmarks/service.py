"""Bookmark use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from agentmate.bookmarks import repository as repo
from agentmate.bookmarks.schemas import Bookmark, BookmarkSummary
from agentmate.core import records
from agentmate.core.db import TenantTransactions
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal

# create / get / update / delete: the shared record use cases (agentmate.core.records).
_records = records.RecordService(resource="bookmark", model=Bookmark, repo=repo, id_field="bookmark_id")
create = _records.create
get = _records.get
update = _records.update
delete = _records.delete
tags = _records.tags  # the tag roster: GET /api/tags?module=bookmarks, the bookmarks_tags tool


def search(
    db: TenantTransactions,
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
