"""Read model over the skills domain, for attribution: which skill version an event or feedback names, and the
timeline that merges skill executions (``skill_logs``) with journal events.

This is the only memory module that reads the skills domain (its service and its tables).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.lazy import lazy_module

# Loaded on the first attribution check, not at the memory function's cold start: the skills service brings the
# skills schemas (and through them the compile and job models) along.
if TYPE_CHECKING:
    from agentmate.skills import repository as skills_repo
    from agentmate.skills import service as skills_service
else:
    skills_repo = lazy_module("agentmate.skills.repository")
    skills_service = lazy_module("agentmate.skills.service")


def require_version(conn: Conn, *, account_id: UUID, version_id: UUID) -> None:
    """A 400 naming skill_version_id unless the version exists in this account."""
    skills_service.resolve_version(conn, account_id=account_id, version_id=version_id)


def version_exists(conn: Conn, *, account_id: UUID, version_id: UUID) -> bool:
    return skills_repo.version_ref(conn, account_id=account_id, version_id=version_id) is not None


def timeline(
    conn: Conn,
    *,
    account_id: UUID,
    session_id: str | None,
    skill_version_id: UUID | None,
    limit: int,
    after: tuple[datetime, datetime, UUID] | None = None,
    tail: bool = False,
) -> list[dict[str, Any]]:
    """Skill executions and journal events merged in time order (up to ``limit`` rows: the first ones, or the
    last ones with ``tail``).

    ``after`` = (occurred_at, created_at, id) of a checkpoint: only what happened or was recorded after it.
    """
    params: dict[str, Any] = {"a": account_id, "limit": limit}
    log_where = ["l.account_id = %(a)s"]
    event_where = ["e.account_id = %(a)s"]
    if session_id is not None:
        params["s"] = session_id
        log_where.append("l.session_id = %(s)s")
        event_where.append("e.session_id = %(s)s")
    if skill_version_id is not None:
        params["v"] = skill_version_id
        log_where.append("l.skill_version_id = %(v)s")
        event_where.append("e.skill_version_id = %(v)s")
    outer = ""
    if after is not None:
        params["at"], params["ct"], params["cid"] = after
        outer = "WHERE (t.occurred_at > %(at)s OR t.recorded_at > %(ct)s) AND t.id <> %(cid)s"
    direction = "DESC" if tail else "ASC"
    rows = conn.execute(
        f"""SELECT * FROM (
                SELECT 'skill_log' AS kind, l.id, l.created_at AS occurred_at, l.created_at AS recorded_at,
                       l.session_id, l.skill_version_id, l.skill_name, l.skill_version, l.outcome, l.was_triggered,
                       l.failure_reason, l.duration_ms, NULL::text AS event_type, NULL::jsonb AS payload
                FROM skill_logs l WHERE {" AND ".join(log_where)}
                UNION ALL
                SELECT 'memory_event', e.id, e.occurred_at, e.created_at, e.session_id, e.skill_version_id,
                       v.skill_name, v.version, NULL, NULL, NULL, NULL, e.event_type, e.payload
                FROM memory_events e
                LEFT JOIN skill_versions v ON v.account_id = e.account_id AND v.id = e.skill_version_id
                WHERE {" AND ".join(event_where)}
            ) t {outer}
            ORDER BY t.occurred_at {direction}, t.kind {direction}, t.id {direction}
            LIMIT %(limit)s""",
        params,
    ).fetchall()
    return rows[::-1] if tail else rows


def event_with_version(conn: Conn, *, account_id: UUID, event_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        """SELECT e.id, e.session_id, e.skill_version_id, v.skill_name, v.version AS skill_version
           FROM memory_events e
           LEFT JOIN skill_versions v ON v.account_id = e.account_id AND v.id = e.skill_version_id
           WHERE e.account_id = %(a)s AND e.id = %(event_id)s""",
        {"a": account_id, "event_id": event_id},
    ).fetchone()
