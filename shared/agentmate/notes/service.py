"""Note use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import records
from agentmate.core.db import Database
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.notes import repository as repo
from agentmate.notes.schemas import Note, NoteAppend, NoteCreate, NoteUpdate

NOT_NULL = ("title", "content", "tags")


def create(
    db: Database, principal: Principal, body: NoteCreate, idempotency_key: str | None = None
) -> Outcome:
    return records.create(
        db,
        principal,
        body,
        route="notes.create",
        model=Note,
        insert=repo.insert,
        idempotency_key=idempotency_key,
    )


def get(db: Database, principal: Principal, note_id: UUID) -> Note:
    """One note by id; 404 if it does not exist in this account."""
    return records.one(
        db,
        principal,
        "note",
        Note,
        lambda conn, account_id: repo.get(conn, account_id=account_id, note_id=note_id),
    )


def update(db: Database, principal: Principal, note_id: UUID, body: NoteUpdate) -> Note:
    """Change the fields sent; the others stay as they are."""
    changes = records.changes(body, NOT_NULL)
    return records.one(
        db,
        principal,
        "note",
        Note,
        lambda conn, account_id: repo.update(conn, account_id=account_id, note_id=note_id, changes=changes),
    )


def append(db: Database, principal: Principal, note_id: UUID, body: NoteAppend) -> Note:
    """Append ``body.content`` verbatim (no separator) to the note's content."""
    return records.one(
        db,
        principal,
        "note",
        Note,
        lambda conn, account_id: repo.append(
            conn, account_id=account_id, note_id=note_id, content=body.content
        ),
    )


def delete(db: Database, principal: Principal, note_id: UUID) -> None:
    records.remove(
        db,
        principal,
        "note",
        lambda conn, account_id: repo.delete(conn, account_id=account_id, note_id=note_id),
    )


def search(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    tags: list[str] | None = None,
    q: str | None = None,
) -> Page[Note]:
    """Notes newest first. ``tags`` all must match (normalised here); ``q`` is a case-insensitive substring of
    title or content. Blank values mean "no filter"."""
    wanted, given = records.filters(tags, q=q)
    text = given["q"]
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn, account_id=principal.account_id, tags=wanted, q=text, limit=page.limit, offset=page.offset
        )
    return Page[Note](items=[Note(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)
