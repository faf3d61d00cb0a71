from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response
from pydantic import BeforeValidator

from agentmate.api.deps import BookmarksRead, BookmarksWrite, DbDep, IdempotencyKey, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.api.routing import CONTENT_BODY_LIMIT, max_body
from agentmate.bookmarks import service
from agentmate.bookmarks.schemas import (
    Bookmark,
    BookmarkCreate,
    BookmarkSummary,
    BookmarkUpdate,
    blank_to_none,
)
from agentmate.core.pagination import Page
from agentmate.core.text import tag_filter

router = Router(prefix="/api/bookmarks", tags=["bookmarks"], responses=PROBLEM_RESPONSES)

# A blank ``is_read=`` means "no filter", like every other blank filter value.
OptionalBool = Annotated[bool | None, BeforeValidator(blank_to_none)]


@router.post("", status_code=201, response_model=Bookmark, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def create_bookmark(
    body: BookmarkCreate, principal: BookmarksWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Save a bookmark (an absolute http(s) URL). Send an `Idempotency-Key` header to make retries safe."""
    result = service.create(db, principal, body, idempotency_key)
    return created(result)


@router.get("", response_model=Page[BookmarkSummary])
def list_bookmarks(
    principal: BookmarksRead,
    db: DbDep,
    page: PageDep,
    tag: Annotated[str | None, Query(description="Exact tag (normalised)")] = None,
    tags: Annotated[str | None, Query(description="Comma-separated tags; all must match")] = None,
    is_read: Annotated[OptionalBool, Query(description="true = read only, false = unread only")] = None,
    source: Annotated[str | None, Query(description="Exact source label")] = None,
    q: Annotated[str | None, Query(description="Case-insensitive substring of title, summary or url")] = None,
) -> Page[BookmarkSummary]:
    """List bookmarks newest first, without their saved content (GET /api/bookmarks/{id} returns it)."""
    return service.search(
        db, principal, page, tags=tag_filter(tag, tags), is_read=is_read, source=source, q=q
    )


@router.get("/{bookmark_id}", response_model=Bookmark)
def get_bookmark(bookmark_id: UUID, principal: BookmarksRead, db: DbDep) -> Bookmark:
    """Get one bookmark with its saved content."""
    return service.get(db, principal, bookmark_id)


@router.patch("/{bookmark_id}", response_model=Bookmark, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def update_bookmark(
    bookmark_id: UUID, body: BookmarkUpdate, principal: BookmarksWrite, db: DbDep
) -> Bookmark:
    """Change the fields sent (any field, including url, content, source and is_read); others stay as they are."""
    return service.update(db, principal, bookmark_id, body)


@router.delete("/{bookmark_id}", status_code=204, response_class=Response)
def delete_bookmark(bookmark_id: UUID, principal: BookmarksWrite, db: DbDep) -> Response:
    """Delete a bookmark; 404 if it does not exist."""
    service.delete(db, principal, bookmark_id)
    return Response(status_code=204)
