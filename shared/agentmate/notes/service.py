"""Note use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import idempotency
from agentmate.core.db import Database
from agentmate.core.errors import ErrorCollector, NotFound
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.core.text import blank_to_none, normalise_tag
from agentmate.notes import repository as repo
from agentmate.notes.schemas import Note, NoteAppend, NoteCreate, NoteUpdate

NOT_NULL = ("title", "content", "tags")
NUL_MESSAGE = "must not contain NUL (U+0000) characters"


def create(db: Database, principal: Principal, body: NoteCreate, idempotency_key: str | None = None) -> Outcome:
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:

        def insert() -> dict[str, Any]:
            row = repo.insert(conn, account_id=principal.account_id, user_id=principal.user_id,
                              key_id=principal.key_id, data=data)
            return Note(**row).model_dump(mode="json")

        return idempotency.run_once(conn, account_id=principal.account_id, route="notes.create",
                                    key=idempotency_key, request=body.model_dump(mode="json"), create=insert)


def get(db: Database, principal: Principal, note_id: UUID) -> Note:
    with db.tenant(principal.account_id) as conn:
        row = repo.get(conn, account_id=principal.account_id, note_id=note_id)
    if row is None:
        raise NotFound("note")
    return Note(**row)


def update(db: Database, principal: Principal, note_id: UUID, body: NoteUpdate) -> Note:
    changes = body.model_dump(exclude_unset=True)
    errors = ErrorCollector()
    for name in NOT_NULL:
        if name in changes and changes[name] is None:
            errors.add(name, "may not be null")
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        row = repo.update(conn, account_id=principal.account_id, note_id=note_id, changes=changes)
    if row is None:
        raise NotFound("note")
    return Note(**row)


def append(db: Database, principal: Principal, note_id: UUID, body: NoteAppend) -> Note:
    """Append ``body.content`` verbatim (no separator) to the note's content."""
    with db.tenant(principal.account_id) as conn:
        row = repo.append(conn, account_id=principal.account_id, note_id=note_id, content=body.content)
    if row is None:
        raise NotFound("note")
    return Note(**row)


def delete(db: Database, principal: Principal, note_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete(conn, account_id=principal.account_id, note_id=note_id):
            raise NotFound("note")


def search(
    db: Database, principal: Principal, page: PageParams, *, tags: list[str] | None = None, q: str | None = None,
) -> Page[Note]:
    """Notes newest first. ``tags`` all must match (normalised here); ``q`` is a case-insensitive substring of
    title or content. Blank values mean "no filter"."""
    errors = ErrorCollector()
    wanted = list(dict.fromkeys(t for t in (normalise_tag(x) for x in tags or []) if t))
    if any("\x00" in t for t in wanted):
        errors.add("tags", NUL_MESSAGE)
    text = blank_to_none(q)
    if text and "\x00" in text:
        errors.add("q", NUL_MESSAGE)
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(conn, account_id=principal.account_id, tags=wanted, q=text,
                                  limit=page.limit, offset=page.offset)
    return Page[Note](items=[Note(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)
