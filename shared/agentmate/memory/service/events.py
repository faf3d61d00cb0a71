"""Journal events: append (or replay) one event, read events back, list the scopes in use.

An event's idempotency key is required; a replay with the same content answers the stored event, different
content is a 409. The content hash is the canonical JSON hash of the normalised event (prior-art §4.4).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, NotFound
from agentmate.core.idempotency import canonical_hash
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.memory import repository as repo
from agentmate.memory.readmodels import skill_executions
from agentmate.memory.repository import EventRow
from agentmate.memory.schemas import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_LIST_FIELDS,
    MAX_CHECKPOINT_ITEM_CHARS,
    MAX_CHECKPOINT_ITEMS,
    MAX_PAYLOAD_BYTES,
    Event,
    EventCreate,
    EventDetail,
    EventPage,
    EventRecorded,
)
from agentmate.memory.service import scopes
from agentmate.memory.service.rules import check_scope, check_size, require_scope_type, utc

EMPTY_PAYLOAD_WARNING = (
    "payload is empty: this event carries no content. An event's content goes inside payload "
    "(top-level fields such as content are rejected)."
)


def event_content_hash(data: dict[str, Any]) -> str:
    """The canonical JSON hash of the normalised event (prior-art §4.4): occurred_at only when the caller
    supplied it, skill_version_id only when set."""
    doc: dict[str, Any] = {
        "scope_type": data["scope_type"],
        "scope_key": data["scope_key"],
        "session_id": data["session_id"],
        "sequence_no": data["sequence_no"],
        "event_type": data["event_type"],
        "payload": data["payload"],
        "source_type": data["source_type"],
        "source_id": data["source_id"],
    }
    if data.get("occurred_at") is not None:
        doc["occurred_at"] = utc(data["occurred_at"]).isoformat().replace("+00:00", "Z")
    if data.get("skill_version_id") is not None:
        doc["skill_version_id"] = str(data["skill_version_id"])
    return canonical_hash(doc)


def checkpoint_payload_errors(
    payload: dict[str, Any], errors: ErrorCollector, prefix: str = "payload."
) -> None:
    """A checkpoint payload is exactly: goal (required), label, notes (strings); done, next, open (string lists)."""
    for key in payload:
        if key not in CHECKPOINT_FIELDS:
            errors.add(prefix + key, "unknown checkpoint field", list(CHECKPOINT_FIELDS))
    goal = payload.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        errors.add(prefix + "goal", "required: a non-empty string")
    for key in ("label", "notes"):
        if key in payload and not isinstance(payload[key], str):
            errors.add(prefix + key, "must be a string")
    for key in CHECKPOINT_LIST_FIELDS:
        if key not in payload:
            continue
        value = payload[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors.add(prefix + key, "must be an array of strings")
        elif len(value) > MAX_CHECKPOINT_ITEMS or any(len(v) > MAX_CHECKPOINT_ITEM_CHARS for v in value):
            errors.add(
                prefix + key,
                f"at most {MAX_CHECKPOINT_ITEMS} items of {MAX_CHECKPOINT_ITEM_CHARS} characters",
            )


def event_data(body: EventCreate) -> dict[str, Any]:
    errors = ErrorCollector()
    check_scope(errors, body.scope_type, body.scope_key)
    if body.sequence_no is not None and not body.session_id:
        errors.add("sequence_no", "requires session_id")
        errors.add("session_id", "required when sequence_no is sent")
    if bool(body.source_type) != bool(body.source_id):
        errors.add("source_type", "source_type and source_id go together")
        errors.add("source_id", "source_type and source_id go together")
    check_size(errors, "payload", body.payload, MAX_PAYLOAD_BYTES)
    if body.event_type == "checkpoint":
        if not body.session_id:
            errors.add("session_id", "required for checkpoint events (resume works per session)")
        checkpoint_payload_errors(body.payload, errors)
    errors.raise_if_any()
    data = body.model_dump()
    if data["occurred_at"] is not None:
        data["occurred_at"] = utc(data["occurred_at"])
    data["content_hash"] = event_content_hash(data)
    return data


def recorded(row: EventRow, created: bool, scope_warning: str | None) -> EventRecorded:
    warning = EMPTY_PAYLOAD_WARNING if not row["payload"] else None
    return EventRecorded(**row, created=created, warning=warning, scope_warning=scope_warning)


def record_in(conn: Conn, principal: Principal, data: dict[str, Any]) -> tuple[EventRow, bool, str | None]:
    """Append (or replay) one event inside the caller's transaction: (row, created, scope warning)."""
    if data["skill_version_id"] is not None:
        skill_executions.require_version(
            conn, account_id=principal.account_id, version_id=data["skill_version_id"]
        )
    # A broken constraint (a sequence_no taken in the session, a vanished skill version) is reported by its
    # name through the repository's CONSTRAINTS table, naming the field that broke it.
    inserted = repo.insert_event(
        conn,
        account_id=principal.account_id,
        user_id=principal.user_id,
        key_id=principal.key_id,
        data=data,
    )
    if inserted is not None:
        row, new_scope = inserted
        warning = scopes.new_scope_warning(
            conn, principal.account_id, row["scope_type"], row["scope_key"], new_scope
        )
        return row, True, warning
    existing = repo.event_by_key(
        conn, account_id=principal.account_id, idempotency_key=data["idempotency_key"]
    )
    if existing is None:  # pragma: no cover - the conflicting row is committed before ON CONFLICT resolves
        raise Conflict("an event with this idempotency_key is still being written; retry")
    if existing["content_hash"] != data["content_hash"]:
        differing = _differing_fields(existing, data)
        raise Conflict(
            "idempotency_key was already used with different event content (attribution included): "
            f"{', '.join(differing)} differ from the stored event; retries must resend the same event, a new "
            "event needs a new key",
            extra={"existing_event_id": str(existing["id"]), "differing_fields": differing},
        )
    return existing, False, None


