"""Report use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import records
from agentmate.core.db import Database
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.reports import repository as repo
from agentmate.reports.schemas import (
    Report,
    ReportCreate,
    ReportSource,
    ReportSummary,
    ReportUpdate,
)

NOT_NULL = ("title", "content", "format", "tags")


def create(
    db: Database, principal: Principal, body: ReportCreate, idempotency_key: str | None = None
) -> Outcome:
    """Create a report; ``source_key_id`` is the caller's API key (null for a JWT session)."""
    return records.create(
        db,
        principal,
        body,
        route="reports.create",
        model=Report,
        insert=repo.insert,
        idempotency_key=idempotency_key,
    )


def get(db: Database, principal: Principal, report_id: UUID) -> Report:
    """One report by id; 404 if it does not exist in this account."""
    return records.one(
        db,
        principal,
        "report",
        Report,
        lambda conn, account_id: repo.get(conn, account_id=account_id, report_id=report_id),
    )


def update(db: Database, principal: Principal, report_id: UUID, body: ReportUpdate) -> Report:
    """Change the fields sent; the others stay as they are."""
    changes = records.changes(body, NOT_NULL)
    return records.one(
        db,
        principal,
        "report",
        Report,
        lambda conn, account_id: repo.update(
            conn, account_id=account_id, report_id=report_id, changes=changes
        ),
    )


def delete(db: Database, principal: Principal, report_id: UUID) -> None:
    records.remove(
        db,
        principal,
        "report",
        lambda conn, account_id: repo.delete(conn, account_id=account_id, report_id=report_id),
    )


def search(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    tags: list[str] | None = None,
    source: str | None = None,
    q: str | None = None,
) -> Page[ReportSummary]:
    """Report summaries (without content), newest first. ``tags`` all must match (normalised here);
    ``source`` is an exact label; ``q`` is a case-insensitive substring of title or content. Blank = no filter."""
    wanted, given = records.filters(tags, source=source, q=q)
    source = given["source"]
    text = given["q"]
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn,
            account_id=principal.account_id,
            tags=wanted,
            source=source,
            q=text,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[ReportSummary](
        items=[ReportSummary(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def list_sources(db: Database, principal: Principal, page: PageParams) -> Page[ReportSource]:
    """The account's report sources with counts, most used first."""
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.sources(
            conn, account_id=principal.account_id, limit=page.limit, offset=page.offset
        )
    return Page[ReportSource](
        items=[ReportSource(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )
