"""Curating entries after the fact: supersede (a chain, never a cycle) and usefulness feedback."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, FieldError, NotFound, ValidationFailed
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.memory import repository as repo
from agentmate.memory.readmodels import skill_executions
from agentmate.memory.schemas import (
    MAX_METADATA_BYTES,
    Entry,
    Feedback,
    FeedbackCreate,
    FeedbackRecorded,
    SupersedeRequest,
    SupersedeResult,
)
from agentmate.memory.service.projection import drop_points, remove_projection
from agentmate.memory.service.rules import check_size
from agentmate.retrieval.service import Retrieval


def supersede(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, entry_id: UUID, body: SupersedeRequest
) -> SupersedeResult:
    """``entry_id`` replaces ``body.superseded_id``: a chain, never a cycle; replays are idempotent."""
    old_id = body.superseded_id
    if old_id == entry_id:
        raise ValidationFailed(
            [
                FieldError("superseded_id", "an entry cannot supersede itself"),
                FieldError("entry_id", "equals superseded_id"),
            ]
        )
    with db.tenant(principal.account_id) as conn:
        rows = repo.lock_entries(conn, account_id=principal.account_id, ids=[entry_id, old_id])
        if entry_id not in rows:
            raise NotFound("memory entry", f"memory entry {entry_id} not found")
        if old_id not in rows:
            raise NotFound("memory entry", f"superseded entry {old_id} not found")
        old = rows[old_id]
        created = True
        if old["superseded_by"] == entry_id:
            created = False
        elif old["superseded_by"] is not None:
            raise Conflict(
                f"entry {old_id} is already superseded by {old['superseded_by']}; supersede that entry "
                "instead (supersedes form a chain)",
                extra={"superseded_by": str(old["superseded_by"])},
            )
        elif repo.chain_reaches(conn, account_id=principal.account_id, start=entry_id, target=old_id):
            raise Conflict(
                f"entry {entry_id} is itself (directly or through a chain) superseded by {old_id}: "
                "this supersede would make a cycle"
            )
        if created:
            old = repo.mark_superseded(
                conn, account_id=principal.account_id, entry_id=old_id, superseded_by=entry_id
            )
        point_ids = remove_projection(conn, principal.account_id, old_id)
        new = rows[entry_id]
    warning = drop_points(retrieval, principal.account_id, point_ids, "superseded")
    return SupersedeResult(
        superseding=Entry(**new),
        superseded=Entry(**old),
        projection_removed=len(point_ids),
        created=created,
        warning=warning,
    )


# -- feedback ----------------------------------------------------------------------------------------------------


@counted("MemoryFeedbackRecorded", new_only)
def add_feedback(
    db: TenantTransactions, principal: Principal, entry_id: UUID, body: FeedbackCreate
) -> Created[FeedbackRecorded]:
    """201 + created:true for a new signal (counter moved in the same transaction); 200 + the existing record
    when this memory already has this signal from this session."""
    errors = ErrorCollector()
    check_size(errors, "metadata", body.metadata, MAX_METADATA_BYTES)
    errors.raise_if_any()
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if entry is None:
            raise NotFound("memory entry")
        if body.skill_version_id is not None:
            skill_executions.require_version(
                conn, account_id=principal.account_id, version_id=body.skill_version_id
            )
        row = repo.insert_feedback(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            memory_id=entry_id,
            data=data,
        )
        created = row is not None
        if row is not None:
            entry = repo.count_feedback(
                conn, account_id=principal.account_id, entry_id=entry_id, signal=body.signal
            )
        else:
            row = repo.existing_feedback(
                conn,
                account_id=principal.account_id,
                memory_id=entry_id,
                session_id=body.session_id,
                signal=body.signal,
            )
            assert row is not None
    out = FeedbackRecorded(feedback=Feedback(**row), created=created, entry=Entry(**entry))
    return Created(out, replay=not created)


def list_feedback(
    db: TenantTransactions, principal: Principal, entry_id: UUID, page: PageParams
) -> Page[Feedback]:
    with db.tenant(principal.account_id) as conn:
        if repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id) is None:
            raise NotFound("memory entry")
        rows, total = repo.list_feedback(
            conn, account_id=principal.account_id, memory_id=entry_id, limit=page.limit, offset=page.offset
        )
    return Page[Feedback](
        items=[Feedback(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )
