"""Durable entries: store one with its evidence (then index it), read one, list them.

A store whose memory_type, scope and normalised content (NFC, whitespace runs collapsed, trimmed; case kept) equal
an active entry's is deduplicated: the database's unique index on the normalised-content key decides, so concurrent
identical stores also end with one entry; the duplicate store answers that entry with its evidence appended.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any
from uuid import UUID, uuid4

from agentmate import jobs
from agentmate.core import idempotency
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, NotFound, invalid
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import counted
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.memory import repository as repo
from agentmate.memory.repository import EntryRow
from agentmate.memory.schemas import (
    MAX_METADATA_BYTES,
    Entry,
    EntryCreate,
    EntryCreated,
    EntryDetail,
    EntryPage,
    Evidence,
    Indexing,
)
from agentmate.memory.service import scopes
from agentmate.memory.service.projection import (
    begin_index,
    finish_index,
    index_entry,
    index_in_transaction,
    indexing_state,
    waiting,
)
from agentmate.memory.service.rules import check_scope, check_size, require_scope_type, utc
from agentmate.retrieval.service import Retrieval


def _stored_new(result: Created[EntryCreated]) -> float:
    """The metric counts new memories: neither replays nor deduplicated stores."""
    return 0 if result.replay or result.value.deduplicated else 1


@counted("MemoryEntryCreated", _stored_new)
def create_entry(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    body: EntryCreate,
    idempotency_key: str | None = None,
) -> Created[EntryCreated]:
    """Store a durable memory with its evidence and its retrieval projection in one transaction (indexing failures
    are reported and queued for the heal job, not raised).

    The embedding starts on a worker thread before the transaction opens and is awaited after the entry, its
    evidence and its document row are written, so it overlaps the database work; the transaction runs in pipeline
    mode (BEGIN travels with the first query, the last write with COMMIT). The transaction waits for it only a
    short grace (``MEMORY_EMBED_GRACE_MS``): a slower embedding leaves the projection pending at the commit and is
    awaited with no connection held, then recorded in a second short transaction (``finish_index``), so a slow
    embedder cannot starve the pool. A replayed or deduplicated store writes
    no new projection: its embedding is dropped and the entry's state is read (or repaired) after the commit."""
    _check_create(body)
    data = body.model_dump(exclude={"evidence"})
    data["content_hash"] = hashlib.sha256(body.content.encode("utf-8")).hexdigest()
    evidence = [e.model_dump() for e in body.evidence]
    pending = begin_index(retrieval, body.title, body.summary, body.content)
    indexing: Indexing | None = None
    heal_job: UUID | None = None
    try:
        with db.tenant(principal.account_id, pipeline=True) as conn:
            result = idempotency.once(
                conn,
                account_id=principal.account_id,
                route="memory.entries.create",
                key=idempotency_key,
                request=body.model_dump(mode="json"),
                model=EntryCreated,
                create=lambda: _insert(conn, principal, body, data, evidence),
            )
            entry_id = result.value.id
            existing = result.replay or result.value.deduplicated
            row = (
                repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id) if existing else None
            )
            if not existing:
                indexing, heal_job = index_in_transaction(
                    conn,
                    pending,
                    principal.account_id,
                    result.value.model_dump(exclude={"evidence", "indexing"}),
                )
    except BaseException:
        pending.discard()
        raise
    if indexing is None:
        pending.discard()
    elif indexing.status == "pending":
        indexing, heal_job = finish_index(db, pending, principal.account_id)
    if heal_job is not None:
        jobs.wake(heal_job)
    if indexing is None:
        indexing = _index_if_missing(db, retrieval, principal, entry_id, row)
    return Created(result.value.model_copy(update={"indexing": indexing}), replay=result.replay)


def _check_create(body: EntryCreate) -> None:
    """Every field error of a create at once (a ``ValidationFailed``)."""
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


