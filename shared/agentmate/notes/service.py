"""Note use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from uuid import UUID

from agentmate.core import records
from agentmate.core.db import TenantTransactions
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.notes import repository as repo
from agentmate.notes.schemas import Note, NoteAppend

# create / get / update / delete: the shared record use cases (agentmate.core.records).
_records = records.RecordService(resource="note", model=Note, repo=repo, id_field="note_id")
create = _records.create
get = _records.get
update = _records.update
delete = _records.delete
tags = _records.tags  # the tag roster: GET /api/tags?module=notes, the notes_tags tool


def append(db: TenantTransactions, principal: Principal, note_id: UUID, body: NoteAppend) -> Note:
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


def search(
    db: TenantTransactions,
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


def containing_any_of(
    db: TenantTransactions, principal: Principal, substrings: list[str], limit: int
) -> list[Note]:
    """At most ``limit`` notes whose text contains any of ``substrings`` (case-insensitive), those containing the most
    first, then newest: the context pack ranks them word by word (``retrieval.bm25``)."""
    with db.tenant(principal.account_id) as conn:
        rows = repo.containing_any_of(
            conn, account_id=principal.account_id, substrings=substrings, limit=limit
        )
    return [Note(**r) for r in rows]
