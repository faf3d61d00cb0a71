"""Knowledge K1 use cases: sources, revisions and documents on the shared package ingest.

Every ingest (snapshot push or git sync) must carry a root KNOWLEDGE.yaml; its include/exclude rules select the
documents, and the package identity covers the manifest plus the selected documents only (prior-art §4.10).
Replaying a package hash returns the existing revision and re-targets the source's active_revision_id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from agentmate.core.db import Conn, Database
from agentmate.core.errors import NotFound
from agentmate.knowledge import repository
from agentmate.knowledge.manifest import MANIFEST_PATH, KnowledgeManifest, parse_manifest
from agentmate.knowledge.repository import STORE
from agentmate.packages import service as packages
from agentmate.packages.limits import PackageSettings
from agentmate.packages.models import (
    FileInput,
    FileMeta,
    FileRecord,
    Ingested,
    Package,
    Revision,
    Source,
    SourceInput,
    Upserted,
)
from agentmate.packages.policy import NetPolicy
from agentmate.packages.service import Actor, Fetcher


@dataclass(frozen=True, slots=True)
class KnowledgeIngest:
    ingested: Ingested
    manifest: KnowledgeManifest


def _policy() -> NetPolicy:
    return NetPolicy.from_settings(PackageSettings())


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


def register_source(db: Database, actor: Actor, data: SourceInput, policy: NetPolicy | None = None) -> Upserted:
    with db.tenant(actor.account_id) as conn:
        return packages.register_source(conn, STORE, actor, data, policy or _policy())


def _hooks(actor: Actor) -> tuple[_Selection, Callable[[Conn, Ingested], KnowledgeManifest]]:
    sel = _Selection()

    def on_revision(conn: Conn, ingested: Ingested) -> KnowledgeManifest:
        assert sel.manifest is not None
        if ingested.created:
            repository.set_manifest(conn, account_id=actor.account_id, revision_id=ingested.revision.id,
                                    manifest=sel.manifest.model_dump(exclude_none=True))
        return sel.manifest

    return sel, on_revision


def push_snapshot(db: Database, actor: Actor, source_id: UUID, files: Sequence[FileInput],
                  expected_hash: str | None = None) -> KnowledgeIngest:
    sel, on_revision = _hooks(actor)
    out = packages.push_snapshot(db, STORE, actor, source_id, files, expected_hash=expected_hash,
                                 select=sel.select, on_revision=on_revision)
    assert out.extra is not None
    return KnowledgeIngest(out.ingested, out.extra)


def sync_source(db: Database, actor: Actor, source_id: UUID, fetcher: Fetcher,
                ref: str | None = None) -> KnowledgeIngest:
    sel, on_revision = _hooks(actor)
    out = packages.sync_source(db, STORE, actor, source_id, fetcher, ref=ref, select=sel.select,
                               on_revision=on_revision)
    assert out.extra is not None
    return KnowledgeIngest(out.ingested, out.extra)


def list_sources(db: Database, actor: Actor, limit: int, offset: int) -> tuple[list[Source], int]:
    with db.tenant(actor.account_id) as conn:
        return STORE.list_sources(conn, account_id=actor.account_id, limit=limit, offset=offset)


def list_revisions(db: Database, actor: Actor, source_id: UUID, limit: int,
                   offset: int) -> tuple[list[Revision], int]:
    with db.tenant(actor.account_id) as conn:
        if STORE.get_source(conn, account_id=actor.account_id, source_id=source_id) is None:
            raise NotFound("knowledge source")
        return STORE.list_revisions(conn, account_id=actor.account_id, source_id=source_id, limit=limit,
                                    offset=offset)


def manifest_of(db: Database, actor: Actor, revision_id: UUID) -> KnowledgeManifest:
    with db.tenant(actor.account_id) as conn:
        data = repository.manifest(conn, account_id=actor.account_id, revision_id=revision_id)
    if data is None:
        raise NotFound("knowledge revision")
    return KnowledgeManifest.model_validate(data)


def list_documents(db: Database, actor: Actor, revision_id: UUID, limit: int,
                   offset: int) -> tuple[list[FileMeta], int]:
    """Document metadata without bodies (the manifest is not a document)."""
    with db.tenant(actor.account_id) as conn:
        if STORE.get_revision(conn, account_id=actor.account_id, revision_id=revision_id) is None:
            raise NotFound("knowledge revision")
        return repository.list_documents(conn, account_id=actor.account_id, revision_id=revision_id,
                                         limit=limit, offset=offset)


def get_document(db: Database, actor: Actor, revision_id: UUID, document_id: UUID) -> FileRecord:
    with db.tenant(actor.account_id) as conn:
        doc = STORE.get_file(conn, account_id=actor.account_id, revision_id=revision_id, file_id=document_id)
    if doc is None or doc.path == MANIFEST_PATH:
        raise NotFound("knowledge document")
    return doc
