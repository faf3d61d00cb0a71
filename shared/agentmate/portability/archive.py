"""The archive: which tables it holds, how their ids refer to each other, and its bounded reading.

Format (``docs/account-archive.md``): a zip with ``manifest.json`` and one ``<domain>/<table>.ndjson`` per table,
one JSON object per line, the row's columns by name, in the order of ``TABLES`` (a parent before its children).
Columns that tie a row to a credential or a person (``account_id``, ``user_id``, ``key_id``,
``source_key_id``) are never written; ids are the exporting account's and are remapped on import.
"""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any, BinaryIO, NamedTuple

from agentmate.core.errors import TooLarge, invalid

FORMAT = "agentmate-account-archive"
VERSION = 1
MANIFEST = "manifest.json"
# Never exported, never accepted: the tenant, the people and the credentials.
DROPPED = ("account_id", "user_id", "key_id", "source_key_id")


class Table(NamedTuple):
    domain: str
    name: str
    # The row's own id column (remapped), or None (a row keyed by its parent).
    id_column: str | None
    # Columns holding the id of a row of another table in the archive: column -> that table.
    refs: dict[str, str]
    # References set once every table is in (a source's active revision is written after the source).
    late: tuple[str, ...] = ()
    # The export's row order when the table has no id of its own (or its rows refer to earlier rows of itself).
    order: str = "id"
    # Columns never carried: they name what an archive does not hold (a job, a search log row, the state of the
    # derived index). Not exported; dropped from an archive's rows on import, so they take their defaults.
    omit: tuple[str, ...] = ()
    # JSON columns whose nested values may hold ids of archived rows (references echoed by a client or written by
    # the compiler): any string in them equal to an archived row's id is remapped with the same mapping.
    nested: tuple[str, ...] = ()
    # An unfinished row (status in the first set) is imported finished with the given values: the job that would
    # have finished it is not in the archive, and a row left queued would block its successors forever.
    settle: tuple[frozenset[str], dict[str, str]] | None = None

    @property
    def member(self) -> str:
        return f"{self.domain}/{self.name}.ndjson"


def _package(domain: str, prefix: str, files: str, source: dict[str, Any] | None = None) -> tuple[Table, ...]:
    """A registry's package tables (migrations/0050): sources, their revisions, the revisions' files. ``source``:
    more references of the source row (set last) and its omitted columns."""
    sources, revisions = f"{prefix}_sources", f"{prefix}_source_revisions"
    extra: dict[str, Any] = source or {}
    late: dict[str, str] = {"active_revision_id": revisions, **extra.get("late", {})}
    return (
        Table(domain, sources, "id", late, late=tuple(late), omit=tuple(extra.get("omit", ()))),
        Table(domain, revisions, "id", {"source_id": sources}),
        Table(domain, files, "id", {"revision_id": revisions}),
    )


