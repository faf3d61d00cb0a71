"""Durable entries: store one with its evidence (then index it), read one, list them."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from uuid import UUID

from agentmate.core import idempotency
from agentmate.core.db import Database
from agentmate.core.errors import ErrorCollector, NotFound, invalid
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.memory import repository as repo
from agentmate.memory.schemas import (
    MAX_METADATA_BYTES,
    Entry,
    EntryCreate,
    EntryCreated,
    EntryDetail,
    Evidence,
)
from agentmate.memory.service.projection import index_entry, indexing_state
from agentmate.memory.service.rules import check_scope, check_size, utc
from agentmate.retrieval.service import Retrieval


@counted("MemoryEntryCreated", new_only)
def create_entry(
    db: Database,
    retrieval: Retrieval,
    principal: Principal,
    body: EntryCreate,
    idempotency_key: str | None = None,
) -> Created[EntryCreated]:
    """Store a durable memory with its evidence, then index it (indexing failures are reported, not raised)."""
    errors = ErrorCollector()
    check_scope(errors, body.scope_type, body.scope_key)
    if body.source_event_id is None and not body.evidence:
        errors.add(
            "evidence",
            "a durable memory needs provenance: source_event_id or at least one evidence item "
            "({source_type, source_id, excerpt})",
        )
    if not body.content.strip():
        errors.add("content", "must not be blank")
    valid_from = utc(body.valid_from) if body.valid_from else None
    if body.valid_to is not None and utc(body.valid_to) < (valid_from or datetime.now(UTC)):
        errors.add("valid_to", "must not be before valid_from (which defaults to now)")
    check_size(errors, "metadata", body.metadata, MAX_METADATA_BYTES)
    errors.raise_if_any()
    data = body.model_dump(exclude={"evidence"})
    data["content_hash"] = hashlib.sha256(body.content.encode("utf-8")).hexdigest()
    evidence = [e.model_dump() for e in body.evidence]
    with db.tenant(principal.account_id) as conn:

        def insert() -> EntryCreated:
            if (
                body.source_event_id is not None
                and repo.get_event(conn, account_id=principal.account_id, event_id=body.source_event_id)
                is None
            ):
                raise invalid("source_event_id", "unknown memory event in this account")
            row = repo.insert_entry(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data=data,
            )
            ev = repo.insert_evidence(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                memory_id=row["id"],
                items=evidence,
            )
            return EntryCreated(**row, evidence=[Evidence(**e) for e in ev])

        result = idempotency.once(
            conn,
            account_id=principal.account_id,
            route="memory.entries.create",
            key=idempotency_key,
            request=body.model_dump(mode="json"),
            model=EntryCreated,
            create=insert,
        )
        entry_id = result.value.id
        row = (
            repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
            if result.replay
            else None
        )
    if result.replay:
        with db.tenant(principal.account_id) as conn:
            indexing = indexing_state(conn, principal.account_id, [entry_id])[entry_id]
        if indexing.status == "missing" and row is not None and row["status"] in ("active", "pending"):
            indexing = index_entry(db, retrieval, principal.account_id, row)  # a crash between commit and indexing
    else:
        indexing = index_entry(db, retrieval, principal.account_id, result.value.model_dump(exclude={"evidence", "indexing"}))
    return Created(result.value.model_copy(update={"indexing": indexing}), replay=result.replay)


def get_entry(db: Database, principal: Principal, entry_id: UUID) -> EntryDetail:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if row is None:
            raise NotFound("memory entry")
        evidence = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=[entry_id])[entry_id]
        indexing = indexing_state(conn, principal.account_id, [entry_id])[entry_id]
    return EntryDetail(**row, evidence=[Evidence(**e) for e in evidence], indexing=indexing)


def list_entries(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    scope_type: str | None = None,
    scope_key: str | None = None,
    memory_type: str | None = None,
    status: str | None = None,
) -> Page[Entry]:
    filters = {"scope_type": scope_type, "scope_key": scope_key, "memory_type": memory_type, "status": status}
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_entries(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[Entry](items=[Entry(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)
