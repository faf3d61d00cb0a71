"""Note tools (``/mcp/notes``): thin calls into ``agentmate.notes.service``, scopes as the REST twins."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.records import TagCount
from agentmate.core.text import Content as StoredContent
from agentmate.mcp.context import db, principal
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import Deleted, IdempotencyKey, Limit, Offset, Tag, TagList, given, with_tag
from agentmate.notes import schemas as s
from agentmate.notes import service
from agentmate.notes.schemas import Note, NoteAppend, NoteCreate, NoteUpdate

tools = ToolSet(
    "notes",
    instructions=(
        "Notes (title, Markdown/text content, tags) of the account that owns the API key. Reading needs "
        "notes:r, writing notes:rw. Content is stored verbatim (at most 1 MiB); note_append adds text with no "
        "separator. Lists return {items, total, limit, offset} with full content."
    ),
)

NoteId = Annotated[UUID, Field(description="The note's id (UUID), as returned by note_create or note_list")]
Title = Annotated[s.Title, Field(description="1..500 characters, trimmed")]
Content = Annotated[
    StoredContent, Field(description="Text or Markdown, stored verbatim; at most 1 MiB (UTF-8)")
]
Tags = Annotated[s.NoteTags, Field(description="Tags; trimmed and lowercased on write, duplicates dropped")]
Query = Annotated[str, Field(description="Case-insensitive substring of title or content")]


@tools.tool("notes:rw", rest="POST /api/notes", title="Create a note")
def note_create(
    title: Title,
    content: Content = "",
    tags: Tags | None = None,
    idempotency_key: IdempotencyKey = None,
) -> Note:
    """Create a note with a title (1..500 characters), optional text/Markdown content (stored verbatim, at
    most 1 MiB) and tags (trimmed, lowercased). Pass idempotency_key so a retry returns the original note
    instead of a duplicate. Requires notes:rw."""
    body = NoteCreate(title=title, content=content, tags=tags or [])
    return service.create(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("notes:r", rest="GET /api/notes/{note_id}", title="Get a note")
def note_get(id: NoteId) -> Note:
    """Get one note with its full content. Requires notes:r."""
    return service.get(db(), principal(), id)


@tools.tool("notes:r", rest="GET /api/notes", title="List notes")
def note_list(
    tags: TagList = None,
    tag: Tag = None,
    q: Annotated[str | None, Field(description="Case-insensitive substring of title or content")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[Note]:
    """List notes newest first, optionally filtered by tags (a list, all must match; tag for one) and a text fragment q.
    Returns {items, total, limit, offset}; items include full content. Requires notes:r."""
    return service.search(
        db(), principal(), PageParams(limit=limit, offset=offset), tags=with_tag(tag, tags), q=q
    )


@tools.tool("notes:r", rest="GET /api/notes/search", title="Search notes")
def note_search(q: Query, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[Note]:
    """Search notes whose title or content contains q (case-insensitive), newest first. Returns
    {items, total, limit, offset}. Requires notes:r."""
    return service.search(db(), principal(), PageParams(limit=limit, offset=offset), q=q)


@tools.tool(
    "notes:rw", rest="PATCH /api/notes/{note_id}", title="Update a note", idempotent=True, patch=NoteUpdate
)
def note_update(
    id: NoteId,
    title: Title | None = None,
    content: Annotated[
        StoredContent | None, Field(description="Replaces the whole content (verbatim)")
    ] = None,
    tags: Annotated[s.NoteTags | None, Field(description="Replaces all tags (trimmed, lowercased)")] = None,
) -> Note:
    """Change the fields given (title, content, tags); the others stay as they are. content replaces the
    whole text: use note_append to add to it. Returns the note. Requires notes:rw."""
    return service.update(
        db(), principal(), id, NoteUpdate.model_validate(given(title=title, content=content, tags=tags))
    )


@tools.tool("notes:rw", rest="PATCH /api/notes/{note_id}/append", title="Append to a note")
def note_append(
    id: NoteId,
    content: Annotated[
        StoredContent,
        Field(
            min_length=1,
            description="Text added at the end exactly as sent; no "
            "separator is inserted, so start with \\n for a "
            "new line",
        ),
    ],
) -> Note:
    """Append text to the end of a note's content verbatim, with no separator (include your own leading
    newline). The resulting content is at most 1 MiB. Returns the note. Requires notes:rw."""
    return service.append(db(), principal(), id, NoteAppend(content=content))


@tools.tool(
    "notes:rw", rest="DELETE /api/notes/{note_id}", title="Delete a note", destructive=True, idempotent=True
)
def note_delete(id: NoteId) -> Deleted:
    """Delete a note permanently. A second delete of the same id reports "note not found". Requires
    notes:rw."""
    service.delete(db(), principal(), id)
    return Deleted(id=id)


@tools.tool("notes:r", rest="GET /api/tags?module=notes", title="List note tags")
def notes_tags(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[TagCount]:
    """Which tags the account's notes carry, with how many notes carry each, most used first, then by tag: ask
    before filtering note_list by a tag. Returns {items: [{tag, count}], total, limit, offset}; page with limit
    (1..100) and offset. Requires notes:r."""
    return service.tags(db(), principal(), PageParams(limit=limit, offset=offset))
