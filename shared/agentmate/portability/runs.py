"""The jobs' work: write an account's tables into an archive; load an archive into an empty account in one
transaction, with every id remapped; re-index the imported memories. Registered by ``jobs.py``."""

from __future__ import annotations

import tempfile
import uuid
import zipfile
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn
from agentmate.core.errors import DomainError
from agentmate.portability import repository as repo
from agentmate.portability.archive import MANIFEST, TABLES, Table, manifest, open_archive, rows
from agentmate.portability.service import REINDEX_KIND, bounds, require_empty
from agentmate.portability.settings import get_portability_settings
from agentmate.portability.storage import get_store

LOAD_BATCH = 500
REINDEX_PAGE = 100


def export(ctx: jobs.RunContext) -> dict[str, Any]:
    account = ctx.job.account_id
    export_id = ctx.job.subject_id
    assert export_id is not None
    counts: dict[str, int] = {}
    with tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024) as spool:
        with ctx.db.tenant(account, snapshot=True) as conn:
            row = repo.get(conn, "account_exports", account_id=account, transfer_id=export_id)
            if row is None:
                raise jobs.Permanent("the export is gone")
            with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED) as archive:
                for table in TABLES:
                    counts[table.name] = _write_table(conn, archive, table, account)
                    if ctx.stopping:
                        raise jobs.Yield("stopping")
                stamp = datetime.now(UTC).isoformat()
                archive.writestr(MANIFEST, _json(manifest(counts, stamp)))
        spool.seek(0)
        get_store().put(row.object_key, spool)  # type: ignore[arg-type]
    with ctx.finish({"counts": counts}) as conn:
        repo.record_result(conn, "account_exports", ctx.job, counts)
    return {"counts": counts}


def _json(doc: Any) -> str:
    import json

    return json.dumps(doc, indent=2, sort_keys=True)


def _write_table(conn: Conn, archive: zipfile.ZipFile, table: Table, account: UUID) -> int:
    names = repo.columns(conn, table)
    n = 0
    with archive.open(table.member, "w", force_zip64=True) as member:
        for line in repo.dump(conn, table, names, account_id=account):
            member.write(line.encode() + b"\n")
            n += 1
    return n


