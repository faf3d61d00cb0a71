"""Bookmark tools (``/mcp/bookmarks``): thin calls into ``agentmate.bookmarks.service``, scopes as REST."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.bookmarks import schemas as s
from agentmate.bookmarks import service
from agentmate.bookmarks.schemas import Bookmark, BookmarkCreate, BookmarkSummary, BookmarkUpdate
from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.records import TagCount
from agentmate.core.text import Content as StoredContent
from agentmate.mcp.context import db, principal
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import (
    ClearSource,
    Deleted,
    IdempotencyKey,
    Limit,
    Offset,
    Tag,
    TagList,
    apply_clear_source,
    given,
    with_tag,
)

tools = ToolSet(
    "bookmarks",
    instructions=(
        "Bookmarks (URL, title, summary, saved page content, tags, read state) of the account that owns the "
        "API key. Reading needs bookmarks:r, writing bookmarks:rw. URLs are absolute http(s). Lists omit the "
        "saved content (bookmark_get returns it) and return {items, total, limit, offset}."
    ),
)

BookmarkId = Annotated[
    UUID, Field(description="The bookmark's id (UUID), as returned by bookmark_create or bookmark_list")
]
Url = Annotated[s.Url, Field(description="Absolute http:// or https:// URL (≤2048 characters)")]
Title = Annotated[s.Title, Field(description="At most 500 characters, trimmed")]
Summary = Annotated[s.Summary, Field(description="Short summary, at most 20000 characters")]
Content = Annotated[StoredContent, Field(description="Saved page text, verbatim; at most 1 MiB (UTF-8)")]
Tags = Annotated[
    s.BookmarkTags, Field(description="Tags; trimmed and lowercased on write, duplicates dropped")
]
Source = Annotated[s.Source, Field(description="Label of the agent or skill saving it (≤255 characters)")]


@tools.tool("bookmarks:rw", rest="POST /api/bookmarks", title="Save a bookmark")
def bookmark_create(
    url: Url,
    title: Title = "",
    summary: Summary = "",
    content: Content = "",
    tags: Tags | None = None,
    source: Source = None,
    is_read: Annotated[bool, Field(description="true marks it read now (default false = unread)")] = False,
    idempotency_key: IdempotencyKey = None,
) -> Bookmark:
    """Save a bookmark: url (absolute http/https) plus optional title, summary, saved page content (≤1 MiB),
    tags (trimmed, lowercased), source label and is_read. Pass idempotency_key so a retry returns the
    original bookmark. Requires bookmarks:rw."""
    body = BookmarkCreate(
        url=url,
        title=title,
        summary=summary,
        content=content,
        tags=tags or [],
        source=source,
        is_read=is_read,
    )
    return service.create(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("bookmarks:r", rest="GET /api/bookmarks/{bookmark_id}", title="Get a bookmark")
def bookmark_get(id: BookmarkId) -> Bookmark:
    """Get one bookmark with its saved content. Requires bookmarks:r."""
    return service.get(db(), principal(), id)


@tools.tool("bookmarks:r", rest="GET /api/bookmarks", title="List bookmarks")
def bookmark_list(
    tags: TagList = None,
    tag: Tag = None,
    is_read: Annotated[
        bool | None, Field(description="true = read only, false = unread only; omit for both")
    ] = None,
    source: Annotated[str | None, Field(description="Exact source label")] = None,
    q: Annotated[str | None, Field(description="Case-insensitive substring of title, summary or url")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[BookmarkSummary]:
    """List bookmarks newest first WITHOUT their saved content (use bookmark_get), optionally filtered by
    tags (a list, all must match; tag for one), is_read (true|false), exact source and text q (title, summary, url). Returns
    {items, total, limit, offset}. Requires bookmarks:r."""
    return service.search(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        tags=with_tag(tag, tags),
        is_read=is_read,
        source=source,
        q=q,
    )


@tools.tool(
    "bookmarks:rw",
    rest="PATCH /api/bookmarks/{bookmark_id}",
    title="Update a bookmark",
    idempotent=True,
    patch=BookmarkUpdate,
)
def bookmark_update(
    id: BookmarkId,
    url: Url | None = None,
    title: Title | None = None,
    summary: Summary | None = None,
    content: Annotated[StoredContent | None, Field(description="Replaces the saved content")] = None,
    tags: Annotated[
        s.BookmarkTags | None, Field(description="Replaces all tags (trimmed, lowercased)")
    ] = None,
    source: Source = None,
    clear_source: ClearSource = False,
    is_read: Annotated[
        bool | None, Field(description="true marks it read (keeps an earlier read_at), false marks it unread")
    ] = None,
) -> Bookmark:
    """Change the fields given (url, title, summary, content, tags, source, is_read); the others stay as
    they are. is_read=true stamps read_at (kept if already read), false clears it; clear_source=true
    removes the source label. Returns the bookmark. Requires bookmarks:rw."""
    changes = apply_clear_source(
        given(
            url=url, title=title, summary=summary, content=content, tags=tags, source=source, is_read=is_read
        ),
        clear_source,
    )
    return service.update(db(), principal(), id, BookmarkUpdate.model_validate(changes))


@tools.tool(
    "bookmarks:rw",
    rest="DELETE /api/bookmarks/{bookmark_id}",
    title="Delete a bookmark",
    destructive=True,
    idempotent=True,
)
def bookmark_delete(id: BookmarkId) -> Deleted:
    """Delete a bookmark permanently. A second delete of the same id reports "bookmark not found".
    Requires bookmarks:rw."""
    service.delete(db(), principal(), id)
    return Deleted(id=id)


@tools.tool("bookmarks:r", rest="GET /api/tags?module=bookmarks", title="List bookmark tags")
def bookmarks_tags(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[TagCount]:
    """Which tags the account's bookmarks carry, with how many bookmarks carry each, most used first, then by tag: ask
    before filtering bookmark_list by a tag. Returns {items: [{tag, count}], total, limit, offset}; page with limit
    (1..100) and offset. Requires bookmarks:r."""
    return service.tags(db(), principal(), PageParams(limit=limit, offset=offset))