def _insert(
    conn: Conn, principal: Principal, body: EntryCreate, data: dict[str, Any], evidence: list[dict[str, Any]]
) -> EntryCreated:
    """The entry and its evidence, or the active entry it duplicates (``_deduplicated``).

    The quota's count, the entry and its evidence are sent together and read in one round trip (pipeline mode):
    the entry's id is chosen here, and the evidence insert adds nothing when the entry was not inserted (a
    duplicate). The quota is checked after them, and only for an entry actually added; a refusal rolls the
    transaction back, so nothing of the store remains."""
    if (
        body.source_event_id is not None
        and repo.get_event(conn, account_id=principal.account_id, event_id=body.source_event_id) is None
    ):
        raise invalid("source_event_id", "unknown memory event in this account")
    account_id, entry_id = principal.account_id, uuid4()
    room = limits.room_check(conn, "memories", get_limit_settings().max_memories, account_id=account_id)
    sent_row = repo.insert_entry(
        conn,
        account_id=account_id,
        user_id=principal.user_id,
        key_id=principal.key_id,
        entry_id=entry_id,
        data=data,
    )
    sent_evidence = repo.insert_evidence(
        conn,
        account_id=account_id,
        user_id=principal.user_id,
        key_id=principal.key_id,
        memory_id=entry_id,
        items=evidence,
    )
    row = sent_row.result()
    if row is None:
        return _deduplicated(conn, principal, data, evidence)
    room(1)
    ev = sent_evidence.result()
    scope_warning = scopes.new_scope_warning(
        conn, account_id, row["scope_type"], row["scope_key"], row.pop("new_scope", False)
    )
    return EntryCreated(**row, evidence=[Evidence(**e) for e in ev], scope_warning=scope_warning)


def _index_if_missing(
    db: TenantTransactions,
    retrieval: Retrieval,
    principal: Principal,
    entry_id: UUID,
    row: EntryRow | None,
) -> Indexing:
    """A replayed or deduplicated store's indexing state; an entry stored but never indexed (a crash between the
    commit and the indexing) is indexed now."""
    with db.tenant(principal.account_id) as conn:
        indexing = indexing_state(conn, principal.account_id, [entry_id])[entry_id]
    if indexing.status == "missing" and row is not None and row["status"] in ("active", "pending"):
        indexing = index_entry(db, retrieval, principal.account_id, row)
    return indexing


def _deduplicated(
    conn: Conn, principal: Principal, data: dict[str, Any], evidence: list[dict[str, Any]]
) -> EntryCreated:
    """The active entry this store duplicates, with the new evidence items appended (ones it already has with the
    same source_type, source_id and excerpt are not added twice, so a plain retry adds nothing). A source event
    other than the entry's own is provenance too: it is appended as a ``memory_event`` evidence item."""
    existing = repo.active_duplicate(conn, account_id=principal.account_id, data=data)
    if (
        existing is None
    ):  # pragma: no cover - the colliding entry was retired between the insert and this read
        raise Conflict("an identical memory was changed while this one was stored; retry")
    entry_id = existing["id"]
    source_event = data.get("source_event_id")
    if source_event is not None and source_event != existing["source_event_id"]:
        evidence = [
            *evidence,
            {"source_type": "memory_event", "source_id": str(source_event), "excerpt": "", "metadata": {}},
        ]
    have = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=[entry_id])[entry_id]
    seen = {(e["source_type"], e["source_id"], e["excerpt"]) for e in have}
    new: list[dict[str, Any]] = []
    for item in evidence:
        key = (item["source_type"], item["source_id"], item["excerpt"])
        if key not in seen:
            seen.add(key)
            new.append(item)
    if new:
        repo.insert_evidence(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            memory_id=entry_id,
            items=new,
        ).result()
        existing = repo.touch_entry(conn, account_id=principal.account_id, entry_id=entry_id)
    all_evidence = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=[entry_id])[entry_id]
    return EntryCreated(**existing, evidence=[Evidence(**e) for e in all_evidence], deduplicated=True)


def get_entry(db: TenantTransactions, principal: Principal, entry_id: UUID) -> EntryDetail:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if row is None:
            raise NotFound("memory entry")
        evidence = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=[entry_id])[entry_id]
        indexing = indexing_state(conn, principal.account_id, [entry_id])[entry_id]
        indexing.waiting = waiting(conn, principal.account_id)
    return EntryDetail(**row, evidence=[Evidence(**e) for e in evidence], indexing=indexing)


def list_entries(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    scope_type: str | None = None,
    scope_key: str | None = None,
    memory_type: str | None = None,
    status: str | None = None,
) -> EntryPage:
    require_scope_type(scope_type, scope_key)
    filters = {"scope_type": scope_type, "scope_key": scope_key, "memory_type": memory_type, "status": status}
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_entries(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
        nearest = scopes.nearest_if_empty(conn, principal.account_id, total, scope_type, scope_key)
    return EntryPage(
        items=[Entry(**r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
        nearest_scopes=nearest,
    )
