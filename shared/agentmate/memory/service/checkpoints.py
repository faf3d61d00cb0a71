"""Checkpoints (a snapshot stored as a ``checkpoint`` journal event), resume (the latest checkpoint plus what
happened after it) and the journal's sessions (how a new process finds the session it was working in)."""

from __future__ import annotations

from typing import Any

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import ErrorCollector, invalid
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
    CHECKPOINT_STRING_FIELDS,
    Checkpoint,
    CheckpointCreate,
    CheckpointSaved,
    EventCreate,
    JournalSession,
    JournalSessionPage,
    Resume,
    ResumeResolution,
    ResumeSelection,
)
from agentmate.memory.service import scopes
from agentmate.memory.service.events import event_data, record_in
from agentmate.memory.service.provenance import timeline_items
from agentmate.memory.service.rules import check_scope, json_text, require_scope_type

RESUME_LIMIT = 200
JOURNAL_ONLY_LIMIT = 50


def checkpoint_payload(body: CheckpointCreate) -> dict[str, Any]:
    """The stored payload: goal plus the non-empty optional fields (list items trimmed, blanks dropped)."""
    payload: dict[str, Any] = {"goal": body.goal}
    if body.label:
        payload["label"] = body.label
    for key in CHECKPOINT_LIST_FIELDS:
        items = [s.strip() for s in getattr(body, key) if s.strip()]
        if items:
            payload[key] = items
    if body.notes.strip():
        payload["notes"] = body.notes.strip()
    return payload


def default_checkpoint_key(session_id: str, payload: dict[str, Any]) -> str:
    return f"checkpoint:{session_id}:{canonical_hash(payload)}"


def decode_checkpoint(row: EventRow) -> Checkpoint:
    """Read a checkpoint event field by field; wrong types degrade with a warning instead of failing."""
    payload = row["payload"] if isinstance(row["payload"], dict) else {}
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key in CHECKPOINT_STRING_FIELDS:
        value = payload.get(key, "")
        if not isinstance(value, str):
            problems.append(f"{key} is not a string")
            value = "" if value is None else json_text(value)
        values[key] = value
    for key in CHECKPOINT_LIST_FIELDS:
        value = payload.get(key, [])
        if isinstance(value, str):
            problems.append(f"{key} was a string, read as a one-item list")
            value = [value] if value.strip() else []
        elif not isinstance(value, list):
            problems.append(f"{key} is not a list")
            value = []
        values[key] = [v if isinstance(v, str) else json_text(v) for v in value]
    unknown = sorted(k for k in payload if k not in CHECKPOINT_FIELDS)
    if unknown:
        problems.append("ignored unknown keys: " + ", ".join(unknown))
    return Checkpoint(
        event_id=row["id"],
        session_id=row["session_id"],
        scope_type=row["scope_type"],
        scope_key=row["scope_key"],
        skill_version_id=row["skill_version_id"],
        idempotency_key=row["idempotency_key"],
        occurred_at=row["occurred_at"],
        warning="; ".join(problems) or None,
        **values,
    )


@counted("MemoryCheckpointSaved", new_only)
def save_checkpoint(
    db: TenantTransactions, principal: Principal, body: CheckpointCreate
) -> Created[CheckpointSaved]:
    """Store the snapshot as a ``checkpoint`` journal event; unchanged state under the default key is a no-op."""
    payload = checkpoint_payload(body)
    key = body.idempotency_key or default_checkpoint_key(body.session_id, payload)
    event = EventCreate(
        event_type="checkpoint",
        idempotency_key=key,
        payload=payload,
        scope_type=body.scope_type,
        scope_key=body.scope_key,
        session_id=body.session_id,
        skill_version_id=body.skill_version_id,
    )
    data = event_data(event)
    warning = None
    with db.tenant(principal.account_id) as conn:
        row, created, scope_warning = record_in(conn, principal, data)
        if not created:
            latest = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=body.session_id)
            if latest is not None and latest["id"] != row["id"]:
                warning = (
                    "identical to an earlier checkpoint, but a different checkpoint was saved after it, so "
                    "resume returns that later one; send an explicit idempotency_key to record this state "
                    "again as the latest"
                )
    out = CheckpointSaved(
        checkpoint=decode_checkpoint(row),
        created=created,
        warning=warning,
        scope_warning=scope_warning,
    )
    return Created(out, replay=not created)


