"""SQL of one registry's package tables (created by ``create_package_tables``, migrations/0050).

A ``PackageStore`` is bound to a registry's three table names at import time; every method takes the caller's
connection (the caller owns the tenant transaction) and the account id, and reads/writes only the template's
columns, so a registry may add its own columns to its tables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import psycopg

from agentmate.core.db import Conn
from agentmate.core.errors import Conflict
from agentmate.core.sql import paged
from agentmate.packages.schemas import FileMeta, FileRecord, Package, Revision, Source, SourceInput

_IDENT = re.compile(r"^[a-z][a-z0-9_]{0,40}$")

SOURCE_COLUMNS = (
    "id, name, type, sync_mode, repository_url, package_path, domain, default_ref, status, last_error, "
    "last_commit_sha, last_synced_at, active_revision_id, created_at, updated_at"
)
REVISION_COLUMNS = "id, source_id, package_hash, origin, ref, commit_sha, file_count, total_bytes, created_at"
FILE_META_COLUMNS = "id, revision_id, path, sha256, size_bytes, mime_type, is_text"
FILE_COLUMNS = FILE_META_COLUMNS + ", content"
_MAX_ERROR_CHARS = 2000


@dataclass(frozen=True, slots=True)
class PackageTables:
    """The names a registry gave ``create_package_tables`` (e.g. skill_sources, skill_source_revisions,
    skill_revision_files)."""

    sources: str
    revisions: str
    files: str

    def __post_init__(self) -> None:
        for name in (self.sources, self.revisions, self.files):
            if not _IDENT.match(name):
                raise ValueError(f"not a plain table name: {name!r}")


def template_constraints(tables: PackageTables) -> dict[str, tuple[str, str]]:
    """The constraint name → (field, message) table of a registry's package tables (migrations/0050), for its
    repository to declare with ``core.dberrors.constraints`` (composite ``_id_account_key`` targets excluded)."""
    s, r, f = tables.sources, tables.revisions, tables.files
    return {
        f"{s}_account_name_key": ("name", "a source with this name already exists"),
        f"{s}_type_check": ("type", "must be git or local"),
        f"{s}_status_check": ("status", "must be pending, ready or error"),
        f"{s}_name_check": ("name", "must be 1-128 characters"),
        f"{s}_repository_url_check": ("repository_url", "must be 1-2048 characters"),
        f"{s}_package_path_check": ("package_path", "must be at most 512 characters"),
        f"{s}_active_revision_fkey": ("active_revision_id", "must be a revision of this source"),
        f"{r}_id_source_account_key": ("revision_id", "revision identity"),
        f"{r}_source_hash_key": ("package_hash", "this source already has a revision with this package hash"),
        f"{r}_source_fkey": ("source_id", "no such source"),
        f"{r}_package_hash_check": ("package_hash", "must be 64 lowercase hex characters"),
        f"{r}_origin_check": ("origin", "must be git or snapshot"),
        f"{r}_commit_sha_check": ("commit_sha", "must be a 40- or 64-hex commit id"),
        f"{r}_counts_check": ("files", "a revision has at least one file"),
        f"{f}_revision_path_key": ("path", "duplicate path in the package"),
        f"{f}_revision_fkey": ("revision_id", "no such revision"),
        f"{f}_sha256_check": ("sha256", "must be 64 lowercase hex characters"),
        f"{f}_size_check": ("size_bytes", "must be at least 0"),
        f"{f}_content_check": ("content", "text files keep content, binary files none"),
        f"{f}_path_check": ("path", "must be 1-512 characters"),
    }


class PackageStore:
    def __init__(self, tables: PackageTables) -> None:
        self.tables = tables

    # --- sources -------------------------------------------------------------------------------------------

    def lock_name(self, conn: Conn, *, account_id: UUID, name: str) -> None:
        """Serialise registrations of one name (the unique constraint is the backstop)."""
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%(lock_key)s, 7452050))",
            {"lock_key": f"{self.tables.sources}:{account_id}:{name}"},
        )

    def source_by_name(self, conn: Conn, *, account_id: UUID, name: str) -> Source | None:
        row = conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM {self.tables.sources} WHERE account_id = %(account_id)s AND name = %(name)s",
            {"account_id": account_id, "name": name},
        ).fetchone()
        return Source.model_validate(row) if row else None

    def insert_source(
        self,
        conn: Conn,
        *,
        account_id: UUID,
        user_id: UUID | None,
        key_id: UUID | None,
        name: str,
        data: SourceInput,
        domain: str | None,
    ) -> Source:
        row = conn.execute(
            f"""INSERT INTO {self.tables.sources}
                    (account_id, user_id, key_id, name, type, repository_url, package_path, domain, default_ref)
                VALUES (%(a)s, %(u)s, %(k)s, %(n)s, %(t)s, %(url)s, %(p)s, %(d)s, %(ref)s)
                RETURNING {SOURCE_COLUMNS}""",
            {
                "a": account_id,
                "u": user_id,
                "k": key_id,
                "n": name,
                "t": data.type,
                "url": data.repository_url,
                "p": data.package_path,
                "d": domain,
                "ref": data.default_ref,
            },
        ).fetchone()
        return Source.model_validate(row)

    def update_default_ref(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, default_ref: str | None
    ) -> Source:
        row = conn.execute(
            f"""UPDATE {self.tables.sources} SET default_ref = %(default_ref)s, updated_at = now()
                WHERE account_id = %(account_id)s AND id = %(source_id)s RETURNING {SOURCE_COLUMNS}""",
            {"default_ref": default_ref, "account_id": account_id, "source_id": source_id},
        ).fetchone()
        return Source.model_validate(row)

    def get_source(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, lock: bool = False
    ) -> Source | None:
        suffix = " FOR UPDATE" if lock else ""
        row = conn.execute(
            f"SELECT {SOURCE_COLUMNS} FROM {self.tables.sources} WHERE account_id = %(account_id)s AND id = %(source_id)s{suffix}",
            {"account_id": account_id, "source_id": source_id},
        ).fetchone()
        return Source.model_validate(row) if row else None

    def list_sources(
        self, conn: Conn, *, account_id: UUID, limit: int, offset: int
    ) -> tuple[list[Source], int]:
        rows, total = paged(
            conn,
            columns=SOURCE_COLUMNS,
            table=self.tables.sources,
            where=["account_id = %(a)s"],
            params={"a": account_id},
            order_by="created_at DESC, id",
            limit=limit,
            offset=offset,
        )
        return [Source.model_validate(r) for r in rows], total

    def delete_source(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, referenced: str | None = None
    ) -> bool:
        """Delete a source (its revisions and files cascade). With ``referenced``, a registry row that still
        references the source or one of its revisions through a NO ACTION foreign key (an audit row) makes this a
        ``Conflict`` with that message, and nothing is deleted."""
        if referenced is None:
            return self._delete_source(conn, account_id, source_id)
        try:
            with conn.transaction():
                return self._delete_source(conn, account_id, source_id)
        except psycopg.errors.ForeignKeyViolation:
            raise Conflict(referenced) from None

    def _delete_source(self, conn: Conn, account_id: UUID, source_id: UUID) -> bool:
        return (
            conn.execute(
                f"DELETE FROM {self.tables.sources} WHERE account_id = %(account_id)s AND id = %(source_id)s",
                {"account_id": account_id, "source_id": source_id},
            ).rowcount
            > 0
        )

    def mark_error(self, conn: Conn, *, account_id: UUID, source_id: UUID, message: str) -> None:
        conn.execute(
            f"""UPDATE {self.tables.sources} SET status = 'error', last_error = %(message)s, updated_at = now()
                WHERE account_id = %(account_id)s AND id = %(source_id)s""",
            {"message": message[:_MAX_ERROR_CHARS], "account_id": account_id, "source_id": source_id},
        )

    def mark_pending(self, conn: Conn, *, account_id: UUID, source_id: UUID, message: str) -> None:
        """Work on the source continues elsewhere (a queued sync job): ``message`` says where."""
        conn.execute(
            f"""UPDATE {self.tables.sources} SET status = 'pending', last_error = %(message)s, updated_at = now()
                WHERE account_id = %(account_id)s AND id = %(source_id)s""",
            {"message": message[:_MAX_ERROR_CHARS], "account_id": account_id, "source_id": source_id},
        )

    def mark_ready(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, revision_id: UUID, commit_sha: str | None
    ) -> Source:
        row = conn.execute(
            f"""UPDATE {self.tables.sources}
                SET status = 'ready', last_error = NULL, active_revision_id = %(r)s,
                    last_commit_sha = coalesce(%(c)s, last_commit_sha),
                    last_synced_at = CASE WHEN %(c)s::text IS NULL THEN last_synced_at ELSE now() END,
                    updated_at = now()
                WHERE account_id = %(a)s AND id = %(s)s RETURNING {SOURCE_COLUMNS}""",
            {"r": revision_id, "c": commit_sha, "a": account_id, "s": source_id},
        ).fetchone()
        return Source.model_validate(row)

    # --- revisions -----------------------------------------------------------------------------------------

    def revision_by_hash(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, package_hash: str
    ) -> Revision | None:
        row = conn.execute(
            f"""SELECT {REVISION_COLUMNS} FROM {self.tables.revisions}
                WHERE account_id = %(account_id)s AND source_id = %(source_id)s AND package_hash = %(package_hash)s""",
            {"account_id": account_id, "source_id": source_id, "package_hash": package_hash},
        ).fetchone()
        return Revision.model_validate(row) if row else None

    def insert_revision(
        self,
        conn: Conn,
        *,
        account_id: UUID,
        source_id: UUID,
        user_id: UUID | None,
        key_id: UUID | None,
        package: Package,
        origin: str,
        ref: str | None,
        commit_sha: str | None,
    ) -> Revision:
        row = conn.execute(
            f"""INSERT INTO {self.tables.revisions}
                    (account_id, source_id, user_id, key_id, package_hash, origin, ref, commit_sha, file_count,
                     total_bytes)
                VALUES (%(a)s, %(s)s, %(u)s, %(k)s, %(h)s, %(o)s, %(ref)s, %(c)s, %(n)s, %(b)s)
                RETURNING {REVISION_COLUMNS}""",
            {
                "a": account_id,
                "s": source_id,
                "u": user_id,
                "k": key_id,
                "h": package.package_hash,
                "o": origin,
                "ref": ref,
                "c": commit_sha,
                "n": len(package.files),
                "b": package.total_bytes,
            },
        ).fetchone()
        revision = Revision.model_validate(row)
        # One statement for every file (COPY FROM is refused on tables with row-level security).
        files = package.files
        conn.execute(
            f"""INSERT INTO {self.tables.files}
                    (account_id, revision_id, path, sha256, size_bytes, mime_type, is_text, content)
                SELECT %(a)s, %(r)s, f.path, f.sha256, f.size_bytes, f.mime_type, f.content IS NOT NULL, f.content
                FROM unnest(%(p)s::text[], %(h)s::text[], %(z)s::bigint[], %(m)s::text[], %(c)s::text[])
                    AS f (path, sha256, size_bytes, mime_type, content)""",
            {
                "a": account_id,
                "r": revision.id,
                "p": [f.path for f in files],
                "h": [f.sha256 for f in files],
                "z": [f.size_bytes for f in files],
                "m": [f.mime_type for f in files],
                "c": [f.text for f in files],
            },
        )
        return revision

    def get_revision(self, conn: Conn, *, account_id: UUID, revision_id: UUID) -> Revision | None:
        row = conn.execute(
            f"SELECT {REVISION_COLUMNS} FROM {self.tables.revisions} WHERE account_id = %(account_id)s AND id = %(revision_id)s",
            {"account_id": account_id, "revision_id": revision_id},
        ).fetchone()
        return Revision.model_validate(row) if row else None

    def list_revisions(
        self, conn: Conn, *, account_id: UUID, source_id: UUID, limit: int, offset: int
    ) -> tuple[list[Revision], int]:
        rows, total = paged(
            conn,
            columns=REVISION_COLUMNS,
            table=self.tables.revisions,
            where=["account_id = %(a)s", "source_id = %(s)s"],
            params={"a": account_id, "s": source_id},
            order_by="created_at DESC, id",
            limit=limit,
            offset=offset,
        )
        return [Revision.model_validate(r) for r in rows], total

    # --- files ---------------------------------------------------------------------------------------------

    def list_files(
        self, conn: Conn, *, account_id: UUID, revision_id: UUID, limit: int, offset: int
    ) -> tuple[list[FileMeta], int]:
        rows, total = paged(
            conn,
            columns=FILE_META_COLUMNS,
            table=self.tables.files,
            where=["account_id = %(a)s", "revision_id = %(r)s"],
            params={"a": account_id, "r": revision_id},
            order_by='path COLLATE "C"',
            limit=limit,
            offset=offset,
        )
        return [FileMeta.model_validate(r) for r in rows], total

    def get_file(
        self, conn: Conn, *, account_id: UUID, revision_id: UUID, file_id: UUID
    ) -> FileRecord | None:
        row = conn.execute(
            f"""SELECT {FILE_COLUMNS} FROM {self.tables.files}
                WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND id = %(file_id)s""",
            {"account_id": account_id, "revision_id": revision_id, "file_id": file_id},
        ).fetchone()
        return FileRecord.model_validate(row) if row else None

    def file_by_path(
        self, conn: Conn, *, account_id: UUID, revision_id: UUID, path: str
    ) -> FileRecord | None:
        row = conn.execute(
            f"""SELECT {FILE_COLUMNS} FROM {self.tables.files}
                WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s AND path = %(path)s""",
            {"account_id": account_id, "revision_id": revision_id, "path": path},
        ).fetchone()
        return FileRecord.model_validate(row) if row else None

    def all_files(
        self, conn: Conn, *, account_id: UUID, revision_id: UUID, content: bool = True
    ) -> list[FileRecord] | list[FileMeta]:
        """Every file of a revision in path order (for compilers and indexers)."""
        cols = FILE_COLUMNS if content else FILE_META_COLUMNS
        rows: list[dict[str, Any]] = conn.execute(
            f'SELECT {cols} FROM {self.tables.files} WHERE account_id = %(account_id)s AND revision_id = %(revision_id)s ORDER BY path COLLATE "C"',
            {"account_id": account_id, "revision_id": revision_id},
        ).fetchall()
        model = FileRecord if content else FileMeta
        return [model.model_validate(r) for r in rows]
