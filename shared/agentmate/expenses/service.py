"""Expense use cases. Each runs in one tenant transaction; REST routes and MCP tools both call these."""

from __future__ import annotations

import re
from datetime import datetime

from agentmate.core import records
from agentmate.core.db import TenantTransactions
from agentmate.core.errors import ErrorCollector
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.text import blank_to_none
from agentmate.expenses import repository as repo
from agentmate.expenses.repository import Filters
from agentmate.expenses.schemas import (
    CurrencyTotal,
    Expense,
    ExpenseSummary,
    TagTotal,
)

_CODE = re.compile(r"^[A-Z]{3}$")


# create / get / update / delete: the shared record use cases (agentmate.core.records).
_records = records.RecordService(resource="expense", model=Expense, repo=repo, id_field="expense_id")
create = _records.create
get = _records.get
update = _records.update
delete = _records.delete
tags = _records.tags  # the tag roster: GET /api/tags?module=expenses, the expenses_tags tool


def _filters(
    *,
    tags: list[str] | None,
    q: str | None,
    source: str | None,
    currency: str | None,
    start: datetime | None,
    end: datetime | None,
) -> Filters:
    """Normalise and check filter values, reporting every bad one at once. Blank values mean "no filter"."""
    wanted, given = records.filters(tags, q=q, source=source)
    text, source = given["q"], given["source"]
    errors = ErrorCollector()
    code = blank_to_none(currency)
    if code is not None:
        code = code.upper()
        if not _CODE.match(code):
            errors.add("currency", "must be a 3-letter ISO 4217 code")
    for name, value in (("start", start), ("end", end)):
        if value is not None and value.tzinfo is None:
            errors.add(name, "must be an RFC 3339 timestamp with an offset")
    if not errors.errors and start is not None and end is not None and start > end:
        errors.add("start", "must not be after end")
        errors.add("end", "must not be before start")
    errors.raise_if_any()
    return Filters(tags=wanted, q=text, source=source, currency=code, start=start, end=end)


def search(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    tags: list[str] | None = None,
    q: str | None = None,
    source: str | None = None,
    currency: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Page[Expense]:
    """Expenses, most recent ``happened_at`` first. ``tags`` all must match (normalised here); ``q`` is a
    case-insensitive substring of the description; ``start`` inclusive, ``end`` exclusive, on ``happened_at``."""
    filters = _filters(tags=tags, q=q, source=source, currency=currency, start=start, end=end)
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[Expense](
        items=[Expense(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def summary(
    db: TenantTransactions,
    principal: Principal,
    *,
    tags: list[str] | None = None,
    q: str | None = None,
    source: str | None = None,
    currency: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> ExpenseSummary:
    """Totals and counts per currency, each with per-tag totals; different currencies are never summed."""
    filters = _filters(tags=tags, q=q, source=source, currency=currency, start=start, end=end)
    with db.tenant(principal.account_id) as conn:
        rows = repo.summary(conn, account_id=principal.account_id, filters=filters)
    currencies: list[CurrencyTotal] = []
    for row in rows:
        if row["level"] == 0:
            currencies.append(
                CurrencyTotal(currency=row["currency"], total=row["total"], count=row["count"], by_tag=[])
            )
        else:
            currencies[-1].by_tag.append(TagTotal(tag=row["tag"], total=row["total"], count=row["count"]))
    return ExpenseSummary(currencies=currencies, count=sum(c.count for c in currencies))