def _session_to_resume(
    conn: Conn, principal: Principal, session_id: str | None, scope_type: str | None, scope_key: str | None
) -> tuple[str | None, ResumeSelection]:
    """The session asked for, or (scope form) the one whose latest event in the scope is newest."""
    session_id = (session_id or "").strip() or None
    scope_key = (scope_key or "").strip()
    if session_id is not None:
        if scope_type is not None or scope_key:
            raise invalid("session_id", "send either session_id or scope_type (+ scope_key), not both")
        return session_id, "session_id"
    if scope_type is None:
        require_scope_type(scope_type, scope_key)
        raise invalid(
            "session_id",
            "required, or scope_type (+ scope_key) to resume the latest session of a scope "
            "(GET /api/memory/journal/sessions, or memory_journal_sessions over MCP, lists them)",
        )
    errors = ErrorCollector()
    check_scope(errors, scope_type, scope_key)
    errors.raise_if_any()
    chosen = repo.latest_session_in_scope(
        conn, account_id=principal.account_id, scope_type=scope_type, scope_key=scope_key
    )
    return chosen, "scope"


def resume(
    db: TenantTransactions,
    principal: Principal,
    session_id: str | None = None,
    *,
    scope_type: str | None = None,
    scope_key: str | None = None,
) -> Resume:
    """The latest checkpoint plus everything recorded after it (or the journal tail when there is none), of one
    session, or of the session whose latest event in a scope is newest."""
    with db.tenant(principal.account_id) as conn:
        chosen, selected_by = _session_to_resume(conn, principal, session_id, scope_type, scope_key)
        if chosen is None:
            assert scope_type is not None
            nearest = scopes.nearest_if_empty(conn, principal.account_id, 0, scope_type, scope_key)
            return Resume(
                session_id=None,
                selected_by=selected_by,
                resolution="empty",
                checkpoint=None,
                since_checkpoint=[],
                truncated=False,
                nearest_scopes=nearest,
            )
        cp = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=chosen)
        limit = RESUME_LIMIT if cp is not None else JOURNAL_ONLY_LIMIT
        after = (cp["occurred_at"], cp["created_at"], cp["id"]) if cp is not None else None
        rows = skill_executions.timeline(
            conn,
            account_id=principal.account_id,
            session_id=chosen,
            skill_version_id=None,
            limit=limit + 1,
            after=after,
            tail=True,
        )
    truncated = len(rows) > limit
    items = timeline_items(rows[-limit:] if truncated else rows)
    resolution: ResumeResolution
    if cp is not None:
        resolution = "checkpoint"
    else:
        resolution = "journal_only" if items else "empty"
    return Resume(
        session_id=chosen,
        selected_by=selected_by,
        resolution=resolution,
        checkpoint=decode_checkpoint(cp) if cp is not None else None,
        since_checkpoint=items,
        truncated=truncated,
        note=UNKNOWN_SESSION_NOTE
        if resolution == "empty"
        else _other_scope_note(cp, selected_by, scope_type, scope_key),
    )


UNKNOWN_SESSION_NOTE = (
    "nothing is recorded under this session_id; after a restart your process has a new one: resume by scope "
    "(scope_type + scope_key) or find the session with GET /api/memory/journal/sessions (memory_journal_sessions "
    "over MCP)"
)


def _other_scope_note(
    cp: EventRow | None, selected_by: str, scope_type: str | None, scope_key: str | None
) -> str | None:
    """A session is resumed whole, so a scope's resume can return a checkpoint saved elsewhere: say so."""
    if cp is None or selected_by != "scope":
        return None
    saved, requested = (cp["scope_type"], cp["scope_key"]), (scope_type, (scope_key or "").strip())
    if saved == requested:
        return None
    saved_in, asked = (":".join(filter(None, scope)) for scope in (saved, requested))  # global has no key
    return (
        f"this session's latest checkpoint was saved in scope {saved_in}, not {asked}; "
        "a session resumes from its latest checkpoint whatever its scope (save checkpoints with the scope you "
        "work in)"
    )


def journal_sessions(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    scope_type: str | None = None,
    scope_key: str | None = None,
) -> JournalSessionPage:
    """The journal's sessions (not working-memory sessions), newest activity first, optionally within a scope."""
    scope_key = (scope_key or "").strip()
    require_scope_type(scope_type, scope_key)
    scope: tuple[str, str] | None = None
    if scope_type is not None:
        errors = ErrorCollector()
        check_scope(errors, scope_type, scope_key)
        errors.raise_if_any()
        scope = (scope_type, scope_key)
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.journal_sessions(
            conn, account_id=principal.account_id, scope=scope, limit=page.limit, offset=page.offset
        )
        nearest = scopes.nearest_if_empty(conn, principal.account_id, total, scope_type, scope_key)
    return JournalSessionPage(
        items=[JournalSession(**r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
        nearest_scopes=nearest,
    )
