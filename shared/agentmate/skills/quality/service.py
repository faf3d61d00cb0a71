"""Quality runs: the offline deterministic checks (``checks.py``) over one read-only snapshot of a version (and
an optional same-skill baseline), stored as an audit row. REST: ``router.py``; MCP:
``agentmate.mcp.tools.skills.registry``."""

from __future__ import annotations

from dataclasses import asdict
from typing import cast
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound, invalid
from agentmate.core.observability import counted
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.skills.compile import repository as crepo
from agentmate.skills.compile.service import file_in, version_context
from agentmate.skills.quality import checks as quality
from agentmate.skills.quality import repository as qrepo
from agentmate.skills.quality.schemas import SkillQualityRun, SkillQualityRunRequest, SkillQualityRunSummary


def _qfile(row: crepo.FileRow) -> quality.QFile:
    """A stored package file as the checks see it: the compiler's view plus the tenancy ids the checks verify."""
    return quality.QFile(
        **asdict(file_in(row)), account_id=str(row.account_id), revision_id=str(row.revision_id)
    )


def _qpackage(conn: Conn, account_id: UUID, ctx: crepo.VersionContext) -> quality.QPackage:
    files = (
        [
            _qfile(r)
            for r in crepo.revision_files(conn, account_id=account_id, revision_id=ctx.source_revision_id)
        ]
        if ctx.source_revision_id
        else []
    )
    folder = (ctx.package_path or "").strip("/").rsplit("/", 1)[-1] if ctx.source_id else ""
    version = quality.QVersion(
        id=str(ctx.id),
        account_id=str(account_id),
        skill_name=ctx.skill_name,
        version=ctx.version,
        content=ctx.content,
        content_hash=ctx.content_hash,
        package_hash=ctx.package_hash,
        source_revision_id=str(ctx.source_revision_id) if ctx.source_revision_id else None,
        # A source-bound version always has its source (foreign key), so source_name is set there.
        expected_name=folder or cast(str, ctx.source_name if ctx.source_id else ctx.skill_name),
    )
    art = crepo.artifact(conn, account_id=account_id, version_id=ctx.id)
    qart = (
        None
        if art is None
        else quality.QArtifact(
            skill_version_id=str(art.skill_version_id),
            compiler_name=art.compiler_name,
            compiler_version=art.compiler_version,
            input_package_hash=art.input_package_hash,
            artifact_hash=art.artifact_hash,
            resource_manifest=list(art.resource_manifest),
        )
    )
    return quality.QPackage(version=version, files=files, artifact=qart)


@counted("SkillQualityRun")
def run_quality(
    db: TenantTransactions, principal: Principal, version_id: UUID, body: SkillQualityRunRequest
) -> SkillQualityRun:
    """Offline checks over one read-only repeatable-read snapshot; the only write is the run's own audit row."""
    account = principal.account_id
    with db.tenant(account, snapshot=True) as conn:
        ctx = version_context(conn, account, version_id)
        baseline = None
        if body.baseline_version_id is not None:
            if body.baseline_version_id == version_id:
                raise invalid("baseline_version_id", "must be a different version than the one checked")
            base_ctx = crepo.version_context(conn, account_id=account, version_id=body.baseline_version_id)
            if base_ctx is None:
                raise invalid("baseline_version_id", "unknown skill version in this account")
            if base_ctx.skill_name != ctx.skill_name:
                raise invalid(
                    "baseline_version_id",
                    f"belongs to skill {base_ctx.skill_name!r}, not "
                    f"{ctx.skill_name!r} (a baseline is the same skill)",
                )
            baseline = _qpackage(conn, account, base_ctx)
        pkg = _qpackage(conn, account, ctx)
        cutoff = conn.execute("SELECT now() AS t").fetchone()["t"]  # type: ignore[index]
        logs = [
            quality.QLog(
                id=str(r.id),
                skill_version_id=str(r.skill_version_id),
                created_at=r.created_at,
                was_triggered=r.was_triggered,
                outcome=r.outcome,
            )
            for r in qrepo.telemetry_logs(
                conn,
                account_id=account,
                version_id=version_id,
                cutoff=cutoff,
                limit=quality.MAX_TELEMETRY_LOGS,
            )
        ]
    report = quality.evaluate(pkg, baseline=baseline, logs=logs, cutoff=cutoff)
    with db.tenant(account) as conn:
        row = qrepo.insert_quality_run(
            conn,
            account_id=account,
            user_id=principal.user_id,
            key_id=principal.key_id,
            data={
                "skill_version_id": version_id,
                "baseline_version_id": body.baseline_version_id,
                "skill_name": ctx.skill_name,
                "engine_version": quality.ENGINE_VERSION,
                "checkset_version": quality.CHECKSET_VERSION,
                "input_package_hash": pkg.version.package_hash,
                "baseline_package_hash": baseline.version.package_hash if baseline else None,
                "telemetry_cutoff": cutoff,
                "status": "completed",
                "summary": report["summary"],
                "report": report,
            },
        )
    return SkillQualityRun.model_validate(row)


def list_quality_runs(
    db: TenantTransactions, principal: Principal, version_id: UUID, page: PageParams
) -> Page[SkillQualityRunSummary]:
    with db.tenant(principal.account_id) as conn:
        version_context(conn, principal.account_id, version_id)
        rows, total = qrepo.list_quality_runs(
            conn, account_id=principal.account_id, version_id=version_id, limit=page.limit, offset=page.offset
        )
    return Page[SkillQualityRunSummary](
        items=[SkillQualityRunSummary.model_validate(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


def get_quality_run(db: TenantTransactions, principal: Principal, run_id: UUID) -> SkillQualityRun:
    with db.tenant(principal.account_id) as conn:
        row = qrepo.get_quality_run(conn, account_id=principal.account_id, run_id=run_id)
    if row is None:
        raise NotFound("skill quality run")
    return SkillQualityRun.model_validate(row)
