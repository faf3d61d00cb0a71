"""Report use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.auth.principal import Principal
from agentmate.core import idempotency
from agentmate.core.db import Database
from agentmate.core.errors import ErrorCollector, NotFound
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.core.text import blank_to_none, normalise_tag
from agentmate.reports import repository as repo
from agentmate.reports.schemas import (
    NUL_MESSAGE,
    Report,
    ReportCreate,
    ReportSource,
    ReportSummary,
    ReportUpdate,
)

NOT_NULL = ("title", "content", "format", "tags")


def create(db: Database, principal: Principal, body: ReportCreate, idempotency_key: str | None = None) -> Outcome:
    """Create a report; ``source_key_id`` is the caller's API key (null for a JWT session)."""
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:

        def insert() -> dict[str, Any]:
            row = repo.insert(conn, account_id=principal.account_id, user_id=principal.user_id,
                              key_id=principal.key_id, data=data)
            return Report(**row).model_dump(mode="json")

        return idempotency.run_once(conn, account_id=principal.account_id, route="reports.create",
                                    key=idempotency_key, request=body.model_dump(mode="json"), create=insert)


def get(db: Database, principal: Principal, report_id: UUID) -> Report:
    with db.tenant(principal.account_id) as conn:
        row = repo.get(conn, account_id=principal.account_id, report_id=report_id)
    if row is None:
        raise NotFound("report")
    return Report(**row)


def update(db: Database, principal: Principal, report_id: UUID, body: ReportUpdate) -> Report:
    changes = body.model_dump(exclude_unset=True)
    errors = ErrorCollector()
    for name in NOT_NULL:
        if name in changes and changes[name] is None:
            errors.add(name, "may not be null")
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        row = repo.update(conn, account_id=principal.account_id, report_id=report_id, changes=changes)
    if row is None:
        raise NotFound("report")
    return Report(**row)


def delete(db: Database, principal: Principal, report_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete(conn, account_id=principal.account_id, report_id=report_id):
            raise NotFound("report")


def search(
    db: Database, principal: Principal, page: PageParams, *, tags: list[str] | None = None,
    source: str | None = None, q: str | None = None,
) -> Page[ReportSummary]:
    """Report summaries (without content), newest first. ``tags`` all must match (normalised here);
    ``source`` is an exact label; ``q`` is a case-insensitive substring of title or content. Blank = no filter."""
    errors = ErrorCollector()
    wanted = list(dict.fromkeys(t for t in (normalise_tag(x) for x in tags or []) if t))
    if any("\x00" in t for t in wanted):
        errors.add("tags", NUL_MESSAGE)
    source = blank_to_none(source)
    if source and "\x00" in source:
        errors.add("source", NUL_MESSAGE)
    text = blank_to_none(q)
    if text and "\x00" in text:
        errors.add("q", NUL_MESSAGE)
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(conn, account_id=principal.account_id, tags=wanted, source=source, q=text,
                                  limit=page.limit, offset=page.offset)
    return Page[ReportSummary](items=[ReportSummary(**r) for r in rows], total=total, limit=page.limit,
                               offset=page.offset)


def list_sources(db: Database, principal: Principal, page: PageParams) -> Page[ReportSource]:
    """The account's report sources with counts, most used first."""
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.sources(conn, account_id=principal.account_id, limit=page.limit, offset=page.offset)
    return Page[ReportSource](items=[ReportSource(**r) for r in rows], total=total, limit=page.limit,
                              offset=page.offset)