_VERSION = {"skill_version_id": "skill_versions"}
_BUILD = {"build_id": "knowledge_builds"}
_SOURCE = {"source_id": "knowledge_sources"}
_REVISION = "knowledge_source_revisions"
_PAGE = "knowledge_pages"
STOPPED = "the job running it was not carried by the account archive"
_UNFINISHED = frozenset({"queued", "running"})
# A parent before its children: the load inserts in this order.
TABLES: tuple[Table, ...] = (
    Table("todos", "todos", "id", {}),
    Table("notes", "notes", "id", {}),
    Table("reports", "reports", "id", {}),
    Table("bookmarks", "bookmarks", "id", {}),
    Table("expenses", "expenses", "id", {}),
    *_package("skills", "skill", "skill_revision_files"),
    Table(
        "skills",
        "skill_versions",
        "id",
        {"source_id": "skill_sources", "source_revision_id": "skill_source_revisions"},
    ),
    Table("skills", "skill_logs", "id", _VERSION),
    Table("skills", "skill_compiled_artifacts", None, _VERSION, order="skill_version_id"),
    Table("skills", "skill_compile_failures", None, _VERSION, order="skill_version_id"),
    Table("skills", "skill_quality_runs", "id", {**_VERSION, "baseline_version_id": "skill_versions"}),
    *_package(
        "knowledge",
        "knowledge",
        "knowledge_documents",
        # the wiki index is rebuilt after an import (the re-index job), so the source says it is not indexed yet
        {"late": {"active_build_id": "knowledge_builds"}, "omit": ("indexed_build_id", "wiki_indexed_at")},
    ),
    Table("knowledge", "knowledge_profile_versions", "id", {}),
    Table(
        "knowledge",
        "knowledge_builds",
        "id",
        {
            **_SOURCE,
            "source_revision_id": _REVISION,
            "profile_version_id": "knowledge_profile_versions",
            "parent_build_id": "knowledge_builds",  # an earlier build: the rows load in queue order
        },
        order="queued_at, id",
        omit=("job_id",),
        nested=("impact", "check_failures"),
        settle=(_UNFINISHED, {"status": "failed", "error": STOPPED}),
    ),
    Table("knowledge", "knowledge_pages", "id", {**_BUILD, "derived_from_build_id": "knowledge_builds"}),
    Table(
        "knowledge",
        "knowledge_page_citations",
        "id",
        {**_BUILD, "page_id": _PAGE, "document_id": "knowledge_documents"},
    ),
    Table(
        "knowledge",
        "knowledge_page_links",
        "id",
        {**_BUILD, "source_page_id": _PAGE, "target_page_id": _PAGE},
    ),
    Table("knowledge", "knowledge_build_events", "id", _BUILD, nested=("payload",)),
    Table(
        "knowledge",
        "knowledge_build_reviews",
        "id",
        {**_BUILD, **_SOURCE},
        omit=("job_id",),
        settle=(_UNFINISHED, {"status": "failed", "note": STOPPED}),
    ),
    Table("knowledge", "knowledge_review_findings", "id", {"review_id": "knowledge_build_reviews"}),
    Table("knowledge", "knowledge_lint_runs", "id", {**_SOURCE, **_BUILD, "revision_id": _REVISION}),
    Table("knowledge", "knowledge_lint_findings", "id", {"run_id": "knowledge_lint_runs"}),
    Table(
        "knowledge",
        "knowledge_validation_signals",
        "id",
        {**_SOURCE, **_BUILD, **_VERSION},
        omit=("query_id",),  # a row of the search log, which is not carried
    ),
    Table(
        "knowledge",
        "knowledge_resolution_runs",
        "id",
        _VERSION,
        nested=("candidates", "selected", "retrieved", "citations"),
    ),
    Table(
        "knowledge",
        "knowledge_resolution_selections",
        None,
        {"run_id": "knowledge_resolution_runs", **_SOURCE, "revision_id": _REVISION},
        order="run_id, position",
    ),
    Table("memory", "memory_events", "id", _VERSION),
    Table(
        "memory",
        "memory_entries",
        "id",
        {"source_event_id": "memory_events", "superseded_by": "memory_entries"},
        late=("superseded_by",),
    ),
    Table("memory", "memory_evidence", "id", {"memory_id": "memory_entries"}),
    Table("memory", "memory_feedback", "id", {"memory_id": "memory_entries", **_VERSION}),
    Table("working", "working_sessions", "id", {}),
    Table("working", "working_items", None, {"session_id": "working_sessions"}, order="session_id, seq"),
)
BY_MEMBER = {t.member: t for t in TABLES}

# Every other table with an account_id, and why an archive does not carry it (docs/account-archive.md; a test
# fails when a migration adds a tenant table that is in neither list).
_CREDENTIAL = "a credential or who holds it: never leaves the deployment"
_DERIVED = "derived: the re-index job after an import rebuilds it from the carried rows"
LEFT_OUT: dict[str, str] = {
    "users": _CREDENTIAL,
    "api_keys": _CREDENTIAL,
    "oauth_grants": _CREDENTIAL,
    "oauth_codes": _CREDENTIAL,
    "oauth_tokens": _CREDENTIAL,
    "oauth_device_codes": _CREDENTIAL,
    "idempotency_keys": "replay records of requests to this deployment, expiring within a day",
    "jobs": "the queue: an archive is data at rest (an unfinished build or review arrives failed)",
    "account_exports": "the transfers themselves",
    "account_imports": "the transfers themselves",
    "account_rate": "rate-limit state",
    "account_leases": "concurrency leases",
    "account_usage": "stored-volume counters (migration 0098): the import's inserts count themselves again",
    "retrieval_documents": _DERIVED,
    "knowledge_chunks": _DERIVED,
    "knowledge_document_links": _DERIVED,
    "knowledge_revision_index": _DERIVED,
    "retrieval_queries": "the search log: an operational record of every search (grows with traffic, not with "
    "the account's knowledge); the validation signals derived from it are carried",
}


