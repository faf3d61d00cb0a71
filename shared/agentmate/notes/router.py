from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, NotesRead, NotesWrite, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.api.routing import CONTENT_BODY_LIMIT, max_body
from agentmate.core.pagination import Page
from agentmate.core.text import tag_filter
from agentmate.notes import service
from agentmate.notes.schemas import Note, NoteAppend, NoteCreate, NoteUpdate

router = Router(prefix="/api/notes", tags=["notes"], responses=PROBLEM_RESPONSES)

_Q = "Case-insensitive substring of title or content; blank = no filter"


@router.post("", status_code=201, response_model=Note, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def create_note(
    body: NoteCreate, principal: NotesWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Create a note. Send an `Idempotency-Key` header to make retries safe."""
    result = service.create(db, principal, body, idempotency_key)
    return created(result)


@router.get("", response_model=Page[Note])
def list_notes(
    principal: NotesRead,
    db: DbDep,
    page: PageDep,
    q: Annotated[str | None, Query(description=_Q)] = None,
    tag: Annotated[str | None, Query(description="Exact tag (normalised); blank = no filter")] = None,
    tags: Annotated[str | None, Query(description="Comma-separated tags; all must match")] = None,
) -> Page[Note]:
    """List notes newest first as {items, total, limit, offset}; every item includes its full content."""
    return service.search(db, principal, page, tags=tag_filter(tag, tags), q=q)


@router.get("/search", response_model=Page[Note])
def search_notes(
    principal: NotesRead,
    db: DbDep,
    page: PageDep,
    q: Annotated[str, Query(description=_Q)] = "",
) -> Page[Note]:
    """Search notes by text in title or content (same result shape as the list)."""
    return service.search(db, principal, page, q=q)


@router.get("/{note_id}", response_model=Note)
def get_note(note_id: UUID, principal: NotesRead, db: DbDep) -> Note:
    """Get one note with its full content."""
    return service.get(db, principal, note_id)


@router.patch("/{note_id}", response_model=Note, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def update_note(note_id: UUID, body: NoteUpdate, principal: NotesWrite, db: DbDep) -> Note:
    """Change the fields sent (title, content, tags); others stay as they are."""
    return service.update(db, principal, note_id, body)


@router.patch("/{note_id}/append", response_model=Note, openapi_extra=max_body(CONTENT_BODY_LIMIT))
def append_to_note(note_id: UUID, body: NoteAppend, principal: NotesWrite, db: DbDep) -> Note:
    """Append text to the note's content verbatim, with no separator (send your own newline); returns the note."""
    return service.append(db, principal, note_id, body)


@router.delete("/{note_id}", status_code=204, response_class=Response)
def delete_note(note_id: UUID, principal: NotesWrite, db: DbDep) -> Response:
    """Delete a note; 404 if it does not exist."""
    service.delete(db, principal, note_id)
    return Response(status_code=204)
