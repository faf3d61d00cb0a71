"""The use cases: queue an export, read it; open an import, start it, read it. Each opens its own tenant
transaction; the work itself runs in the jobs (``runs.py``). The kinds' names live here, with the code that
enqueues them (``agentmate/jobs/registry.py``)."""

from __future__ import annotations

import uuid
from typing import Any
from uuid import UUID

from agentmate import jobs
from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.errors import Conflict, NotFound
from agentmate.core.principal import Principal
from agentmate.portability import repository as repo
from agentmate.portability.archive import TABLES, Bounds, open_archive
from agentmate.portability.schemas import AccountExport, AccountImport
from agentmate.portability.settings import PortabilitySettings, get_portability_settings
from agentmate.portability.storage import get_store

EXPORT_KIND = "account_export"
IMPORT_KIND = "account_import"
REINDEX_KIND = "account_reindex"


def bounds(settings: PortabilitySettings) -> Bounds:
    return Bounds(
        settings.account_archive_max_members,
        settings.account_archive_max_member_bytes,
        settings.account_archive_max_line_bytes,
    )


def _fields(row: repo.TransferRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "status": row.status,
        "job_id": row.job_id,
        "format_version": row.format_version,
        "counts": row.counts,
        "error": row.error,
        "created_at": row.created_at,
        "finished_at": row.finished_at,
    }


def _export_view(row: repo.TransferRow, base_url: str) -> AccountExport:
    view = AccountExport(**_fields(row))
    if row.status == "succeeded":
        ttl = get_portability_settings().account_archive_url_ttl_s
        view.download_url = get_store().url(row.object_key, "GET", base_url)
        view.url_expires_in = ttl
    return view


def _import_view(row: repo.TransferRow, base_url: str) -> AccountImport:
    view = AccountImport(**_fields(row))
    if row.status == "awaiting_upload":
        view.upload_url = get_store().url(row.object_key, "PUT", base_url)
        view.url_expires_in = get_portability_settings().account_archive_url_ttl_s
    return view


def start_export(db: TenantTransactions, principal: Principal, base_url: str) -> AccountExport:
    """Queue an export of every covered table of the caller's account."""
    export_id = uuid.uuid4()
    account = principal.account_id
    with db.tenant(account) as conn:
        repo.insert(
            conn,
            "account_exports",
            account_id=account,
            transfer_id=export_id,
            object_key=f"exports/{account}/{export_id}.zip",
        )
        job = jobs.enqueue(conn, account_id=account, kind=EXPORT_KIND, subject_id=export_id)
        row = repo.set_job(conn, "account_exports", account_id=account, transfer_id=export_id, job=job)
    jobs.wake(job.id)
    return _export_view(row, base_url)


def _read(
    db: TenantTransactions, principal: Principal, kind: repo.Kind, transfer_id: UUID
) -> repo.TransferRow:
    with db.tenant(principal.account_id) as conn:
        row = repo.get(conn, kind, account_id=principal.account_id, transfer_id=transfer_id)
    if row is None:
        raise NotFound(("export" if kind == "account_exports" else "import") + " not found")
    return row


def get_export(db: TenantTransactions, principal: Principal, export_id: UUID, base_url: str) -> AccountExport:
    return _export_view(_read(db, principal, "account_exports", export_id), base_url)


def create_import(db: TenantTransactions, principal: Principal, base_url: str) -> AccountImport:
    """An import waiting for its archive: PUT it to ``upload_url``, then start it."""
    import_id = uuid.uuid4()
    account = principal.account_id
    with db.tenant(account) as conn:
        row = repo.insert(
            conn,
            "account_imports",
            account_id=account,
            transfer_id=import_id,
            object_key=f"imports/{account}/{import_id}.zip",
        )
    return _import_view(row, base_url)


def get_import(db: TenantTransactions, principal: Principal, import_id: UUID, base_url: str) -> AccountImport:
    return _import_view(_read(db, principal, "account_imports", import_id), base_url)


def nonempty_tables(conn: Conn, account_id: UUID) -> list[str]:
    return [t.name for t in TABLES if repo.count(conn, t, account_id=account_id)]


def require_empty(conn: Conn, account_id: UUID) -> None:
    """Refuse to load into an account with rows in any covered table (checked at start, and again by the job)."""
    full = nonempty_tables(conn, account_id)
    if full:
        raise Conflict(
            "an archive is imported into an empty account only; this one has rows in " + ", ".join(full)
        )


def start_import(
    db: TenantTransactions, principal: Principal, import_id: UUID, base_url: str
) -> AccountImport:
    """Check the uploaded archive's directory and manifest (a hostile one is a 400/413 here), require an empty
    account (409), and queue the load. Starting an import that is already started changes nothing."""
    account = principal.account_id
    row = _read(db, principal, "account_imports", import_id)
    if row.job_id is not None:
        return _import_view(row, base_url)
    settings = get_portability_settings()
    try:
        with get_store().open(row.object_key, settings.account_archive_max_bytes) as file:
            open_archive(file, bounds(settings)).close()
    except NotFound:
        raise Conflict("no archive was uploaded yet: PUT it to this import's upload_url first") from None
    with db.tenant(account) as conn:
        locked = repo.get(conn, "account_imports", account_id=account, transfer_id=import_id, lock=True)
        assert locked is not None
        if locked.job_id is not None:  # started meanwhile by a concurrent call
            return _import_view(locked, base_url)
        require_empty(conn, account)
        job = jobs.enqueue(conn, account_id=account, kind=IMPORT_KIND, subject_id=import_id)
        row = repo.set_job(conn, "account_imports", account_id=account, transfer_id=import_id, job=job)
    jobs.wake(job.id)
    return _import_view(row, base_url)