# What reading a hostile member can raise besides our own errors: a corrupt stream, an encrypted member, an unknown
# compression method, a truncated archive.
UNREADABLE = (
    zipfile.BadZipFile,
    zlib.error,
    NotImplementedError,
    RuntimeError,
    EOFError,
    ValueError,
    OSError,
)
CANNOT_READ = "cannot be read (corrupt, encrypted or an unknown compression)"


class Bounds(NamedTuple):
    max_members: int
    max_member_bytes: int
    max_line_bytes: int


def manifest(counts: dict[str, int], exported_at: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "tables": {t.name: {"member": t.member, "rows": counts.get(t.name, 0)} for t in TABLES},
    }


def open_archive(data: bytes | BinaryIO, bounds: Bounds) -> zipfile.ZipFile:
    """The archive (its bytes, or a seekable file: the job reads members from the file, never the whole archive)
    as a zip whose directory keeps the bounds, or a 400/413 naming ``archive``: a hostile archive (not a zip,
    unknown or duplicate members, paths, too many members, a member inflating past its bound) is refused before a
    byte of it is inflated."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data)
        infos = archive.infolist()
    except UNREADABLE:
        raise invalid("archive", "is not a zip archive") from None
    if len(infos) > bounds.max_members:
        raise TooLarge(f"archive: more than {bounds.max_members} members")
    allowed = [MANIFEST, *BY_MEMBER]
    names = [i.filename for i in infos]
    if len(set(names)) != len(names):
        raise invalid("archive", "has a member twice")
    for info in infos:
        if info.filename not in allowed:
            raise invalid("archive", f"unknown member {info.filename[:100]!r}", allowed)
        if info.file_size > bounds.max_member_bytes:
            raise TooLarge(f"archive: member {info.filename} inflates past {bounds.max_member_bytes} bytes")
    if MANIFEST not in names:
        raise invalid("archive", f"has no {MANIFEST}")
    check_manifest(archive, bounds)
    return archive


def check_manifest(archive: zipfile.ZipFile, bounds: Bounds) -> dict[str, Any]:
    raw = _bounded(archive, MANIFEST, bounds.max_line_bytes)
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):
        raise invalid("archive.manifest", "is not JSON") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise invalid("archive.manifest.format", "is not an agentmate account archive", [FORMAT])
    if doc.get("version") != VERSION:
        raise invalid("archive.manifest.version", "is not a version this server reads", [VERSION])
    return doc


def _bounded(archive: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        with archive.open(name) as member:
            data = member.read(limit + 1)
    except UNREADABLE:
        raise invalid(f"archive.{name}", CANNOT_READ) from None
    if len(data) > limit:
        raise TooLarge(f"archive: {name} is longer than {limit} bytes")
    return data


def rows(archive: zipfile.ZipFile, table: Table, bounds: Bounds) -> Iterator[dict[str, Any]]:
    """The rows of one member, each a JSON object no longer than a line may be; absent member = no rows. The
    member's real inflated size is counted too (a zip may understate it)."""
    if table.member not in archive.namelist():
        return
    try:
        yield from _member_rows(archive, table, bounds)
    except UNREADABLE:
        raise invalid(f"archive.{table.member}", CANNOT_READ) from None


def _member_rows(archive: zipfile.ZipFile, table: Table, bounds: Bounds) -> Iterator[dict[str, Any]]:
    inflated = 0
    with archive.open(table.member) as member:
        for number, line in enumerate(_lines(member, bounds.max_line_bytes), start=1):
            inflated += len(line)
            if inflated > bounds.max_member_bytes:
                raise TooLarge(f"archive: {table.member} inflates past {bounds.max_member_bytes} bytes")
            if not line.strip():
                continue
            try:
                row = json.loads(line, parse_float=str)  # numerics stay exact
            except (ValueError, RecursionError):
                raise invalid(f"archive.{table.member}", f"line {number} is not JSON") from None
            if not isinstance(row, dict):
                raise invalid(f"archive.{table.member}", f"line {number} is not a JSON object")
            yield row


def _lines(member: Any, limit: int) -> Iterator[bytes]:
    while True:
        line: bytes = member.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            raise TooLarge(f"archive: a line is longer than {limit} bytes")
        yield line
