"""Skills registry use cases on the shared package ingest: sources, snapshots and git sync, compile, catalog (L0),
instructions (L1), resources (L2), card index and search, quality runs.

Ordering rule (spec/001): ingest, direct publish and activation write package identity (revision + version) in
one transaction; the compiled artifact is refreshed *after* that commit, in its own transaction, so a compiler
failure never rolls back package identity (the failure is recorded and the catalog shows a basic card).

Inline work is bounded so a request finishes well inside API Gateway's 30 s: a compile backfill or an index run
covers at most ``MAX_INLINE_VERSIONS`` versions inline; more (or a run past ``INLINE_BUDGET_S``) is queued as a
job (``skills.jobs``, run by the job worker) and the request answers 202 with it. Git sync has the package
ingest's time budget, and snapshot size limits are the ingest's.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn, Database
from agentmate.core.errors import NotFound, invalid
from agentmate.core.observability import counted
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.jobs.schemas import JobView
from agentmate.packages import runtime
from agentmate.packages import service as packages
from agentmate.packages.policy import NetPolicy
from agentmate.packages.schemas import Ingested, Package, Revision, Source, SourceInput, Upserted
from agentmate.retrieval import service as retrieval
from agentmate.retrieval.schemas import legs_of
from agentmate.retrieval.service import Retrieval
from agentmate.skills import repository as repo
from agentmate.skills.compile import compiler, frontmatter
from agentmate.skills.quality import checks as quality
from agentmate.skills.registry import repository as rrepo
from agentmate.skills.registry.schemas import (
    SkillCard,
    SkillCatalogItem,
    SkillCompileOutcome,
    SkillCompileReport,
    SkillCompileRequest,
    SkillDegraded,
    SkillIndexOutcome,
    SkillIndexReport,
    SkillIndexRequest,
    SkillIngestResult,
    SkillInstructions,
    SkillPackageFile,
    SkillQualityRun,
    SkillQualityRunRequest,
    SkillQualityRunSummary,
    SkillResource,
    SkillResourceContent,
    SkillSearchHit,
    SkillSearchRequest,
    SkillSearchResponse,
    SkillSnapshotPush,
    SkillSyncRequest,
)
from agentmate.skills.schemas import SkillVersionSummary

STORE = rrepo.STORE
NAMESPACE = "skills"
SOURCE_TYPE = "skill"
MAX_INLINE_VERSIONS = 200
INLINE_BUDGET_S = 20.0
TEXT_INDEXABLE = ("text/", "application/json", "application/yaml", "application/x-yaml", "application/toml")


def net_policy() -> NetPolicy:
    return runtime.net_policy()


def fetcher() -> packages.Fetcher:
    return runtime.git_fetcher(net_policy())


def _actor(principal: Principal) -> packages.Actor:
    return packages.Actor.of(principal)


def indexable(mime_type: str, is_text: bool) -> bool:
    return is_text and mime_type.startswith(TEXT_INDEXABLE)


# -- sources -----------------------------------------------------------------------------------------------------


def register_source(db: Database, principal: Principal, data: SourceInput) -> Upserted:
    with db.tenant(principal.account_id) as conn:
        return packages.register_source(conn, STORE, _actor(principal), data, net_policy())


def list_sources(db: Database, principal: Principal, page: PageParams) -> Page[Source]:
    return packages.list_sources(db, STORE, _actor(principal), page)


def get_source(db: Database, principal: Principal, source_id: UUID) -> Source:
    return packages.get_source(db, STORE, _actor(principal), source_id, what="skill source")


def delete_source(db: Database, principal: Principal, source_id: UUID) -> None:
    """Delete a source with its revisions and versions; refused (409) while a version-bound log or a quality run
    references one of its versions. A version used only as a quality-run baseline just clears that column."""
    with db.tenant(principal.account_id) as conn:
        if not rrepo.delete_source(conn, account_id=principal.account_id, source_id=source_id):
            raise NotFound("skill source")


def list_revisions(db: Database, principal: Principal, source_id: UUID, page: PageParams) -> Page[Revision]:
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
    version: dict[str, Any]


def _bind_version(
    principal: Principal, *, label: str | None, change_summary: str, activate: bool
) -> packages.OnRevision[_Bound]:
    """The registry's rows for an ingested revision (inside the ingest transaction): its version, replayed when
    the package hash replayed the revision."""

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
        if activate and not row["is_active"]:
            repo.lock_skill(conn, account_id=account, skill_name=row["skill_name"])
            row = (
                repo.activate(conn, account_id=account, version_id=row["id"], skill_name=row["skill_name"])
                or row
            )
        return _Bound(row)

    return on_revision


def _after_commit(
    db: Database, principal: Principal, out: packages.IngestOutcome[_Bound], index: bool, rt: Retrieval
) -> SkillIngestResult:
    assert out.extra is not None
    version = out.extra.version
    compiled = refresh_artifact(db, principal.account_id, version["id"])
    indexed = None
    if index and version["is_active"]:
        indexed = index_versions(db, rt, principal.account_id, [version["id"]])[0]
    return SkillIngestResult(
        source=out.ingested.source,
        revision=out.ingested.revision,
        version=SkillVersionSummary(**version),
        created=out.ingested.created,
        compile=compiled,
        index=indexed,
    )


def _new_package(result: SkillIngestResult) -> float:
    return 1 if result.created else 0


@counted("SkillPackageIngested", _new_package)
def push_snapshot(
    db: Database, rt: Retrieval, principal: Principal, source_id: UUID, body: SkillSnapshotPush
) -> SkillIngestResult:
    out = packages.push_snapshot(
        db,
        STORE,
        _actor(principal),
        source_id,
        body.files,
        expected_hash=body.package_hash,
        select=_require_skill_md,
        on_revision=_bind_version(
            principal, label=body.version, change_summary=body.change_summary, activate=body.activate
        ),
    )
    return _after_commit(db, principal, out, body.index, rt)


@counted("SkillPackageIngested", _new_package)
def sync_source(
    db: Database,
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
        on_revision=_bind_version(principal, label=None, change_summary="", activate=body.activate),
    )
    return _after_commit(db, principal, out, body.index, rt)


# -- compile -----------------------------------------------------------------------------------------------------


def _file_in(row: dict[str, Any]) -> quality.QFile:
    return quality.QFile(
        id=str(row["id"]),
        path=row["path"],
        sha256=row["sha256"],
        size_bytes=int(row["size_bytes"]),
        mime_type=row["mime_type"],
        indexable=indexable(row["mime_type"], row["is_text"]),
        content=row["content"],
        account_id=str(row["account_id"]),
        revision_id=str(row["revision_id"]),
    )


def _identity(ctx: dict[str, Any]) -> str:
    return str(ctx["package_hash"] or ctx["content_hash"])


def refresh_artifact(db: Database, account_id: UUID, version_id: UUID) -> SkillCompileOutcome:
    """Compile one version and store its artifact (or the failure), in a transaction of its own."""
    with db.tenant(account_id) as conn:
        ctx = rrepo.version_context(conn, account_id=account_id, version_id=version_id)
        if ctx is None:
            raise NotFound("skill version")
        files = (
            [
                _file_in(r)
                for r in rrepo.revision_files(
                    conn, account_id=account_id, revision_id=ctx["source_revision_id"]
                )
            ]
            if ctx["source_revision_id"]
            else []
        )
        v = compiler.VersionIn(
            id=str(ctx["id"]),
            skill_name=ctx["skill_name"],
            version=ctx["version"],
            content=ctx["content"],
            package_hash=_identity(ctx),
        )
        try:
            art = compiler.compile_version(v, list(files))
        except compiler.CompileError as exc:
            rrepo.record_compile_failure(
                conn, account_id=account_id, version_id=version_id, problems=exc.problems
            )
            return SkillCompileOutcome(
                skill_version_id=version_id,
                skill_name=ctx["skill_name"],
                status="failed",
                problems=exc.problems[:50],
            )
        rrepo.upsert_artifact(conn, account_id=account_id, version_id=version_id, artifact=art)
    return SkillCompileOutcome(
        skill_version_id=version_id,
        skill_name=ctx["skill_name"],
        status="compiled",
        artifact_hash=art.artifact_hash,
    )


def _inline_ids(db: Database, account_id: UUID, skill_name: str | None) -> list[UUID] | None:
    """The active versions to work on inline, or None when there are more than a request may cover."""
    with db.tenant(account_id) as conn:
        ids = rrepo.active_version_ids(
            conn, account_id=account_id, skill_name=skill_name, limit=MAX_INLINE_VERSIONS + 1
        )
    return None if len(ids) > MAX_INLINE_VERSIONS else ids


def _queue(db: Database, account_id: UUID, kind: str, skill_name: str | None) -> JobView:
    """Queue the whole run as a job (an unfinished one of the same scope is handed back) and wake a worker."""
    from agentmate import jobs
    from agentmate.skills.compile import jobs as skill_jobs

    with db.tenant(account_id) as conn:
        job = jobs.enqueue(
            conn,
            account_id=account_id,
            kind=kind,
            subject_id=skill_jobs.subject(kind, skill_name),
            payload={"skill_name": skill_name} if skill_name else {},
        )
    jobs.wake(job.id)
    return JobView.of(job)


def _over_budget(started: float) -> bool:
    return time.monotonic() - started > INLINE_BUDGET_S


def compile_versions(db: Database, principal: Principal, body: SkillCompileRequest) -> SkillCompileReport:
    """One version inline; a backfill inline up to MAX_INLINE_VERSIONS within INLINE_BUDGET_S, else as a job
    (the versions compiled so far are kept; the job compiles every active version, idempotently)."""
    if body.skill_version_id is not None:
        items = [refresh_artifact(db, principal.account_id, body.skill_version_id)]
    else:
        from agentmate.skills.compile.jobs import COMPILE_KIND

        started = time.monotonic()
        items = []
        ids = _inline_ids(db, principal.account_id, None)
        for vid in ids or []:
            if _over_budget(started):
                ids = None
                break
            items.append(refresh_artifact(db, principal.account_id, vid))
        if ids is None:
            job = _queue(db, principal.account_id, COMPILE_KIND, None)
            return SkillCompileReport(items=[], compiled=0, failed=0, total=0, job=job)
    compiled = sum(1 for i in items if i.status == "compiled")
    return SkillCompileReport(items=items, compiled=compiled, failed=len(items) - compiled, total=len(items))


# -- catalog, instructions, resources ----------------------------------------------------------------------------


def _card(row: dict[str, Any]) -> SkillCard:
    card = row.get("card") or compiler.basic_card(
        version_id=str(row["id"]),
        skill_name=row["skill_name"],
        version=row["version"],
        package_hash=row.get("package_hash"),
    )
    return SkillCard.model_validate(card)


def catalog(
    db: Database, principal: Principal, page: PageParams, query: str | None = None
) -> Page[SkillCatalogItem]:
    with db.tenant(principal.account_id) as conn:
        rows, total = rrepo.catalog(
            conn, account_id=principal.account_id, query=query, limit=page.limit, offset=page.offset
        )
    items = [
        SkillCatalogItem(
            skill_version_id=r["id"],
            skill_name=r["skill_name"],
            version=r["version"],
            source_id=r["source_id"],
            compiled=r["card"] is not None,
            card=_card(r),
        )
        for r in rows
    ]
    return Page[SkillCatalogItem](items=items, total=total, limit=page.limit, offset=page.offset)


def _context(conn: Conn, account_id: UUID, version_id: UUID) -> dict[str, Any]:
    ctx = rrepo.version_context(conn, account_id=account_id, version_id=version_id)
    if ctx is None:
        raise NotFound("skill version")
    return ctx


def _current(art: dict[str, Any] | None, ctx: dict[str, Any]) -> dict[str, Any] | None:
    if (
        art is None
        or art["compiler_version"] != compiler.COMPILER_VERSION
        or art["input_package_hash"] != _identity(ctx)
    ):
        return None
    return art


def instructions(db: Database, principal: Principal, version_id: UUID) -> SkillInstructions:
    with db.tenant(principal.account_id) as conn:
        ctx = _context(conn, principal.account_id, version_id)
        art = _current(rrepo.artifact(conn, account_id=principal.account_id, version_id=version_id), ctx)
    base = {"skill_version_id": version_id, "skill_name": ctx["skill_name"], "version": ctx["version"]}
    if art is not None:
        f = art["frontmatter"]
        return SkillInstructions(
            **base,
            compiled=True,
            name=f["name"],
            description=f["description"],
            compatibility=f["compatibility"],
            license=f["license"],
            metadata=f["metadata"],
            allowed_tools=f["allowed_tools"],
            knowledge_contract=art["knowledge_contract"],
            knowledge_contract_identity=art["knowledge_contract_identity"],
            instructions=art["instructions"],
        )
    # No current artifact (not compiled yet, or the frontmatter does not compile): the body as stored.
    return SkillInstructions(
        **base,
        compiled=False,
        name=None,
        description="",
        compatibility=None,
        license=None,
        metadata={},
        allowed_tools=[],
        knowledge_contract=None,
        knowledge_contract_identity=None,
        instructions=frontmatter.body_of(ctx["content"]),
    )


def _manifest(conn: Conn, account_id: UUID, ctx: dict[str, Any]) -> list[dict[str, Any]]:
    art = _current(rrepo.artifact(conn, account_id=account_id, version_id=ctx["id"]), ctx)
    if art is not None:
        return list(art["resource_manifest"])
    if not ctx["source_revision_id"]:
        return []
    rows = rrepo.revision_files(conn, account_id=account_id, revision_id=ctx["source_revision_id"])
    return compiler.manifest_of([_file_in(r) for r in rows])


def resources(db: Database, principal: Principal, version_id: UUID, page: PageParams) -> Page[SkillResource]:
    with db.tenant(principal.account_id) as conn:
        manifest = _manifest(conn, principal.account_id, _context(conn, principal.account_id, version_id))
    window = manifest[page.offset : page.offset + page.limit]
    return Page[SkillResource](
        items=[SkillResource.model_validate(m) for m in window],
        total=len(manifest),
        limit=page.limit,
        offset=page.offset,
    )


def resource(db: Database, principal: Principal, version_id: UUID, file_id: UUID) -> SkillResourceContent:
    with db.tenant(principal.account_id) as conn:
        ctx = _context(conn, principal.account_id, version_id)
        row = (
            rrepo.revision_file(
                conn, account_id=principal.account_id, revision_id=ctx["source_revision_id"], file_id=file_id
            )
            if ctx["source_revision_id"]
            else None
        )
    if row is None or row["path"] == compiler.ROOT_FILE:
        raise NotFound(
            "skill resource",
            "skill resource not found in this version's package (SKILL.md "
            "itself is served as the instructions)",
        )
    if row["content"] is None:
        raise invalid("file_id", "a binary resource has no text content; only its hash and size are stored")
    return SkillResourceContent(
        file_id=row["id"],
        path=row["path"],
        kind=compiler.resource_kind(row["path"]),
        mime_type=row["mime_type"],
        size_bytes=row["size_bytes"],
        sha256=row["sha256"],
        indexable=indexable(row["mime_type"], True),
        text_available=True,
        content=row["content"],
    )


def files(db: Database, principal: Principal, version_id: UUID, page: PageParams) -> Page[SkillPackageFile]:
    with db.tenant(principal.account_id) as conn:
        ctx = _context(conn, principal.account_id, version_id)
        rows, total = (
            rrepo.list_revision_files(
                conn,
                account_id=principal.account_id,
                revision_id=ctx["source_revision_id"],
                limit=page.limit,
                offset=page.offset,
            )
            if ctx["source_revision_id"]
            else ([], 0)
        )
    items = [
        SkillPackageFile(
            **r,
            kind="instructions" if r["path"] == compiler.ROOT_FILE else compiler.resource_kind(r["path"]),
            indexable=indexable(r["mime_type"], r["is_text"]),
        )
        for r in rows
    ]
    return Page[SkillPackageFile](items=items, total=total, limit=page.limit, offset=page.offset)


# -- index and search --------------------------------------------------------------------------------------------


def index_versions(
    db: Database, rt: Retrieval, account_id: UUID, version_ids: list[UUID]
) -> list[SkillIndexOutcome]:
    """Index cards only (never instructions): one retrieval document per skill name, pointing at its version."""
    with db.tenant(account_id) as conn:
        rows = rrepo.cards(conn, account_id=account_id, version_ids=version_ids, with_instructions=False)
    docs, order = [], []
    for vid in version_ids:
        row = rows.get(vid)
        if row is None:
            continue
        card = _card(row).model_dump(mode="json")
        title, content = compiler.card_text(card)
        docs.append(
            retrieval.DocumentIn(
                namespace=NAMESPACE,
                source_type=SOURCE_TYPE,
                source_id=row["skill_name"],
                title=title,
                content=content,
                metadata={
                    "skill_version_id": str(vid),
                    "skill_name": row["skill_name"],
                    "compiled": card["compiled"],
                },
            )
        )
        order.append(vid)
    results = rt.index_documents(db, account_id, docs)
    return [
        SkillIndexOutcome(skill_version_id=vid, status=r.status, error=r.error)
        for vid, r in zip(order, results, strict=True)
    ]


def index_active(
    db: Database, rt: Retrieval, principal: Principal, body: SkillIndexRequest
) -> SkillIndexReport:
    """Index inline up to MAX_INLINE_VERSIONS active versions, else queue the run as a job (202 with it)."""
    ids = _inline_ids(db, principal.account_id, body.skill_name)
    if ids is None:
        from agentmate.skills.compile.jobs import INDEX_KIND

        job = _queue(db, principal.account_id, INDEX_KIND, body.skill_name)
        return SkillIndexReport(items=[], indexed=0, failed=0, total=0, job=job)
    items = index_versions(db, rt, principal.account_id, ids)
    indexed = sum(1 for i in items if i.status == "indexed")
    return SkillIndexReport(items=items, indexed=indexed, failed=len(items) - indexed, total=len(items))


def search(
    db: Database, rt: Retrieval, principal: Principal, body: SkillSearchRequest
) -> SkillSearchResponse:
    account = principal.account_id

    def hydrate(conn: Conn, result: retrieval.SearchResult) -> SkillSearchResponse:
        wanted: list[tuple[UUID, retrieval.Hit]] = []
        for hit in result.hits:
            try:
                wanted.append((UUID(str((hit.document.get("metadata") or {}).get("skill_version_id"))), hit))
            except ValueError:
                continue
        filtered = 0
        if body.min_similarity is not None:
            kept = [(v, h) for v, h in wanted if h.similar_enough(body.min_similarity)]
            filtered, wanted = len(wanted) - len(kept), kept
        rows = rrepo.cards(
            conn,
            account_id=account,
            version_ids=[v for v, _ in wanted],
            with_instructions=body.include_content,
        )
        items = []
        for vid, hit in wanted:
            row = rows.get(vid)
            if row is None:  # deactivated or deleted since it was indexed
                continue
            text = None
            if body.include_content:
                text = (
                    row["instructions"]
                    if row["instructions"] is not None
                    else frontmatter.body_of(row["content"])
                )
            items.append(
                SkillSearchHit(
                    skill_version_id=vid,
                    skill_name=row["skill_name"],
                    version=row["version"],
                    score=hit.score,
                    card=_card(row),
                    instructions=text,
                    **legs_of(hit),
                )
            )
        return SkillSearchResponse(
            items=items,
            total=len(items),
            degraded=[SkillDegraded(leg=d.leg, reason=d.reason) for d in result.degraded],
            filtered_by_min_similarity=filtered if body.min_similarity is not None else None,
        )

    query = retrieval.Query(namespace=NAMESPACE, text=body.query, top_k=body.top_k, source_type=SOURCE_TYPE)
    return rt.search(db, account, query, then=hydrate)


# -- quality runs ------------------------------------------------------------------------------------------------


def _qpackage(conn: Conn, account_id: UUID, ctx: dict[str, Any]) -> quality.QPackage:
    files = (
        [
            _file_in(r)
            for r in rrepo.revision_files(conn, account_id=account_id, revision_id=ctx["source_revision_id"])
        ]
        if ctx["source_revision_id"]
        else []
    )
    folder = (ctx["package_path"] or "").strip("/").rsplit("/", 1)[-1] if ctx["source_id"] else ""
    version = quality.QVersion(
        id=str(ctx["id"]),
        account_id=str(account_id),
        skill_name=ctx["skill_name"],
        version=ctx["version"],
        content=ctx["content"],
        content_hash=ctx["content_hash"],
        package_hash=ctx["package_hash"],
        source_revision_id=str(ctx["source_revision_id"]) if ctx["source_revision_id"] else None,
        expected_name=folder or (ctx["source_name"] if ctx["source_id"] else ctx["skill_name"]),
    )
    art = rrepo.artifact(conn, account_id=account_id, version_id=ctx["id"])
    qart = (
        None
        if art is None
        else quality.QArtifact(
            skill_version_id=str(art["skill_version_id"]),
            compiler_name=art["compiler_name"],
            compiler_version=art["compiler_version"],
            input_package_hash=art["input_package_hash"],
            artifact_hash=art["artifact_hash"],
            resource_manifest=list(art["resource_manifest"]),
        )
    )
    return quality.QPackage(version=version, files=files, artifact=qart)


@counted("SkillQualityRun")
def run_quality(
    db: Database, principal: Principal, version_id: UUID, body: SkillQualityRunRequest
) -> SkillQualityRun:
    """Offline checks over one read-only repeatable-read snapshot; the only write is the run's own audit row."""
    account = principal.account_id
    with db.tenant(account, snapshot=True) as conn:
        ctx = _context(conn, account, version_id)
        baseline = None
        if body.baseline_version_id is not None:
            if body.baseline_version_id == version_id:
                raise invalid("baseline_version_id", "must be a different version than the one checked")
            base_ctx = rrepo.version_context(conn, account_id=account, version_id=body.baseline_version_id)
            if base_ctx is None:
                raise invalid("baseline_version_id", "unknown skill version in this account")
            if base_ctx["skill_name"] != ctx["skill_name"]:
                raise invalid(
                    "baseline_version_id",
                    f"belongs to skill {base_ctx['skill_name']!r}, not "
                    f"{ctx['skill_name']!r} (a baseline is the same skill)",
                )
            baseline = _qpackage(conn, account, base_ctx)
        pkg = _qpackage(conn, account, ctx)
        cutoff = conn.execute("SELECT now() AS t").fetchone()["t"]  # type: ignore[index]
        logs = [
            quality.QLog(
                id=str(r["id"]),
                skill_version_id=str(r["skill_version_id"]),
                created_at=r["created_at"],
                was_triggered=r["was_triggered"],
                outcome=r["outcome"],
            )
            for r in rrepo.telemetry_logs(
                conn,
                account_id=account,
                version_id=version_id,
                cutoff=cutoff,
                limit=quality.MAX_TELEMETRY_LOGS,
            )
        ]
    report = quality.evaluate(pkg, baseline=baseline, logs=logs, cutoff=cutoff)
    with db.tenant(account) as conn:
        row = rrepo.insert_quality_run(
            conn,
            account_id=account,
            user_id=principal.user_id,
            key_id=principal.key_id,
            data={
                "skill_version_id": version_id,
                "baseline_version_id": body.baseline_version_id,
                "skill_name": ctx["skill_name"],
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
    db: Database, principal: Principal, version_id: UUID, page: PageParams
) -> Page[SkillQualityRunSummary]:
    with db.tenant(principal.account_id) as conn:
        _context(conn, principal.account_id, version_id)
        rows, total = rrepo.list_quality_runs(
            conn, account_id=principal.account_id, version_id=version_id, limit=page.limit, offset=page.offset
        )
    return Page[SkillQualityRunSummary](
        items=[SkillQualityRunSummary.model_validate(r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
    )


def get_quality_run(db: Database, principal: Principal, run_id: UUID) -> SkillQualityRun:
    with db.tenant(principal.account_id) as conn:
        row = rrepo.get_quality_run(conn, account_id=principal.account_id, run_id=run_id)
    if row is None:
        raise NotFound("skill quality run")
    return SkillQualityRun.model_validate(row)
