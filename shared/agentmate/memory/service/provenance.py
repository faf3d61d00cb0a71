"""Timeline and attribution: skill executions and journal events of one session or skill version, and an
entry's chain entry → source event → skill version (read through the skill-executions read model)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import TenantTransactions
from agentmate.core.errors import FieldError, NotFound, ValidationFailed, invalid
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.readmodels import skill_executions
from agentmate.memory.schemas import TIMELINE_MAX_LIMIT as TIMELINE_MAX_LIMIT
from agentmate.memory.schemas import Attribution, Resolution, Timeline, TimelineItem

TIMELINE_DEFAULT_LIMIT = 200
ATTRIBUTION_TIMELINE_LIMIT = 50


def timeline_items(rows: list[dict[str, Any]]) -> list[TimelineItem]:
    out = []
    for r in rows:
        r = dict(r)
        r.pop("recorded_at", None)
        out.append(TimelineItem(**r, attributed=r["skill_version_id"] is not None))
    return out


def timeline(
    db: TenantTransactions,
    principal: Principal,
    *,
    session_id: str | None = None,
    skill_version_id: UUID | None = None,
    limit: int = TIMELINE_DEFAULT_LIMIT,
) -> Timeline:
    """Skill executions and journal events of one session and/or skill version, in time order."""
    session_id = (session_id or "").strip() or None
    if session_id is None and skill_version_id is None:
        why = "session_id or skill_version_id is required: an unfiltered account-wide timeline is a data dump"
        raise ValidationFailed([FieldError("session_id", why), FieldError("skill_version_id", why)])
    if not 1 <= limit <= TIMELINE_MAX_LIMIT:
        raise invalid("limit", f"must be 1..{TIMELINE_MAX_LIMIT}")
    with db.tenant(principal.account_id) as conn:
        if skill_version_id is not None and not skill_executions.version_exists(
            conn, account_id=principal.account_id, version_id=skill_version_id
        ):
            raise NotFound("skill version")
        rows = skill_executions.timeline(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
            skill_version_id=skill_version_id,
            limit=limit + 1,
        )
    truncated = len(rows) > limit
    items = timeline_items(rows[:limit])
    return Timeline(
        session_id=session_id,
        skill_version_id=skill_version_id,
        items=items,
        total=len(items),
        skill_log_count=sum(1 for i in items if i.kind == "skill_log"),
        memory_event_count=sum(1 for i in items if i.kind == "memory_event"),
        unattributed_count=sum(1 for i in items if not i.attributed),
        truncated=truncated,
        limit=limit,
    )


def attribution(db: TenantTransactions, principal: Principal, entry_id: UUID) -> Attribution:
    """Entry → source event → skill version, and how far that chain resolved."""
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if entry is None:
            raise NotFound("memory entry")
        event = None
        if entry["source_event_id"] is not None:
            event = skill_executions.event_with_version(
                conn, account_id=principal.account_id, event_id=entry["source_event_id"]
            )
        if event is None:
            return Attribution(entry_id=entry_id, resolution="none")
        session_id = event["session_id"] or None
        resolution: Resolution
        if event["skill_version_id"] is not None:
            resolution = "skill_version"
        elif session_id:
            resolution = "session_only"
        else:
            resolution = "event_only"
        rows = None
        if session_id:
            rows = skill_executions.timeline(
                conn,
                account_id=principal.account_id,
                session_id=session_id,
                skill_version_id=None,
                limit=ATTRIBUTION_TIMELINE_LIMIT + 1,
            )
    return Attribution(
        entry_id=entry_id,
        resolution=resolution,
        source_event_id=event["id"],
        session_id=session_id,
        skill_version_id=event["skill_version_id"],
        skill_name=event["skill_name"],
        skill_version=event["skill_version"],
        session_timeline=timeline_items(rows[:ATTRIBUTION_TIMELINE_LIMIT]) if rows is not None else None,
        session_timeline_truncated=(len(rows) > ATTRIBUTION_TIMELINE_LIMIT) if rows is not None else None,
    )