def _uuid(value: Any, where: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise jobs.Permanent(f"archive: {where} is not a uuid") from None


class _Plan:
    """Every row of the archive, read and checked before anything is written, with its new ids."""

    def __init__(self) -> None:
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self.names: dict[str, list[str]] = {}
        self.ids: dict[str, dict[str, str]] = {}

    def read(self, conn: Conn, archive: zipfile.ZipFile) -> None:
        limits = bounds(get_portability_settings())
        for table in TABLES:
            allowed = set(repo.columns(conn, table))
            got = list(rows(archive, table, limits))
            keys = sorted(got[0]) if got else []
            for number, row in enumerate(got, start=1):
                if sorted(row) != keys:
                    raise jobs.Permanent(
                        f"archive: {table.member} line {number} has other columns than line 1"
                    )
            unknown = set(keys) - allowed
            if unknown:
                raise jobs.Permanent(f"archive: {table.member} has unknown columns {sorted(unknown)}")
            if table.id_column:
                self.ids[table.name] = {
                    _uuid(r.get(table.id_column), f"{table.member} {table.id_column}"): str(uuid.uuid4())
                    for r in got
                }
                if len(self.ids[table.name]) != len(got):
                    raise jobs.Permanent(f"archive: {table.member} holds an id twice")
            self.rows[table.name] = got
            self.names[table.name] = keys

    def remapped(self, table: Table) -> tuple[list[dict[str, Any]], dict[str, list[tuple[str, str]]]]:
        """The table's rows with new ids, and its late references per column as (new id, new referenced id)."""
        out: list[dict[str, Any]] = []
        late: dict[str, list[tuple[str, str]]] = {column: [] for column in table.late}
        for row in self.rows[table.name]:
            new = dict(row)
            if table.id_column:
                new[table.id_column] = self.ids[table.name][_uuid(row[table.id_column], table.member)]
            for column, target in table.refs.items():
                if new.get(column) is None:
                    continue
                ref = self.ids.get(target, {}).get(_uuid(new[column], f"{table.member} {column}"))
                if ref is None:
                    raise jobs.Permanent(
                        f"archive: {table.member} {column} names a row the archive does not hold"
                    )
                if column in table.late:
                    late[column].append((new[table.id_column or "id"], ref))
                    new[column] = None
                else:
                    new[column] = ref
            out.append(new)
        return out, late


def load(ctx: jobs.RunContext) -> dict[str, Any]:
    account = ctx.job.account_id
    import_id = ctx.job.subject_id
    assert import_id is not None
    settings = get_portability_settings()
    plan = _Plan()
    with ctx.tenant() as conn:
        row = repo.get(conn, "account_imports", account_id=account, transfer_id=import_id)
        if row is None:
            raise jobs.Permanent("the import is gone")
        try:
            archive = open_archive(
                get_store().read(row.object_key, settings.account_archive_max_bytes), bounds(settings)
            )
            with archive:
                plan.read(conn, archive)
        except DomainError as exc:
            raise jobs.Permanent(str(exc)) from None
    counts = {name: len(r) for name, r in plan.rows.items()}
    loading: list[str] = []
    try:
        with ctx.finish({"counts": counts}) as conn:
            require_empty(conn, account)
            late: list[tuple[Table, str, list[tuple[str, str]]]] = []
            for table in TABLES:
                loading.append(table.member)
                late += _load_table(conn, plan, table, account)
            for table, column, pairs in late:
                repo.set_late(conn, table, column, pairs, account_id=account)
            repo.record_result(conn, "account_imports", ctx.job, counts)
            reindex = jobs.enqueue(conn, account_id=account, kind=REINDEX_KIND, subject_id=import_id)
    except DomainError as exc:  # the database refused a row (translated), or the account is no longer empty
        raise jobs.Permanent(_refused(exc, loading[-1:])) from None
    jobs.wake(reindex.id)
    return {"counts": counts}


def _load_table(
    conn: Conn, plan: _Plan, table: Table, account: UUID
) -> list[tuple[Table, str, list[tuple[str, str]]]]:
    """Insert the table's rows; its late references are handed back to be set once every table is in."""
    new_rows, late = plan.remapped(table)
    for start in range(0, len(new_rows), LOAD_BATCH):
        repo.load(
            conn, table, plan.names[table.name], new_rows[start : start + LOAD_BATCH], account_id=account
        )
    return [(table, column, late[column]) for column in table.late]


def _refused(exc: DomainError, member: list[str]) -> str:
    """Why nothing was imported, in the words of the domain error (fields and rules, never SQL)."""
    where = f"archive: {member[0]}: " if member and exc.errors else ""
    reasons = "; ".join(f"{e.field}: {e.message}" for e in exc.errors)
    return where + (reasons or exc.detail)


def reindex(ctx: jobs.RunContext) -> dict[str, Any]:
    """Rebuild what an import does not carry: the memories' retrieval projection (lexical and vectors), the
    active skills' cards and the knowledge sources' document index, through each domain's own indexing. Idempotent:
    an unchanged document is kept, so a retried or yielded run only does what is left."""
    from agentmate.knowledge.search.index import index_sources
    from agentmate.retrieval.service import get_retrieval
    from agentmate.skills import batch
    from agentmate.skills.search.index import index_versions

    rt = get_retrieval()
    account = ctx.job.account_id
    memories = _reindex_memories(ctx, rt)
    skills = [item.status for item in index_versions(ctx.db, rt, account, batch.job_version_ids(ctx, None))]
    knowledge = index_sources(ctx.db, rt, account, None)
    return {
        "memories": memories,
        "skills": {"indexed": skills.count("indexed"), "total": len(skills)},
        "knowledge": {"indexed": knowledge.indexed, "total": knowledge.total},
    }


def _reindex_memories(ctx: jobs.RunContext, rt: Any) -> dict[str, int]:
    from agentmate.memory.service.projection import index_entries

    account = ctx.job.account_id
    indexed = failed = 0
    after: UUID | None = None
    while True:
        if ctx.stopping:
            raise jobs.Yield("stopping")
        with ctx.tenant() as conn:
            page = repo.imported_entries(conn, account_id=account, after=after, limit=REINDEX_PAGE)
        if not page:
            return {"indexed": indexed, "failed": failed}
        for state in index_entries(ctx.db, rt, account, page):
            indexed += state.status == "indexed"
            failed += state.status != "indexed"
        after = page[-1]["id"]
