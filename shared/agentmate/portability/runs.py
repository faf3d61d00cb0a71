"""The jobs' work: write an account's tables into an archive; load an archive into an empty account in one
transaction, with every id remapped; re-index the imported memories. Registered by ``jobs.py``."""

from __future__ import annotations

import tempfile
import uuid
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn
from agentmate.core.errors import DomainError
from agentmate.portability import repository as repo
from agentmate.portability.archive import MANIFEST, TABLES, Bounds, Table, manifest, open_archive, rows
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
    with tempfile.TemporaryFile() as spool:  # the zip on disk, never in memory: the store copies it in chunks
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
        get_store().put(row.object_key, spool)
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
    """What the first pass over the archive learns, checked before anything is written: each member's columns
    and row count, and a new id for every archived id. Rows are not kept: the load reads the members again, line
    by line (the id map is the one thing that grows with the account: two short strings a row)."""

    def __init__(self, archive: zipfile.ZipFile, limits: Bounds) -> None:
        self.archive = archive
        self.limits = limits
        self.names: dict[str, list[str]] = {}
        self.counts: dict[str, int] = {}
        self.ids: dict[str, dict[str, str]] = {}

    def read(self, conn: Conn) -> None:
        for table in TABLES:
            allowed = set(repo.columns(conn, table)) | set(table.omit)
            keys: list[str] | None = None
            ids: dict[str, str] = {}
            n = 0
            for n, row in enumerate(rows(self.archive, table, self.limits), start=1):
                if keys is None:
                    keys = sorted(row)
                elif sorted(row) != keys:
                    raise jobs.Permanent(f"archive: {table.member} line {n} has other columns than line 1")
                if table.id_column:
                    ids[_uuid(row.get(table.id_column), f"{table.member} {table.id_column}")] = str(
                        uuid.uuid4()
                    )
            unknown = set(keys or ()) - allowed
            if unknown:
                raise jobs.Permanent(f"archive: {table.member} has unknown columns {sorted(unknown)}")
            if table.id_column:
                if len(ids) != n:
                    raise jobs.Permanent(f"archive: {table.member} holds an id twice")
                self.ids[table.name] = ids
            self.counts[table.name] = n
            self.names[table.name] = [k for k in keys or () if k not in table.omit]

    def batches(self, table: Table) -> Iterator[tuple[list[dict[str, Any]], list[tuple[str, str, str]]]]:
        """The table's rows, read again, with new ids, in batches; with each batch its late references as
        (column, new id, new referenced id)."""
        batch: list[dict[str, Any]] = []
        late: list[tuple[str, str, str]] = []
        for row in rows(self.archive, table, self.limits):
            batch.append(self._remapped(table, row, late))
            if len(batch) == LOAD_BATCH:
                yield batch, late
                batch, late = [], []
        if batch:
            yield batch, late

    def _remapped(
        self, table: Table, row: dict[str, Any], late: list[tuple[str, str, str]]
    ) -> dict[str, Any]:
        new = {k: v for k, v in row.items() if k not in table.omit}
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
                late.append((column, new[table.id_column or "id"], ref))
                new[column] = None
            else:
                new[column] = ref
        for column in table.nested:
            if column in new:
                new[column] = self._deep(new[column])
        if table.settle and new.get("status") in table.settle[0]:
            new.update(table.settle[1])
        return new

    def _deep(self, value: Any) -> Any:
        """A JSON value with every string that is an archived row's id replaced by that row's new id."""
        if isinstance(value, dict):
            return {k: self._deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._deep(v) for v in value]
        if isinstance(value, str) and len(value) == UUID_LENGTH:
            for ids in self.ids.values():
                if value in ids:
                    return ids[value]
        return value


UUID_LENGTH = 36


def load(ctx: jobs.RunContext) -> dict[str, Any]:
    """Two passes over the archive's members, each read line by line from the stored file: the first checks
    every member and gives each id its new one, the second inserts in batches, in one transaction."""
    account = ctx.job.account_id
    import_id = ctx.job.subject_id
    assert import_id is not None
    settings = get_portability_settings()
    with ctx.tenant() as conn:
        row = repo.get(conn, "account_imports", account_id=account, transfer_id=import_id)
    if row is None:
        raise jobs.Permanent("the import is gone")
    loading: list[
        str
    ] = []  # the members written so far: the last one is named when the database refuses a row
    try:
        with (
            get_store().open(row.object_key, settings.account_archive_max_bytes) as file,
            open_archive(file, bounds(settings)) as archive,
        ):
            plan = _Plan(archive, bounds(settings))
            with ctx.tenant() as conn:
                plan.read(conn)
            reindex = _write(ctx, plan, import_id, loading)
    except DomainError as exc:  # no archive, an unreadable member, a refused row, or the account is not empty
        raise jobs.Permanent(_refused(exc, loading[-1:])) from None
    jobs.wake(reindex.id)
    return {"counts": plan.counts}


def _write(ctx: jobs.RunContext, plan: _Plan, import_id: UUID, loading: list[str]) -> jobs.Job:
    account = ctx.job.account_id
    with ctx.finish({"counts": plan.counts}) as conn:
        require_empty(conn, account)
        late: list[tuple[Table, list[tuple[str, str, str]]]] = []
        for table in TABLES:
            loading.append(table.member)
            for batch, refs in plan.batches(table):
                repo.load(conn, table, plan.names[table.name], batch, account_id=account)
                late.append((table, refs))
        for table, refs in late:
            for column in table.late:
                pairs = [(i, r) for c, i, r in refs if c == column]
                repo.set_late(conn, table, column, pairs, account_id=account)
        repo.record_result(conn, "account_imports", ctx.job, plan.counts)
        return jobs.enqueue(conn, account_id=account, kind=REINDEX_KIND, subject_id=import_id)


def _refused(exc: DomainError, member: list[str]) -> str:
    """Why nothing was imported, in the words of the domain error (fields and rules, never SQL)."""
    where = f"archive: {member[0]}: " if member and exc.errors else ""
    reasons = "; ".join(f"{e.field}: {e.message}" for e in exc.errors)
    return where + (reasons or exc.detail)


def reindex(ctx: jobs.RunContext) -> dict[str, Any]:
    """Rebuild what an import does not carry: the memories' retrieval projection (lexical and vectors), the
    active skills' cards, the knowledge sources' document index and their active wiki builds' page index, through
    each domain's own indexing. Idempotent: an unchanged document is kept, and a wiki already indexed is skipped,
    so a retried or yielded run only does what is left."""
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
        "wiki": _reindex_wikis(ctx, rt),
    }


def _reindex_wikis(ctx: jobs.RunContext, rt: Any) -> dict[str, int]:
    from agentmate.knowledge.wiki.retrieval import sync_source
    from agentmate.knowledge.wiki.retrieval_repository import index_states

    account = ctx.job.account_id
    with ctx.tenant() as conn:
        sources = [s["source_id"] for s in index_states(conn, account_id=account, only_active=True)]
    outcomes = [sync_source(ctx.db, rt, account, source) for source in sources]
    indexed = sum(1 for o in outcomes if o is not None and o.status == "indexed")
    return {"indexed": indexed, "total": len(sources)}


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
