"""Checkpoints (a snapshot stored as a ``checkpoint`` journal event) and resume (the latest checkpoint plus what
happened after it)."""

from __future__ import annotations

from typing import Any

from agentmate.core.db import Database
from agentmate.core.errors import invalid
from agentmate.core.idempotency import canonical_hash
from agentmate.core.observability import counted, new_only
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.memory import repository as repo
from agentmate.memory.readmodels import skill_executions
from agentmate.memory.schemas import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_LIST_FIELDS,
    CHECKPOINT_STRING_FIELDS,
    Checkpoint,
    CheckpointCreate,
    CheckpointSaved,
    EventCreate,
    Resume,
    ResumeResolution,
)
from agentmate.memory.service.events import event_data, record_in
from agentmate.memory.service.provenance import timeline_items
from agentmate.memory.service.rules import json_text

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


def decode_checkpoint(row: dict[str, Any]) -> Checkpoint:
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
def save_checkpoint(db: Database, principal: Principal, body: CheckpointCreate) -> Created[CheckpointSaved]:
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
        row, created = record_in(conn, principal, data)
        if not created:
            latest = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=body.session_id)
            if latest is not None and latest["id"] != row["id"]:
                warning = (
                    "identical to an earlier checkpoint, but a different checkpoint was saved after it, so "
                    "resume returns that later one; send an explicit idempotency_key to record this state "
                    "again as the latest"
                )
    out = CheckpointSaved(checkpoint=decode_checkpoint(row), created=created, warning=warning)
    return Created(out, replay=not created)


def resume(db: Database, principal: Principal, session_id: str) -> Resume:
    """The latest checkpoint plus everything recorded after it (or the journal tail when there is none)."""
    session_id = session_id.strip()
    if not session_id:
        raise invalid("session_id", "required")
    with db.tenant(principal.account_id) as conn:
        cp = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=session_id)
        limit = RESUME_LIMIT if cp is not None else JOURNAL_ONLY_LIMIT
        after = (cp["occurred_at"], cp["created_at"], cp["id"]) if cp is not None else None
        rows = skill_executions.timeline(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
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
        session_id=session_id,
        resolution=resolution,
        checkpoint=decode_checkpoint(cp) if cp is not None else None,
        since_checkpoint=items,
        truncated=truncated,
    )
