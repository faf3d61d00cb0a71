"""Retire and forget: archive or invalidate an entry (it leaves search, its window closes, the journal records
why), delete one for good, forget a whole scope, and export a scope's memories first.

Deleting keeps no content: the entry, its evidence, feedback and retrieval projection go; a ``memory_forgotten``
tombstone event keeps only the entry id and the time. Journal events themselves are immutable and stay (an entry's
source event is the journal's, not the entry's). Supersede chains through a deleted entry are relinked to its
successor and remember the deleted link (``superseded_by_deleted``), and the response lists them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, NotFound, invalid
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.repository import DeletedEntry, EntryRow
from agentmate.memory.schemas import (
    DeletedLink,
    Entry,
    EntryDeleted,
    EntryRetire,
    EntryRetired,
    Evidence,
    ExportedEntry,
    ScopeForgotten,
    ScopeRef,
)
from agentmate.memory.service import scopes
from agentmate.memory.service.events import record_system_event
from agentmate.memory.service.projection import drop_points, remove_projection
from agentmate.memory.service.rules import check_scope
from agentmate.retrieval.service import Retrieval

RETIRABLE = ("active", "pending", "archived", "invalidated")
EXPORT_PAGE = 200


def retire(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, entry_id: UUID, body: EntryRetire
) -> EntryRetired:
    """Set status archived|invalidated with a reason; the same status again changes nothing."""
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id, lock=True)
        if entry is None:
            raise NotFound("memory entry")
        if entry["status"] == body.status:
            return EntryRetired(entry=Entry(**entry), changed=False, projection_removed=0, event_id=None)
        if entry["status"] not in RETIRABLE:
            raise Conflict(
                f"a {entry['status']} entry cannot be retired (it already left search); "
                "DELETE /api/memory/entries/{id} forgets it for good"
            )
        previous = entry["status"]
        entry = repo.retire_entry(
            conn, account_id=principal.account_id, entry_id=entry_id, status=body.status, reason=body.reason
        )
        point_ids = remove_projection(conn, principal.account_id, entry_id)
        event = record_system_event(
            conn,
            principal,
            event_type="memory_retired",
            idempotency_key=f"memory_retired:{entry_id}:{uuid.uuid4()}",
            payload={
                "entry_id": str(entry_id),
                "from": previous,
                "status": body.status,
                "reason": body.reason,
            },
            scope_type=entry["scope_type"],
            scope_key=entry["scope_key"],
        )
    return EntryRetired(
        entry=Entry(**entry),
        changed=True,
        projection_removed=len(point_ids),
        event_id=event["id"],
        warning=drop_points(retrieval, principal.account_id, point_ids, body.status),
    )


def _delete_in(conn: Conn, principal: Principal, entry: EntryRow) -> tuple[DeletedEntry, list[UUID], UUID]:
    """Delete one locked entry inside the caller's transaction: (counts and links, vector point ids, tombstone)."""
    point_ids = remove_projection(conn, principal.account_id, entry["id"])
    result = repo.delete_entry(conn, account_id=principal.account_id, entry=entry)
    tombstone = record_system_event(
        conn,
        principal,
        event_type="memory_forgotten",
        idempotency_key=f"memory_forgotten:{entry['id']}",
        payload={"entry_id": str(entry["id"])},
    )
    return result, point_ids, tombstone["id"]


def delete(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, entry_id: UUID
) -> EntryDeleted:
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id, lock=True)
        if entry is None:
            raise NotFound("memory entry")
        result, point_ids, tombstone = _delete_in(conn, principal, entry)
    return EntryDeleted(
        id=entry_id,
        evidence_deleted=result["evidence"],
        feedback_deleted=result["feedback"],
        projection_removed=len(point_ids),
        relinked=[DeletedLink(**r) for r in result["relinked"]],
        tombstone_event_id=tombstone,
        warning=drop_points(retrieval, principal.account_id, point_ids, "deleted"),
    )


def _scope(scope_type: str | None, scope_key: str | None) -> tuple[str, str]:
    scope_key = (scope_key or "").strip()
    if scope_type is None:
        raise invalid(
            "scope_type", "required: which scope", ["global", "project", "repository", "agent", "session"]
        )
    errors = ErrorCollector()
    check_scope(errors, scope_type, scope_key)
    errors.raise_if_any()
    return scope_type, scope_key


def forget_scope(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    *,
    scope_type: str | None,
    scope_key: str | None,
    confirm: bool,
) -> ScopeForgotten:
    """Delete every entry of one scope for good (each as DELETE /entries/:id does); needs confirm=true."""
    scope_type, scope_key = _scope(scope_type, scope_key)
    if not confirm:
        raise invalid(
            "confirm", "must be true: this deletes every memory of the scope for good (export it first)"
        )
    all_points: list[UUID] = []
    deleted = 0
    with db.tenant(principal.account_id) as conn:
        for locked in repo.entries_in_scope(
            conn, account_id=principal.account_id, scope_type=scope_type, scope_key=scope_key
        ):
            # Re-read: deleting an earlier entry may have relinked this one's chain.
            entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=locked["id"]) or locked
            _, point_ids, _ = _delete_in(conn, principal, entry)
            all_points += point_ids
            deleted += 1
        nearest = scopes.nearest_if_empty(conn, principal.account_id, deleted, scope_type, scope_key)
    return ScopeForgotten(
        scope_type=scope_type,  # type: ignore[arg-type]
        scope_key=scope_key,
        deleted=deleted,
        projection_removed=len(all_points),
        warning=drop_points(retrieval, principal.account_id, all_points, "deleted"),
        nearest_scopes=nearest,
    )


@dataclass(frozen=True)
class ScopeExport:
    rows: Iterator[ExportedEntry]
    nearest_scopes: list[ScopeRef] | None  # set when the scope has no entries (see scopes.nearest_if_empty)


def export_scope(
    db: TenantTransactions, principal: Principal, *, scope_type: str | None, scope_key: str | None
) -> ScopeExport:
    """A scope's entries (any status) with their evidence, in id order. The first page is read before the
    response starts, so an empty export can still say which scopes were probably meant."""
    scope_type, scope_key = _scope(scope_type, scope_key)

    def page_after(after: UUID | None) -> list[ExportedEntry]:
        with db.tenant(principal.account_id) as conn:
            page = repo.export_page(
                conn,
                account_id=principal.account_id,
                scope_type=scope_type,
                scope_key=scope_key,
                after=after,
                limit=EXPORT_PAGE,
            )
            evidence = repo.evidence_for(
                conn, account_id=principal.account_id, memory_ids=[r["id"] for r in page]
            )
        return [ExportedEntry(**r, evidence=[Evidence(**e) for e in evidence[r["id"]]]) for r in page]

    first = page_after(None)
    nearest = None
    if not first:
        with db.tenant(principal.account_id) as conn:
            nearest = scopes.nearest_if_empty(conn, principal.account_id, 0, scope_type, scope_key)

    def rows() -> Iterator[ExportedEntry]:
        page = first
        while True:
            yield from page
            if len(page) < EXPORT_PAGE:
                return
            page = page_after(page[-1].id)

    return ScopeExport(rows(), nearest)
