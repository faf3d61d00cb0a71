"""Compile one skill version into its artifact, in a transaction of its own (spec/001 ordering rule: the artifact
is refreshed *after* the commit that wrote package identity, so a compiler failure never rolls that back; the
failure is recorded and the catalog shows a basic card). Also the reads every registry use case shares: a version's
compile context and whether its stored artifact is current. REST: ``router.py``; MCP:
``agentmate.mcp.tools.skills.registry``."""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound
from agentmate.skills.compile import compiler
from agentmate.skills.compile import repository as crepo
from agentmate.skills.compile.schemas import SkillCompileOutcome

TEXT_INDEXABLE = ("text/", "application/json", "application/yaml", "application/x-yaml", "application/toml")


def indexable(mime_type: str, is_text: bool) -> bool:
    return is_text and mime_type.startswith(TEXT_INDEXABLE)


def file_in(row: crepo.FileRow) -> compiler.FileIn:
    """A stored package file as the compiler sees it."""
    return compiler.FileIn(
        id=str(row.id),
        path=row.path,
        sha256=row.sha256,
        size_bytes=int(row.size_bytes),
        mime_type=row.mime_type,
        indexable=indexable(row.mime_type, row.is_text),
        content=row.content,
    )


def identity(ctx: crepo.VersionContext) -> str:
    return str(ctx.package_hash or ctx.content_hash)


def version_context(conn: Conn, account_id: UUID, version_id: UUID) -> crepo.VersionContext:
    ctx = crepo.version_context(conn, account_id=account_id, version_id=version_id)
    if ctx is None:
        raise NotFound("skill version")
    return ctx


def current_artifact(art: crepo.ArtifactRow | None, ctx: crepo.VersionContext) -> crepo.ArtifactRow | None:
    if (
        art is None
        or art.compiler_version != compiler.COMPILER_VERSION
        or art.input_package_hash != identity(ctx)
    ):
        return None
    return art


def refresh_artifact(db: TenantTransactions, account_id: UUID, version_id: UUID) -> SkillCompileOutcome:
    """Compile one version and store its artifact (or the failure), in a transaction of its own."""
    with db.tenant(account_id) as conn:
        ctx = crepo.version_context(conn, account_id=account_id, version_id=version_id)
        if ctx is None:
            raise NotFound("skill version")
        files = (
            [
                file_in(r)
                for r in crepo.revision_files(conn, account_id=account_id, revision_id=ctx.source_revision_id)
            ]
            if ctx.source_revision_id
            else []
        )
        v = compiler.VersionIn(
            id=str(ctx.id),
            skill_name=ctx.skill_name,
            version=ctx.version,
            content=ctx.content,
            package_hash=identity(ctx),
        )
        try:
            art = compiler.compile_version(v, list(files))
        except compiler.CompileError as exc:
            crepo.record_compile_failure(
                conn, account_id=account_id, version_id=version_id, problems=exc.problems
            )
            return SkillCompileOutcome(
                skill_version_id=version_id,
                skill_name=ctx.skill_name,
                status="failed",
                problems=exc.problems[:50],
            )
        crepo.upsert_artifact(conn, account_id=account_id, version_id=version_id, artifact=art)
    return SkillCompileOutcome(
        skill_version_id=version_id,
        skill_name=ctx.skill_name,
        status="compiled",
        artifact_hash=art.artifact_hash,
    )
