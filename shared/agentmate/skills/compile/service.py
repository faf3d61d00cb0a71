"""Compile one skill version into its artifact, in a transaction of its own (spec/001 ordering rule: the artifact
is refreshed *after* the commit that wrote package identity, so a compiler failure never rolls that back; the
failure is recorded and the catalog shows a basic card). Also the reads every registry use case shares: a version's
compile context and whether its stored artifact is current. REST: ``router.py``; MCP:
``agentmate.mcp.tools.skills.registry``."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound
from agentmate.core.observability import logger
from agentmate.skills import repository as srepo
from agentmate.skills.compile import compiler, frontmatter
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
                warnings=frontmatter.warnings_of(ctx.content),
            )
        crepo.upsert_artifact(conn, account_id=account_id, version_id=version_id, artifact=art)
    return SkillCompileOutcome(
        skill_version_id=version_id,
        skill_name=ctx.skill_name,
        status="compiled",
        artifact_hash=art.artifact_hash,
        warnings=frontmatter.unknown_key_warnings(art.frontmatter.get("unknown_keys") or []),
    )


def try_refresh(db: TenantTransactions, account_id: UUID, version_id: UUID) -> SkillCompileOutcome | None:
    """``refresh_artifact`` after a commit that wrote package identity: an unexpected failure is logged and
    answered None, never raised (it must not turn a committed publish into an error)."""
    try:
        return refresh_artifact(db, account_id, version_id)
    except Exception:
        logger.exception("skill artifact refresh failed")
        return None


@dataclass(frozen=True)
class Activation:
    """The outcome of ``activate: true``: the version row after it, and why it was not activated (if not)."""

    version: srepo.VersionRow | None
    activated: bool
    not_activated_reason: str | None = None


def _blocked(compiled: SkillCompileOutcome | None) -> str:
    if compiled is None:
        return (
            "not activated: the compile did not complete; run POST /api/skills/compile with this "
            "skill_version_id, then POST /api/skills/versions/{id}/activate"
        )
    shown = "; ".join(compiled.problems[:3]) + ("; …" if len(compiled.problems) > 3 else "")
    return f"not activated: the compile produced a blocker ({shown}); fix SKILL.md and push or publish again"


def activate_if_compiled(
    db: TenantTransactions, account_id: UUID, version_id: UUID, compiled: SkillCompileOutcome | None
) -> Activation:
    """``activate: true`` on a push or publish (spec/001 ordering rule): the version is committed first and
    compiled after that commit; it becomes the skill's active version only when the compile produced no blocker.
    A refused activation leaves package identity (and any other active version) as it was."""
    if compiled is None or compiled.status != "compiled":
        return Activation(version=None, activated=False, not_activated_reason=_blocked(compiled))
    with db.tenant(account_id) as conn:
        ref = srepo.version_ref(conn, account_id=account_id, version_id=version_id)
        if ref is None:
            raise NotFound("skill version")
        srepo.lock_skill(conn, account_id=account_id, skill_name=ref.skill_name)
        row = srepo.activate(conn, account_id=account_id, version_id=version_id, skill_name=ref.skill_name)
    return Activation(version=row, activated=row is not None and row.is_active)
