"""Knowledge K1 use cases: sources, revisions and documents on the shared package ingest.

Every ingest (snapshot push or git sync) must carry a root KNOWLEDGE.yaml; its include/exclude rules select the
documents, and the package identity covers the manifest plus the selected documents only (prior-art §4.10).
Replaying a package hash returns the existing revision and re-targets the source's active_revision_id.

Inline work is bounded like the skills registry's: a snapshot has the ingest's size limits (it fits one Lambda
request) and a git sync the ingest's time budget (``PACKAGES_SYNC_BUDGET_S``, under API Gateway's 30 s). A sync
that runs out of that time (not one over a size limit: that stays a 413) is queued as a ``knowledge_sync`` job
(``agentmate.jobs``) with ``SYNC_JOB_BUDGET_S``, and the route answers 202 with it; the source is ``pending``
meanwhile, its ``last_error`` naming the job. The job repeats the sync from the start (nothing of a timed-out
download is kept).
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import DomainError, NotFound, ServiceUnavailable
from agentmate.core.observability import counted
from agentmate.core.pagination import Page, PageParams
from agentmate.knowledge.manifest import MANIFEST_PATH, KnowledgeManifest, parse_manifest
from agentmate.knowledge.search import index
from agentmate.knowledge.sources import repository
from agentmate.knowledge.sources.repository import STORE
from agentmate.knowledge.sources.schemas import (
    KnowledgeDocument,
    KnowledgeDocumentContent,
    KnowledgeIngestResult,
    KnowledgeSnapshotPush,
    KnowledgeSyncQueued,
    KnowledgeSyncRequest,
)
from agentmate.packages import runtime
from agentmate.packages import service as packages
from agentmate.packages.policy import NetPolicy, SyncTimedOut
from agentmate.packages.schemas import Ingested, Package, Revision, Source, SourceInput, Upserted
from agentmate.packages.service import Actor, Fetcher
from agentmate.retrieval.service import Retrieval, get_retrieval

SYNC_JOB_KIND = "knowledge_sync"
SYNC_JOB_BUDGET_S = 600.0  # with the 60 s finish margin it fits the 900 s worker function
REFERENCED = (
    "a knowledge resolution run selected this source or one of its revisions (audit rows are "
    "append-only); the source cannot be deleted"
)


def net_policy() -> NetPolicy:
    return runtime.net_policy()


def fetcher() -> Fetcher:
    return runtime.git_fetcher(net_policy())


def job_fetcher() -> Fetcher:
    """The job worker's fetcher: the same limits, but SYNC_JOB_BUDGET_S instead of a request's time budget."""
    return runtime.git_fetcher(net_policy(), sync_budget_s=SYNC_JOB_BUDGET_S)


def select_documents(package: Package) -> tuple[Package, KnowledgeManifest]:
    """Parse the root manifest and keep it plus the documents its include/exclude rules select."""
    manifest_file = package.file(MANIFEST_PATH)
    manifest = parse_manifest(manifest_file.text if manifest_file else None)
    return packages.subset(package, lambda p: p == MANIFEST_PATH or manifest.selects(p)), manifest


class _Selection:
    """The select hook of one ingest; the manifest it parsed is stored by the matching on_revision hook."""

    def __init__(self) -> None:
        self.manifest: KnowledgeManifest | None = None

    def select(self, package: Package) -> Package:
        selected, self.manifest = select_documents(package)
        return selected


def _hooks(actor: Actor) -> tuple[_Selection, Callable[[Conn, Ingested], KnowledgeManifest]]:
    sel = _Selection()

    def on_revision(conn: Conn, ingested: Ingested) -> KnowledgeManifest:
        assert sel.manifest is not None
        if ingested.created:
            repository.set_manifest(
                conn,
                account_id=actor.account_id,
                revision_id=ingested.revision.id,
                manifest=sel.manifest.model_dump(exclude_none=True),
            )
        return sel.manifest

    return sel, on_revision


def _result(out: packages.IngestOutcome[KnowledgeManifest]) -> KnowledgeIngestResult:
    assert out.extra is not None
    i = out.ingested
    return KnowledgeIngestResult(source=i.source, revision=i.revision, manifest=out.extra, created=i.created)


def _indexed(
    db: TenantTransactions, rt: Retrieval | None, actor: Actor, result: KnowledgeIngestResult, wanted: bool
) -> KnowledgeIngestResult:
    """With ``index=true``: index the source's active revision after the ingest committed (the ingest stands
    whatever the index run does; a run past the inline budget continues as its ``knowledge_index`` job)."""
    if not wanted:
        return result
    report = index.index_sources(db, rt or get_retrieval(), actor.account_id, result.source.id)
    return result.model_copy(update={"index": report})


def _new_package(result: KnowledgeIngestResult) -> float:
    return 1 if result.created else 0


# -- sources -----------------------------------------------------------------------------------------------------


def register_source(
    db: TenantTransactions, actor: Actor, data: SourceInput, policy: NetPolicy | None = None
) -> Upserted:
    with db.tenant(actor.account_id) as conn:
        return packages.register_source(conn, STORE, actor, data, policy or net_policy())


def list_sources(db: TenantTransactions, actor: Actor, page: PageParams) -> Page[Source]:
    return packages.list_sources(db, STORE, actor, page)


def get_source(db: TenantTransactions, actor: Actor, source_id: UUID) -> Source:
    return packages.get_source(db, STORE, actor, source_id, what="knowledge source")


def delete_source(db: TenantTransactions, actor: Actor, source_id: UUID) -> None:
    """Delete a source with its revisions and documents (chunks and links cascade); a 409 while a resolution run
    selected it (kdisc's NO ACTION foreign keys of knowledge_resolution_selections)."""
    with db.tenant(actor.account_id) as conn:
        if not STORE.delete_source(
            conn, account_id=actor.account_id, source_id=source_id, referenced=REFERENCED
        ):
            raise NotFound("knowledge source")


def list_revisions(db: TenantTransactions, actor: Actor, source_id: UUID, page: PageParams) -> Page[Revision]:
    return packages.list_revisions(db, STORE, actor, source_id, page, what="knowledge source")


# -- ingest ------------------------------------------------------------------------------------------------------


@counted("KnowledgePackageIngested", _new_package)
def push_snapshot(
    db: TenantTransactions,
    actor: Actor,
    source_id: UUID,
    body: KnowledgeSnapshotPush,
    rt: Retrieval | None = None,
) -> KnowledgeIngestResult:
    sel, on_revision = _hooks(actor)
    out = packages.push_snapshot(
        db,
        STORE,
        actor,
        source_id,
        body.files,
        expected_hash=body.package_hash,
        select=sel.select,
        on_revision=on_revision,
    )
    return _indexed(db, rt, actor, _result(out), body.index)


@counted("KnowledgePackageIngested", _new_package)
def sync_source(
    db: TenantTransactions,
    actor: Actor,
    source_id: UUID,
    body: KnowledgeSyncRequest,
    git: Fetcher | None = None,
    rt: Retrieval | None = None,
) -> KnowledgeIngestResult:
    sel, on_revision = _hooks(actor)
    out = packages.sync_source(
        db,
        STORE,
        actor,
        source_id,
        git or runtime.LazyFetcher(lambda: fetcher()),
        ref=body.ref,
        select=sel.select,
        on_revision=on_revision,
    )
    return _indexed(db, rt, actor, _result(out), body.index)


def sync_or_queue(
    db: TenantTransactions,
    actor: Actor,
    source_id: UUID,
    body: KnowledgeSyncRequest,
    rt: Retrieval | None = None,
) -> KnowledgeIngestResult | KnowledgeSyncQueued:
    """Sync inline; a sync that runs out of the request's time becomes a ``knowledge_sync`` job (202) that also
    indexes when ``index`` was asked for."""
    try:
        return sync_source(db, actor, source_id, body, rt=rt)
    except SyncTimedOut as exc:
        with db.tenant(actor.account_id) as conn:
            job = jobs.enqueue(
                conn,
                account_id=actor.account_id,
                kind=SYNC_JOB_KIND,
                subject_id=source_id,
                payload={
                    "ref": body.ref,
                    "index": body.index,
                    "user_id": _str(actor.user_id),
                    "key_id": _str(actor.key_id),
                },
            )
            STORE.mark_pending(
                conn,
                account_id=actor.account_id,
                source_id=source_id,
                message=f"{exc.detail}: continuing as job {job.id} (GET /api/knowledge/jobs/{job.id})",
            )
            source = STORE.get_source(conn, account_id=actor.account_id, source_id=source_id)
            if source is None:  # deleted while the sync ran: the transaction (and the job) rolls back
                raise NotFound("knowledge source") from exc
        jobs.wake(job.id)
        return KnowledgeSyncQueued(source=source, job=jobs.JobView.of(job))


def _str(value: UUID | None) -> str | None:
    return str(value) if value is not None else None


def _uuid(value: str | None) -> UUID | None:
    return UUID(value) if value else None


def run_sync_job(ctx: jobs.RunContext) -> dict[str, object]:
    """The ``knowledge_sync`` job: the same sync with the worker's budget. A git host failing is retried; any other
    refusal (an unknown ref, a size limit, a bad manifest) fails the job with its reason (the source says it too)."""
    p, source_id = ctx.job.payload, ctx.job.subject_id
    if source_id is None:
        raise jobs.Permanent("a knowledge_sync job names its source as subject_id")
    actor = Actor(ctx.job.account_id, _uuid(p.get("user_id")), _uuid(p.get("key_id")))
    try:
        request = KnowledgeSyncRequest(ref=p.get("ref"), index=bool(p.get("index")))
        out = sync_source(ctx.db, actor, source_id, request, git=job_fetcher())
    except ServiceUnavailable as exc:
        raise jobs.Retryable(exc.detail) from exc
    except DomainError as exc:
        raise jobs.Permanent(exc.detail) from exc
    result: dict[str, object] = {
        "revision_id": str(out.revision.id),
        "commit_sha": out.revision.commit_sha,
        "created": out.created,
    }
    if out.index is not None:
        result["index"] = out.index.model_dump(mode="json", exclude={"items"})
    return result


# -- revisions and documents -------------------------------------------------------------------------------------


def manifest_of(db: TenantTransactions, actor: Actor, revision_id: UUID) -> KnowledgeManifest:
    with db.tenant(actor.account_id) as conn:
        data = repository.manifest(conn, account_id=actor.account_id, revision_id=revision_id)
    if data is None:
        raise NotFound("knowledge revision")
    return KnowledgeManifest.model_validate(data)


def list_documents(
    db: TenantTransactions, actor: Actor, revision_id: UUID, page: PageParams
) -> Page[KnowledgeDocument]:
    """Document metadata without bodies, in path order (the manifest is not a document)."""
    with db.tenant(actor.account_id) as conn:
        if STORE.get_revision(conn, account_id=actor.account_id, revision_id=revision_id) is None:
            raise NotFound("knowledge revision")
        items, total = repository.list_documents(
            conn, account_id=actor.account_id, revision_id=revision_id, limit=page.limit, offset=page.offset
        )
    return Page[KnowledgeDocument](items=items, total=total, limit=page.limit, offset=page.offset)


def get_document(
    db: TenantTransactions, actor: Actor, revision_id: UUID, document_id: UUID
) -> KnowledgeDocumentContent:
    with db.tenant(actor.account_id) as conn:
        doc = STORE.get_file(conn, account_id=actor.account_id, revision_id=revision_id, file_id=document_id)
    if doc is None or doc.path == MANIFEST_PATH:
        raise NotFound("knowledge document")
    return KnowledgeDocumentContent.model_validate(doc.model_dump())
