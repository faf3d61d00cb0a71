"""Data model of the package ingest: inputs (what a client or a fetch supplies) and stored records."""

from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

SourceType = Literal["git", "local"]
SourceStatus = Literal["pending", "ready", "error"]
RevisionOrigin = Literal["git", "snapshot"]


class SourceInput(BaseModel):
    """Register (or upsert by name) a package source. ``domain`` is derived on the server, never accepted."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "domain": "domain is derived from the first package_path segment; do not send it",
        "url": "the repository address is repository_url",
        "path": "the folder inside the repository is package_path",
        "ref": "the default branch, tag or commit is default_ref",
        "kind": "the source kind is type: git or local",
        "source_type": "the source kind is type: git or local",
    }

    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=128,
        description="Unique per account. Default: every package_path segment joined by '-'.",
    )
    type: SourceType = Field(description="git: the server pulls; local: the client pushes snapshots.")
    repository_url: str = Field(
        min_length=1,
        max_length=2048,
        description="git: an https URL of an allow-listed host, no credentials; local: an informational label "
        "(e.g. file:///…), never fetched.",
    )
    package_path: str = Field(
        default="",
        max_length=512,
        description="Folder of the package inside the repository ('' = the repository root). Its first segment "
        "becomes the source's domain when it has two or more segments.",
    )
    default_ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=255,
        description="Branch, tag or commit synced when a sync names none.",
    )


class FileInput(BaseModel):
    """One file of a pushed snapshot: text ``content``, or ``content_base64`` bytes, or (binary files only)
    just ``sha256`` + ``size_bytes``. Omitted ``sha256`` is derived; a supplied one must match the content."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "text": "text goes in content",
        "data": "bytes go in content_base64",
        "size": "the byte size is size_bytes",
        "hash": "the SHA-256 hex digest is sha256",
        "name": "use path (the file's relative path inside the package)",
        "filename": "use path (the file's relative path inside the package)",
        "body": "use content (UTF-8 text; content_base64 for bytes)",
    }

    path: str = Field(min_length=1, max_length=512, description="Relative POSIX path inside the package.")
    content: str | None = Field(default=None, description="UTF-8 text (no NUL characters).")
    content_base64: str | None = Field(default=None, description="File bytes, standard base64.")
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    size_bytes: int | None = Field(default=None, ge=0)
    mime_type: str | None = Field(default=None, max_length=127, pattern=r"^[\w.+-]+/[\w.+-]+$")


@dataclass(frozen=True, slots=True)
class PackageFile:
    """A validated package file, ready to hash and store. ``text`` is None for binary files (and for binary
    files pushed as metadata only)."""

    path: str
    sha256: str
    size_bytes: int
    mime_type: str
    text: str | None

    @property
    def is_text(self) -> bool:
        return self.text is not None


@dataclass(frozen=True, slots=True)
class Package:
    """A validated package: files sorted by path, its canonical hash and byte total."""

    files: tuple[PackageFile, ...]
    package_hash: str
    total_bytes: int

    def file(self, path: str) -> PackageFile | None:
        return next((f for f in self.files if f.path == path), None)


class Source(BaseModel):
    id: UUID
    name: str
    type: SourceType
    sync_mode: Literal["server_pull", "client_push"]
    repository_url: str
    package_path: str
    domain: str | None
    default_ref: str | None
    status: SourceStatus
    last_error: str | None
    last_commit_sha: str | None
    last_synced_at: datetime | None
    active_revision_id: UUID | None
    created_at: datetime
    updated_at: datetime


class Revision(BaseModel):
    id: UUID
    source_id: UUID
    package_hash: str
    origin: RevisionOrigin
    ref: str | None
    commit_sha: str | None
    file_count: int
    total_bytes: int
    created_at: datetime


class FileMeta(BaseModel):
    """A stored file without its content."""

    id: UUID
    revision_id: UUID
    path: str
    sha256: str
    size_bytes: int
    mime_type: str
    is_text: bool


class FileRecord(FileMeta):
    """A stored file with its text snapshot (None for binary files)."""

    content: str | None


@dataclass(frozen=True, slots=True)
class Upserted:
    source: Source
    created: bool


@dataclass(frozen=True, slots=True)
class Ingested:
    """The outcome of an ingest: ``created`` is False when the package hash replayed an existing revision
    (the source was re-targeted to it)."""

    source: Source
    revision: Revision
    created: bool


@dataclass(frozen=True, slots=True)
class Fetched:
    """A package fetched from git: the immutable commit a ref resolved to and the raw files under the path."""

    commit_sha: str
    ref: str
    files: tuple[tuple[str, bytes], ...]
