"""Skill record use cases: publish/activate SKILL.md versions, record and analyse executions.

Callable without HTTP (MCP tools use the same functions): each takes the database, the caller and typed values
and opens one tenant transaction.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from uuid import UUID

from agentmate.core import idempotency
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, NotFound, invalid
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.skills import repository as repo
from agentmate.skills.schemas import (
    OUTCOMES,
    SIGNAL_OUTCOMES,
    OutcomeCounts,
    SkillLog,
    SkillLogCreate,
    SkillSignals,
    SkillStats,
    SkillVersion,
    SkillVersionCreate,
    SkillVersionSummary,
    VersionPublished,
    VersionStats,
)

if TYPE_CHECKING:  # the retrieval stack loads only when a publish asks to index
    from agentmate.retrieval.service import Retrieval

MAX_SIGNALS = 50


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def resolve_version(
    conn: Conn, *, account_id: UUID, version_id: UUID, field: str = "skill_version_id"
) -> repo.VersionRef:
    """A version of this account by id, or a 400 naming ``field`` (used by memory attribution too)."""
    row = repo.version_ref(conn, account_id=account_id, version_id=version_id)
    if row is None:
        raise invalid(field, "unknown skill version in this account")
    return row


def _version(row: repo.VersionRow) -> SkillVersion:
    return SkillVersion.model_validate(row, from_attributes=True)


# -- versions ----------------------------------------------------------------------------------------------------


@counted("SkillVersionPublished", new_only)
def publish_version(
    db: TenantTransactions, rt: Retrieval, principal: Principal, body: SkillVersionCreate
) -> Created[VersionPublished]:
    """Publish a body; re-publishing the same body under the same label returns the existing version (a
    replay). The compiled artifact is refreshed after the commit; ``activate`` then activates the version only
    when that compile produced no blocker (``activated``, ``not_activated_reason`` say which), and ``index``
    indexes the card of an active version into skill search (``index``, ``not_indexed_reason``)."""
    from agentmate.skills.compile import service as compile_service  # compiling builds on these records
    from agentmate.skills.search.index import index_if_active  # as the snapshot push does

    outcome = _publish_version(db, principal, body)
    row = outcome.value
    compiled = compile_service.try_refresh(db, principal.account_id, row.id)
    extra: dict[str, Any] = {"compile": compiled}
    if body.activate and row.is_active:
        extra["activated"] = True
    elif body.activate:
        activation = compile_service.activate_if_compiled(db, principal.account_id, row.id, compiled)
        extra["activated"] = activation.activated
        extra["not_activated_reason"] = activation.not_activated_reason
        if activation.version is not None:
            row = _version(activation.version)
    if body.index:
        ok = compiled is not None and compiled.status == "compiled"
        extra["index"], extra["not_indexed_reason"] = index_if_active(
            db, rt, principal.account_id, row.id, active=row.is_active, compiled=ok
        )
    published = VersionPublished(**row.model_dump(), created=not outcome.replay, **extra)
    return Created(published, replay=outcome.replay)


def _publish_version(
    db: TenantTransactions, principal: Principal, body: SkillVersionCreate
) -> Created[SkillVersion]:
    """Write the version (or find its replay) in one transaction; activation comes after the compile."""
    digest = content_hash(body.content)
    if body.content_hash is not None and body.content_hash != digest:
        raise invalid("content_hash", "does not match sha256(content); omit it to let the server compute it")
    data = body.model_dump(exclude={"activate", "index"})
    data["content_hash"] = digest
    with db.tenant(principal.account_id) as conn:
        repo.lock_skill(conn, account_id=principal.account_id, skill_name=body.skill_name)
        existing = repo.find_direct(
            conn,
            account_id=principal.account_id,
            skill_name=body.skill_name,
            version=body.version,
            content_hash=digest,
        )
        for row in existing:
            if row.version == body.version and row.content_hash == digest:
                return Created(_version(row), replay=True)
        for row in existing:
            if row.version == body.version:
                raise Conflict(
                    f"version {body.version!r} of skill {body.skill_name!r} is already published with "
                    "different content; publish the new body under a new version label",
                    extra={"existing_version_id": str(row.id)},
                )
            raise Conflict(
                f"this body is already published as version {row.version!r} of skill {body.skill_name!r}",
                extra={"existing_version_id": str(row.id)},
            )
        row = repo.insert_version(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            data=data,
        )
    return Created(_version(row))


def activate_version(db: TenantTransactions, principal: Principal, version_id: UUID) -> SkillVersion:
    """Activate a version explicitly (also one whose compile failed: activation is package identity, and a
    compiler failure never rolls that back); the artifact is refreshed after the commit."""
    from agentmate.skills.compile import service as compile_service  # compiling builds on these records

    with db.tenant(principal.account_id) as conn:
        ref = repo.version_ref(conn, account_id=principal.account_id, version_id=version_id)
        if ref is None:
            raise NotFound("skill version")
        repo.lock_skill(conn, account_id=principal.account_id, skill_name=ref.skill_name)
        row = repo.activate(
            conn, account_id=principal.account_id, version_id=version_id, skill_name=ref.skill_name
        )
    if row is None:
        raise NotFound("skill version")
    compile_service.try_refresh(db, principal.account_id, version_id)
    return _version(row)


def get_version(db: TenantTransactions, principal: Principal, version_id: UUID) -> SkillVersion:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_version(conn, account_id=principal.account_id, version_id=version_id)
    if row is None:
        raise NotFound("skill version")
    return _version(row)


def active_version(db: TenantTransactions, principal: Principal, skill_name: str) -> SkillVersion:
    name = skill_name.strip()
    if not name:
        raise invalid("skill_name", "required")
    with db.tenant(principal.account_id) as conn:
        row = repo.active_version(conn, account_id=principal.account_id, skill_name=name)
    if row is None:
        raise NotFound("active skill version", f"skill {name!r} has no active version")
    return _version(row)


def list_versions(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    skill_name: str | None = None,
    active: bool | None = None,
) -> Page[SkillVersionSummary]:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_versions(
            conn,
            account_id=principal.account_id,
            skill_name=skill_name,
            active=active,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[SkillVersionSummary](
        items=[SkillVersionSummary.model_validate(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


# -- logs --------------------------------------------------------------------------------------------------------


@counted("SkillLogRecorded", new_only)
def add_log(
    db: TenantTransactions, principal: Principal, body: SkillLogCreate, idempotency_key: str | None = None
) -> Created[SkillLog]:
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:

        def insert() -> SkillLog:
            if body.skill_version_id is not None:
                ref = resolve_version(conn, account_id=principal.account_id, version_id=body.skill_version_id)
                if ref.skill_name != body.skill_name:
                    raise invalid(
                        "skill_version_id", f"belongs to skill {ref.skill_name!r}, not {body.skill_name!r}"
                    )
                data["skill_version"] = ref.version  # the canonical label of the bound version
            elif not data["skill_version"]:
                data["skill_version"] = "unknown"
            row = repo.insert_log(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data=data,
            )
            return SkillLog(**row)

        return idempotency.once(
            conn,
            account_id=principal.account_id,
            route="skills.logs.create",
            key=idempotency_key,
            request=body.model_dump(mode="json"),
            model=SkillLog,
            create=insert,
        )


def list_logs(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    skill_name: str | None = None,
    agent_id: str | None = None,
    outcome: str | None = None,
    session_id: str | None = None,
    skill_version_id: UUID | None = None,
) -> Page[SkillLog]:
    if outcome is not None and outcome not in OUTCOMES:
        raise invalid("outcome", "must be one of the allowed values", list(OUTCOMES))
    filters = {
        "skill_name": skill_name,
        "agent_id": agent_id,
        "outcome": outcome,
        "session_id": session_id,
        "skill_version_id": skill_version_id,
    }
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_logs(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[SkillLog](
        items=[SkillLog(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def _rate(part: int, whole: int) -> float:
    return round(part / whole, 6) if whole else 0.0


def stats(db: TenantTransactions, principal: Principal, skill_name: str) -> SkillStats:
    name = skill_name.strip()
    if not name:
        raise invalid("skill_name", "required")
    with db.tenant(principal.account_id) as conn:
        row = repo.stats(conn, account_id=principal.account_id, skill_name=name)
        versions = repo.stats_by_version(conn, account_id=principal.account_id, skill_name=name)
    total = row.total_runs
    triggered = row.triggered_runs
    outcomes = OutcomeCounts(
        success=row.success, failure=row.failure, partial=row.partial, user_corrected=row.user_corrected
    )
    return SkillStats(
        skill_name=name,
        total_runs=total,
        triggered_runs=triggered,
        not_triggered_runs=total - triggered,
        trigger_rate=_rate(triggered, total),
        outcomes=outcomes,
        success_rate=_rate(outcomes.success, total),
        failure_rate=_rate(outcomes.failure, total),
        partial_rate=_rate(outcomes.partial, total),
        correction_rate=_rate(outcomes.user_corrected, total),
        avg_duration_ms=row.avg_duration_ms,
        last_run_at=row.last_run_at,
        by_version=[
            VersionStats(
                skill_version_id=v.skill_version_id,
                skill_version=v.skill_version,
                total_runs=v.total_runs,
                success_rate=_rate(v.success, v.total_runs),
            )
            for v in versions
        ],
    )


def signals(db: TenantTransactions, principal: Principal, skill_name: str, limit: int = 10) -> SkillSignals:
    """Recent failures, partial runs and user corrections of one skill, newest first: what to improve."""
    name = skill_name.strip()
    if not name:
        raise invalid("skill_name", "required")
    if not 1 <= limit <= MAX_SIGNALS:
        raise invalid("limit", f"must be 1..{MAX_SIGNALS}")
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_logs(
            conn,
            account_id=principal.account_id,
            filters={"skill_name": name, "outcomes": SIGNAL_OUTCOMES},
            limit=limit,
            offset=0,
        )
    return SkillSignals(
        skill_name=name,
        outcomes=list(SIGNAL_OUTCOMES),
        items=[SkillLog(**r) for r in rows],
        total=total,
        limit=limit,
    )