HASHED_FIELDS = (
    "scope_type",
    "scope_key",
    "session_id",
    "sequence_no",
    "event_type",
    "payload",
    "source_type",
    "source_id",
    "occurred_at",
    "skill_version_id",
)


def _differing_fields(existing: EventRow, data: dict[str, Any]) -> list[str]:
    """The hashed fields of a retry that differ from the stored event (occurred_at only when the retry sent it)."""
    out = []
    for name in HASHED_FIELDS:
        new = data.get(name)
        if name == "occurred_at" and new is None:
            continue
        if existing.get(name) != new:
            out.append(name)
    return out or ["occurred_at"]  # the stored event was hashed with the occurred_at this retry left out


@counted("MemoryEventRecorded", new_only)
def record_event(db: TenantTransactions, principal: Principal, body: EventCreate) -> Created[EventRecorded]:
    """A new event, or a replay (same key, same content); a Conflict for the same key with different content."""
    data = event_data(body)
    with db.tenant(principal.account_id) as conn:
        row, created, scope_warning = record_in(conn, principal, data)
    return Created(recorded(row, created, scope_warning), replay=not created)


def get_event(db: TenantTransactions, principal: Principal, event_id: UUID) -> EventDetail:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_event(conn, account_id=principal.account_id, event_id=event_id)
    if row is None:
        raise NotFound("memory event")
    return EventDetail(**row, warning=EMPTY_PAYLOAD_WARNING if not row["payload"] else None)


def list_events(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    session_id: str | None = None,
    scope_type: str | None = None,
    scope_key: str | None = None,
    event_type: str | None = None,
) -> EventPage:
    require_scope_type(scope_type, scope_key)
    filters = {
        "session_id": session_id,
        "scope_type": scope_type,
        "scope_key": scope_key,
        "event_type": event_type,
    }
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_events(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
        nearest = scopes.nearest_if_empty(conn, principal.account_id, total, scope_type, scope_key)
    return EventPage(
        items=[Event(**r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
        nearest_scopes=nearest,
    )


def record_system_event(
    conn: Conn,
    principal: Principal,
    *,
    event_type: str,
    idempotency_key: str,
    payload: dict[str, Any],
    scope_type: str = "global",
    scope_key: str = "",
) -> EventRow:
    """Append an event the service writes itself (memory_retired, memory_forgotten) in the caller's transaction;
    an existing event under the same key is returned as it is."""
    data: dict[str, Any] = {
        "event_type": event_type,
        "idempotency_key": idempotency_key,
        "payload": payload,
        "scope_type": scope_type,
        "scope_key": scope_key,
        "session_id": "",
        "sequence_no": None,
        "source_type": "",
        "source_id": "",
        "occurred_at": None,
        "skill_version_id": None,
    }
    data["content_hash"] = event_content_hash(data)
    inserted = repo.insert_event(
        conn, account_id=principal.account_id, user_id=principal.user_id, key_id=principal.key_id, data=data
    )
    row = inserted[0] if inserted is not None else None
    if row is None:
        row = repo.event_by_key(conn, account_id=principal.account_id, idempotency_key=idempotency_key)
    assert row is not None
    return row
