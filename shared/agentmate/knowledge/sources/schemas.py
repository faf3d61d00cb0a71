"""Wire models of knowledge sources: snapshot push, sync, ingest results and documents."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field

from agentmate.core.inputs import Bool
from agentmate.jobs.schemas import JobView
from agentmate.knowledge.manifest import KnowledgeManifest
from agentmate.knowledge.search.schemas import KnowledgeIndexReport
from agentmate.packages.schemas import FileInput, FileMeta, FileRecord, Revision, Source

MAX_SNAPSHOT_FILES = 1000
INDEX_FLAG = (
    "Also chunk-index the source's active revision into knowledge search after the push commits (as POST "
    "/api/knowledge/index with this source_id); without it search serves the previously indexed revision and "
    "reports the source in stale"
)


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
    index: Bool = Field(default=False, description=INDEX_FLAG)


class KnowledgeSyncRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="Branch, tag or commit (default: the source's default_ref, else HEAD)",
    )
    index: Bool = Field(default=False, description=INDEX_FLAG)


class KnowledgeIngestResult(BaseModel):
    source: Source = Field(description="The source, now pointing at the revision (active_revision_id)")
    revision: Revision
    manifest: KnowledgeManifest = Field(description="The parsed KNOWLEDGE.yaml of the revision")
    created: bool = Field(
        description="false when the package hash replayed an existing revision (the source "
        "was re-targeted to it)"
    )
    index: KnowledgeIndexReport | None = Field(
        default=None,
        description="With index=true: the index run of the source's active revision (its job, when it did not "
        "fit the request); null without index=true",
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
