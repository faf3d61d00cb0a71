"""Wire models of the knowledge registry: snapshot push, sync, ingest results, documents and the K0 catalog."""

from __future__ import annotations

from typing import ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from agentmate.core.pagination import Page
from agentmate.jobs.schemas import JobView
from agentmate.knowledge.manifest import KnowledgeManifest
from agentmate.packages.schemas import FileInput, FileMeta, FileRecord, Revision, Source

MAX_SNAPSHOT_FILES = 1000
MAX_CATALOG_QUERY = 200
MAX_DOMAIN = 200  # as the context pack's knowledge_domain and the search domain filter


class KnowledgeSnapshotPush(BaseModel):
    """A client-pushed package snapshot of a ``local`` source: KNOWLEDGE.yaml at the root plus the documents.
    ``sha256`` per file and ``package_hash`` are derived on the server when omitted; supplied values must match."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "hash": "the package identity hash is package_hash",
        "documents": "send every package file (KNOWLEDGE.yaml included) in files",
        "manifest": "the manifest is the file KNOWLEDGE.yaml in files",
    }
    files: list[FileInput] = Field(
        min_length=1,
        max_length=MAX_SNAPSHOT_FILES,
        description="Every file of the package; KNOWLEDGE.yaml at the package root",
    )
    package_hash: str | None = Field(
        default=None,
        pattern=r"^[0-9a-f]{64}$",
        description="Omit to let the server derive it; a supplied one must match "
        "(KNOWLEDGE.yaml plus the documents its rules select)",
    )


class KnowledgeSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
    )


class KnowledgeIngestResult(BaseModel):
    source: Source = Field(description="The source, now pointing at the revision (active_revision_id)")
    revision: Revision
    manifest: KnowledgeManifest = Field(description="The parsed KNOWLEDGE.yaml of the revision")
    created: bool = Field(
        description="false when the package hash replayed an existing revision (the source "
        "was re-targeted to it)"
    )


class KnowledgeSyncQueued(BaseModel):
    """A sync that did not fit one request's time budget (202): it continues as ``job``."""

    source: Source = Field(
        description="The source, status pending while the job runs (last_error names the job)"
    )
    job: JobView = Field(
        description="The knowledge_sync job (GET /api/knowledge/jobs/{job.id}); its result names the revision"
    )


class KnowledgeDocument(FileMeta):
    """A document's metadata (no body). Binary documents have is_text=false and only hash and size."""


class KnowledgeDocumentContent(FileRecord):
    """A document with its text snapshot (content is null for a binary document)."""


IndexStatus = Literal["not_indexed", "indexed", "partial"]


class KnowledgeCatalogCard(BaseModel):
    """K0 card of one source with an active revision: what discovery matches against."""

    source_id: UUID
    source_name: str
    revision_id: UUID = Field(description="The source's active revision")
    name: str = Field(description="KNOWLEDGE.yaml name")
    description: str | None
    profile: str | None
    language: str | None = Field(
        description="KNOWLEDGE.yaml language as written (also folded into languages)"
    )
    citation_policy: Literal["required", "optional"] | None
    capabilities: list[str]
    languages: list[str] = Field(description="KNOWLEDGE.yaml languages with the singular language folded in")
    domain: str | None = Field(description="First package_path segment of a two-or-more-segment path")
    document_count: int
    package_hash: str
    index_status: IndexStatus = Field(
        description="Chunk index of the active revision: not_indexed (POST /api/knowledge/index has not run on "
        "it), indexed, or partial (some documents or chunks failed or were truncated)"
    )


class KnowledgeDomainCount(BaseModel):
    domain: str | None = Field(description="null groups the sources whose package_path has no domain")
    collections: int


class KnowledgeCatalog(Page[KnowledgeCatalogCard]):
    domains: list[KnowledgeDomainCount] = Field(
        description="The account's whole domain roster (every card, whatever the filters), with collection counts"
    )
