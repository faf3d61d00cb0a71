"""Report use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from agentmate.core import records
from agentmate.core.db import TenantTransactions
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.reports import repository as repo
from agentmate.reports.schemas import (
    Report,
    ReportSource,
    ReportSummary,
)

# create / get / update / delete: the shared record use cases (agentmate.core.records).
_records = records.RecordService(resource="report", model=Report, repo=repo, id_field="report_id")
create = _records.create
get = _records.get
update = _records.update
delete = _records.delete
tags = _records.tags  # the tag roster: GET /api/tags?module=reports, the reports_tags tool


def search(
    db: TenantTransactions,
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


def list_sources(db: TenantTransactions, principal: Principal, page: PageParams) -> Page[ReportSource]:
    """The account's report sources with counts, most used first."""
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.sources(
            conn, account_id=principal.account_id, limit=page.limit, offset=page.offset
        )
    return Page[ReportSource](
        items=[ReportSource(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )
