"""Account export and import (issue 25 §4; the format is docs/account-archive.md). No MCP module: an archive is
moved by HTTP links, not through a tool call.

Scope rule: an export is everything, and an import writes everything, so every route here needs every domain's
``:rw`` scope, which the account's JWT and a full-access (empty-scope) API key hold.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Request, Response, Security
from fastapi.responses import FileResponse

from agentmate.api.deps import DbDep, authorised
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.routing import max_body
from agentmate.core.errors import NotFound, TooLarge
from agentmate.core.principal import Principal
from agentmate.core.scopes import DOMAINS
from agentmate.portability import service
from agentmate.portability.schemas import AccountExport, AccountImport
from agentmate.portability.settings import get_portability_settings
from agentmate.portability.storage import FolderStore, get_store

WHOLE_ACCOUNT_SCOPES = [f"{d}:rw" for d in DOMAINS]
WholeAccount = Annotated[Principal, Security(authorised, scopes=WHOLE_ACCOUNT_SCOPES)]

router = Router(prefix="/api/account", tags=["account"], responses=PROBLEM_RESPONSES)


def _base(request: Request) -> str:
    return str(request.base_url)


@router.post("/exports", status_code=202, response_model=AccountExport)
def start_export(principal: WholeAccount, db: DbDep, request: Request) -> AccountExport:
    """Queue an export of the whole account (every domain, never credentials); poll it for its download_url."""
    return service.start_export(db, principal, _base(request))


@router.get("/exports/{export_id}", response_model=AccountExport)
def get_export(export_id: UUID, principal: WholeAccount, db: DbDep, request: Request) -> AccountExport:
    """An export's status; when succeeded, a short-lived download_url of the archive."""
    return service.get_export(db, principal, export_id, _base(request))


@router.post("/imports", status_code=201, response_model=AccountImport)
def create_import(principal: WholeAccount, db: DbDep, request: Request) -> AccountImport:
    """Open an import: PUT the archive to its short-lived upload_url, then start it."""
    return service.create_import(db, principal, _base(request))


@router.get("/imports/{import_id}", response_model=AccountImport)
def get_import(import_id: UUID, principal: WholeAccount, db: DbDep, request: Request) -> AccountImport:
    """An import's status and the rows it loaded per table."""
    return service.get_import(db, principal, import_id, _base(request))


@router.post("/imports/{import_id}/start", status_code=202, response_model=AccountImport)
def start_import(import_id: UUID, principal: WholeAccount, db: DbDep, request: Request) -> AccountImport:
    """Load the uploaded archive into this account, which must be empty (409 otherwise); all or nothing, ids
    remapped, memories re-indexed afterwards. Starting it again changes nothing."""
    return service.start_import(db, principal, import_id, _base(request))


def _folder() -> FolderStore:
    store = get_store()
    if not isinstance(store, FolderStore):  # S3 serves its own presigned links
        raise NotFound("archive link not found or expired")
    return store


@router.get(
    "/archives/{token}", response_class=FileResponse, responses={200: {"content": {"application/zip": {}}}}
)
def download_archive(token: str) -> Response:
    """The local runtime's download link (the token is the credential: signed, expiring)."""
    store = _folder()
    key = store.resolve(token, "GET")
    path = store.root / key
    if not path.is_file():
        raise NotFound("archive link not found or expired")
    return FileResponse(path, media_type="application/zip", filename=path.name)


@router.put(
    "/archives/{token}",
    status_code=204,
    openapi_extra=max_body(get_portability_settings().account_archive_max_bytes),
)
async def upload_archive(token: str, request: Request) -> Response:
    """The local runtime's upload link (the token is the credential: signed, expiring); the body is the archive,
    spooled to a temporary file as it arrives (never held whole in memory)."""
    import tempfile

    store = _folder()
    key = store.resolve(token, "PUT")
    limit = get_portability_settings().account_archive_max_bytes
    with tempfile.TemporaryFile() as spool:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise TooLarge(f"the archive is larger than {limit} bytes")
            spool.write(chunk)
        spool.seek(0)
        store.put(key, spool)
    return Response(status_code=204)
