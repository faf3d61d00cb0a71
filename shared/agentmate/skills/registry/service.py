"""Skill package sources and their ingest on the shared package store: register, list and delete sources, push
a snapshot, sync a git ref. REST: ``router.py``; MCP: ``agentmate.mcp.tools.skills.registry``.

Ordering rule (spec/001): ingest, direct publish and activation write package identity (revision + version) in
one transaction; the compiled artifact is refreshed *after* that commit, in its own transaction
(``skills.compile.service``), so a compiler failure never rolls back package identity. ``activate: true`` then
activates the version in a third transaction, and only when the compile produced no blocker (the response says
``activated: false`` and why otherwise). Git sync has the package
ingest's time budget, and snapshot size limits are the ingest's.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import NotFound, invalid
from agentmate.core.observability import counted
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.packages import runtime
from agentmate.packages import service as packages
from agentmate.packages.policy import NetPolicy
from agentmate.packages.schemas import Ingested, Package, Revision, Source, SourceInput, Upserted
from agentmate.retrieval.service import Retrieval
from agentmate.skills import repository as repo
from agentmate.skills.compile import compiler, frontmatter
from agentmate.skills.compile.service import Activation, activate_if_compiled, try_refresh
from agentmate.skills.registry import repository as rrepo
from agentmate.skills.registry.schemas import SkillIngestResult, SkillSnapshotPush, SkillSyncRequest
from agentmate.skills.schemas import SkillVersionSummary
from agentmate.skills.search.index import index_if_active

STORE = rrepo.STORE


def net_policy() -> NetPolicy:
    return runtime.net_policy()


def fetcher() -> packages.Fetcher:
    return runtime.git_fetcher(net_policy())


def _actor(principal: Principal) -> packages.Actor:
    return packages.Actor.of(principal)


# -- sources -----------------------------------------------------------------------------------------------------


def register_source(db: TenantTransactions, principal: Principal, data: SourceInput) -> Upserted:
    with db.tenant(principal.account_id) as conn:
        return packages.register_source(conn, STORE, _actor(principal), data, net_policy())


def list_sources(db: TenantTransactions, principal: Principal, page: PageParams) -> Page[Source]:
    return packages.list_sources(db, STORE, _actor(principal), page)


def get_source(db: TenantTransactions, principal: Principal, source_id: UUID) -> Source:
    return packages.get_source(db, STORE, _actor(principal), source_id, what="skill source")


def delete_source(db: TenantTransactions, principal: Principal, source_id: UUID) -> None:
    """Delete a source with its revisions and versions; refused (409) while a version-bound log or a quality run
    references one of its versions. A version used only as a quality-run baseline just clears that column."""
    with db.tenant(principal.account_id) as conn:
        if not rrepo.delete_source(conn, account_id=principal.account_id, source_id=source_id):
            raise NotFound("skill source")


def list_revisions(
    db: TenantTransactions, principal: Principal, source_id: UUID, page: PageParams
) -> Page[Revision]:
    return packages.list_revisions(db, STORE, _actor(principal), source_id, page, what="skill source")


# -- ingest ------------------------------------------------------------------------------------------------------


def _require_skill_md(package: Package) -> Package:
    root = package.file(compiler.ROOT_FILE)
    if root is None or root.text is None:
        raise invalid("files", f"a skill package needs a text {compiler.ROOT_FILE} at its root")
    return package


def _skill_name(content: str, source: Source) -> str:
    """The frontmatter name when it is a usable name, else the package folder, else the source name."""
    try:
        name = frontmatter.parse(content, strict=False).name
    except frontmatter.FrontmatterError:
        name = None
    if name and frontmatter.NAME_PATTERN.match(name) and len(name) <= frontmatter.MAX_NAME:
        return name
    folder = source.package_path.strip("/").rsplit("/", 1)[-1] if source.package_path.strip("/") else ""
    return folder or source.name


def _label(content: str, package_hash: str, wanted: str | None) -> str:
    if wanted:
        return wanted
    try:
        meta = frontmatter.parse(content, strict=False).metadata
    except frontmatter.FrontmatterError:
        meta = {}
    label = (meta.get("version") or "").strip()
    return label[:100] if label else f"pkg-{package_hash[:12]}"


@dataclass(frozen=True)
class _Bound:
    version: repo.VersionRow


def _bind_version(
    principal: Principal, *, label: str | None, change_summary: str
) -> packages.OnRevision[_Bound]:
    """The registry's rows for an ingested revision (inside the ingest transaction): its version, replayed when
    the package hash replayed the revision. Activation waits for the compile (``_after_commit``)."""

    def on_revision(conn: Conn, ingested: Ingested) -> _Bound:
        account = principal.account_id
        row = rrepo.version_for_revision(conn, account_id=account, revision_id=ingested.revision.id)
        if row is None:
            root = STORE.file_by_path(
                conn, account_id=account, revision_id=ingested.revision.id, path=compiler.ROOT_FILE
            )
            assert root is not None and root.content is not None  # _require_skill_md ran before the write
            content = root.content
            row = rrepo.insert_source_version(
                conn,
                account_id=account,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data={
                    "source_id": ingested.source.id,
                    "revision_id": ingested.revision.id,
                    "skill_name": _skill_name(content, ingested.source),
                    "version": _label(content, ingested.revision.package_hash, label),
                    "content": content,
                    "content_hash": hashlib.sha256(content.encode()).hexdigest(),
                    "package_hash": ingested.revision.package_hash,
                    "change_summary": change_summary,
                },
            )
        return _Bound(row)

    return on_revision


def _after_commit(
    db: TenantTransactions,
    principal: Principal,
    out: packages.IngestOutcome[_Bound],
    flags: tuple[bool, bool],
    rt: Retrieval,
) -> SkillIngestResult:
    """After the ingest committed: compile, then (``activate``) activate only when the compile produced no
    blocker, then (``index``) index the card when the version is active."""
    activate, index = flags
    assert out.extra is not None
    version = out.extra.version
    compiled = try_refresh(db, principal.account_id, version.id)
    activation = Activation(version=None, activated=version.is_active)
    if activate and not version.is_active:
        activation = activate_if_compiled(db, principal.account_id, version.id, compiled)
    version = activation.version or version
    indexed, not_indexed = None, None
    if index:
        ok = compiled is not None and compiled.status == "compiled"
        indexed, not_indexed = index_if_active(
            db, rt, principal.account_id, version.id, active=version.is_active, compiled=ok
        )
    return SkillIngestResult(
        source=out.ingested.source,
        revision=out.ingested.revision,
        version=SkillVersionSummary.model_validate(version, from_attributes=True),
        created=out.ingested.created,
        compile=compiled,
        activated=activate and activation.activated,
        not_activated_reason=activation.not_activated_reason,
        index=indexed,
        not_indexed_reason=not_indexed,
    )


def _new_package(result: SkillIngestResult) -> float:
    return 1 if result.created else 0


@counted("SkillPackageIngested", _new_package)
def push_snapshot(
    db: TenantTransactions, rt: Retrieval, principal: Principal, source_id: UUID, body: SkillSnapshotPush
) -> SkillIngestResult:
    out = packages.push_snapshot(
        db,
        STORE,
        _actor(principal),
        source_id,
        body.files,
        expected_hash=body.package_hash,
        select=_require_skill_md,
        on_revision=_bind_version(principal, label=body.version, change_summary=body.change_summary),
    )
    return _after_commit(db, principal, out, (body.activate, body.index), rt)


@counted("SkillPackageIngested", _new_package)
def sync_source(
    db: TenantTransactions,
    rt: Retrieval,
    principal: Principal,
    source_id: UUID,
    body: SkillSyncRequest,
    git: packages.Fetcher | None = None,
) -> SkillIngestResult:
    out = packages.sync_source(
        db,
        STORE,
        _actor(principal),
        source_id,
        git or runtime.LazyFetcher(lambda: fetcher()),
        ref=body.ref,
        select=_require_skill_md,
        on_revision=_bind_version(principal, label=None, change_summary=""),
    )
    return _after_commit(db, principal, out, (body.activate, body.index), rt)
