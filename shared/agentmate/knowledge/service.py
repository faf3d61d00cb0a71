"""Knowledge K1 use cases: sources, revisions and documents on the shared package ingest.

Every ingest (snapshot push or git sync) must carry a root KNOWLEDGE.yaml; its include/exclude rules select the
documents, and the package identity covers the manifest plus the selected documents only (prior-art §4.10).
Replaying a package hash returns the existing revision and re-targets the source's active_revision_id.

Inline work is bounded like the skills registry's: a snapshot has the ingest's size limits (it fits one Lambda
request) and a git sync the ingest's time budget (``PACKAGES_SYNC_BUDGET_S``, under API Gateway's 30 s).
"""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

from agentmate.core.db import Conn, Database
from agentmate.core.errors import NotFound
from agentmate.core.observability import counted
from agentmate.core.pagination import Page, PageParams
from agentmate.knowledge import repository
from agentmate.knowledge.manifest import MANIFEST_PATH, KnowledgeManifest, parse_manifest
from agentmate.knowledge.repository import STORE
from agentmate.knowledge.schemas import (
    KnowledgeDocument,
    KnowledgeDocumentContent,
    KnowledgeIngestResult,
    KnowledgeSnapshotPush,
    KnowledgeSyncRequest,
)
from agentmate.packages import runtime
from agentmate.packages import service as packages
from agentmate.packages.models import Ingested, Package, Revision, Source, SourceInput, Upserted
from agentmate.packages.policy import NetPolicy
from agentmate.packages.service import Actor, Fetcher

REFERENCED = ("a knowledge resolution run selected this source or one of its revisions (audit rows are "
              "append-only); the source cannot be deleted")


def net_policy() -> NetPolicy:
    return runtime.net_policy()


def fetcher() -> Fetcher:
    return runtime.git_fetcher(net_policy())


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
            repository.set_manifest(conn, account_id=actor.account_id, revision_id=ingested.revision.id,
                                    manifest=sel.manifest.model_dump(exclude_none=True))
        return sel.manifest

    return sel, on_revision


def _result(out: packages.IngestOutcome[KnowledgeManifest]) -> KnowledgeIngestResult:
    assert out.extra is not None
    i = out.ingested
    return KnowledgeIngestResult(source=i.source, revision=i.revision, manifest=out.extra, created=i.created)


def _new_package(result: KnowledgeIngestResult) -> float:
    return 1 if result.created else 0


# -- sources -----------------------------------------------------------------------------------------------------


def register_source(db: Database, actor: Actor, data: SourceInput, policy: NetPolicy | None = None) -> Upserted:
    with db.tenant(actor.account_id) as conn:
        return packages.register_source(conn, STORE, actor, data, policy or net_policy())


def list_sources(db: Database, actor: Actor, page: PageParams) -> Page[Source]:
    return packages.list_sources(db, STORE, actor, page)


def get_source(db: Database, actor: Actor, source_id: UUID) -> Source:
    return packages.get_source(db, STORE, actor, source_id, what="knowledge source")


def delete_source(db: Database, actor: Actor, source_id: UUID) -> None:
    """Delete a source with its revisions and documents (chunks and links cascade); a 409 while a resolution run
    selected it (kdisc's NO ACTION foreign keys of knowledge_resolution_selections)."""
    with db.tenant(actor.account_id) as conn:
        if not STORE.delete_source(conn, account_id=actor.account_id, source_id=source_id, referenced=REFERENCED):
            raise NotFound("knowledge source")


def list_revisions(db: Database, actor: Actor, source_id: UUID, page: PageParams) -> Page[Revision]:
    return packages.list_revisions(db, STORE, actor, source_id, page, what="knowledge source")


# -- ingest ------------------------------------------------------------------------------------------------------


@counted("KnowledgePackageIngested", _new_package)
def push_snapshot(db: Database, actor: Actor, source_id: UUID, body: KnowledgeSnapshotPush) -> KnowledgeIngestResult:
    sel, on_revision = _hooks(actor)
    out = packages.push_snapshot(db, STORE, actor, source_id, body.files, expected_hash=body.package_hash,
                                 select=sel.select, on_revision=on_revision)
    return _result(out)


@counted("KnowledgePackageIngested", _new_package)
def sync_source(db: Database, actor: Actor, source_id: UUID, body: KnowledgeSyncRequest,
                git: Fetcher | None = None) -> KnowledgeIngestResult:
    sel, on_revision = _hooks(actor)
    out = packages.sync_source(db, STORE, actor, source_id, git or runtime.LazyFetcher(lambda: fetcher()),
                               ref=body.ref, select=sel.select, on_revision=on_revision)
    return _result(out)


# -- revisions and documents -------------------------------------------------------------------------------------


def manifest_of(db: Database, actor: Actor, revision_id: UUID) -> KnowledgeManifest:
    with db.tenant(actor.account_id) as conn:
        data = repository.manifest(conn, account_id=actor.account_id, revision_id=revision_id)
    if data is None:
        raise NotFound("knowledge revision")
    return KnowledgeManifest.model_validate(data)


def list_documents(db: Database, actor: Actor, revision_id: UUID, page: PageParams) -> Page[KnowledgeDocument]:
    """Document metadata without bodies, in path order (the manifest is not a document)."""
    with db.tenant(actor.account_id) as conn:
        if STORE.get_revision(conn, account_id=actor.account_id, revision_id=revision_id) is None:
            raise NotFound("knowledge revision")
        items, total = repository.list_documents(conn, account_id=actor.account_id, revision_id=revision_id,
                                                 limit=page.limit, offset=page.offset)
    return Page[KnowledgeDocument](items=items, total=total, limit=page.limit, offset=page.offset)


def get_document(db: Database, actor: Actor, revision_id: UUID, document_id: UUID) -> KnowledgeDocumentContent:
    with db.tenant(actor.account_id) as conn:
        doc = STORE.get_file(conn, account_id=actor.account_id, revision_id=revision_id, file_id=document_id)
    if doc is None or doc.path == MANIFEST_PATH:
        raise NotFound("knowledge document")
    return KnowledgeDocumentContent.model_validate(doc.model_dump())
