"""Expense tools (``/mcp/expenses``): thin calls into ``agentmate.expenses.service``, scopes as REST."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from pydantic import AwareDatetime, Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.core.records import TagCount
from agentmate.expenses import schemas as s
from agentmate.expenses import service
from agentmate.expenses.schemas import Expense, ExpenseCreate, ExpenseSummary, ExpenseUpdate
from agentmate.mcp.context import db, principal
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import (
    ClearSource,
    Deleted,
    IdempotencyKey,
    Limit,
    Offset,
    Tag,
    TagList,
    apply_clear_source,
    given,
    with_tag,
)

tools = ToolSet(
    "expenses",
    instructions=(
        "Expenses of the account that owns the API key. Reading needs expenses:r, writing expenses:rw. amount "
        'is a decimal string such as "12.50" (> 0, at most 2 decimal places, never rounded); currency is an '
        "active ISO 4217 code (e.g. USD, EUR, CNY); happened_at is RFC 3339 with an offset. Totals are per "
        "currency and never summed across currencies."
    ),
)

ExpenseId = Annotated[
    UUID, Field(description="The expense's id (UUID), as returned by expense_create or expense_list")
]
Amount = Annotated[
    s.Amount,
    Field(
        description='Decimal string such as "12.50" (a number is accepted); > 0, at '
        "most 2 decimal places, never rounded"
    ),
]
Currency = Annotated[
    s.Currency, Field(description="Active ISO 4217 code such as USD, EUR, CNY, JPY (lowercase is uppercased)")
]
Description = Annotated[s.Description, Field(description="What it was for, at most 2000 characters")]
Tags = Annotated[
    s.ExpenseTags, Field(description="Tags; trimmed and lowercased on write, duplicates dropped")
]
Source = Annotated[s.Source, Field(description="Label of the agent or skill recording it (≤255 characters)")]
HappenedAt = Annotated[
    s.Timestamp | None, Field(description="RFC 3339 with offset, e.g. 2026-03-01T12:30:00+08:00")
]
Start = Annotated[
    AwareDatetime | None, Field(description="RFC 3339 with offset; happened_at >= start (inclusive)")
]
End = Annotated[
    AwareDatetime | None, Field(description="RFC 3339 with offset; happened_at < end (exclusive)")
]
Q = Annotated[str | None, Field(description="Case-insensitive substring of the description")]
SourceFilter = Annotated[str | None, Field(description="Exact source label")]
CurrencyFilter = Annotated[str | None, Field(description="Only this ISO 4217 code (case-insensitive)")]


@tools.tool("expenses:rw", rest="POST /api/expenses", title="Record an expense")
def expense_create(
    amount: Amount,
    currency: Currency,
    description: Description = "",
    tags: Tags | None = None,
    source: Source = None,
    happened_at: HappenedAt = None,
    idempotency_key: IdempotencyKey = None,
) -> Expense:
    """Record an expense. amount: decimal string like "12.50" (> 0, ≤ 2 decimals, never rounded); currency:
    ISO 4217 code (USD, EUR, CNY, …); happened_at: RFC 3339 with offset (default now); tags are trimmed and
    lowercased. Pass idempotency_key so a retry returns the original expense. Requires expenses:rw."""
    body = ExpenseCreate(
        amount=amount,
        currency=currency,
        description=description,
        tags=tags or [],
        source=source,
        happened_at=happened_at,
    )
    return service.create(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("expenses:r", rest="GET /api/expenses/{expense_id}", title="Get an expense")
def expense_get(id: ExpenseId) -> Expense:
    """Get one expense (amount as a two-place decimal string). Requires expenses:r."""
    return service.get(db(), principal(), id)


@tools.tool("expenses:r", rest="GET /api/expenses", title="List expenses")
def expense_list(
    tags: TagList = None,
    tag: Tag = None,
    q: Q = None,
    source: SourceFilter = None,
    currency: CurrencyFilter = None,
    start: Start = None,
    end: End = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[Expense]:
    """List expenses, most recent happened_at first, optionally filtered by tags (a list, all must match; tag for one), text q
    (description), exact source, currency, and a time window start (inclusive) .. end (exclusive), both
    RFC 3339 with offset. Returns {items, total, limit, offset}. Requires expenses:r."""
    return service.search(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        tags=with_tag(tag, tags),
        q=q,
        source=source,
        currency=currency,
        start=start,
        end=end,
    )


@tools.tool("expenses:r", rest="GET /api/expenses/summary", title="Summarise expenses")
def expense_summary(
    tags: TagList = None,
    q: Q = None,
    source: SourceFilter = None,
    currency: CurrencyFilter = None,
    start: Start = None,
    end: End = None,
) -> ExpenseSummary:
    """Totals and counts per currency (never summed across currencies), each with per-tag totals, over the
    expenses matching the same filters as expense_list. Returns {currencies: [{currency, total, count,
    by_tag}], count}. Requires expenses:r."""
    return service.summary(
        db(), principal(), tags=tags, q=q, source=source, currency=currency, start=start, end=end
    )


@tools.tool(
    "expenses:rw",
    rest="PATCH /api/expenses/{expense_id}",
    title="Update an expense",
    idempotent=True,
    patch=ExpenseUpdate,
)
def expense_update(
    id: ExpenseId,
    amount: Amount | None = None,
    currency: Currency | None = None,
    description: Description | None = None,
    tags: Annotated[
        s.ExpenseTags | None, Field(description="Replaces all tags (trimmed, lowercased)")
    ] = None,
    source: Source = None,
    clear_source: ClearSource = False,
    happened_at: HappenedAt = None,
) -> Expense:
    """Change the fields given (amount, currency, description, tags, source, happened_at); the others stay
    as they are. clear_source=true removes the source label. Returns the expense. Requires expenses:rw."""
    changes = apply_clear_source(
        given(
            amount=amount,
            currency=currency,
            description=description,
            tags=tags,
            source=source,
            happened_at=happened_at,
        ),
        clear_source,
    )
    return service.update(db(), principal(), id, ExpenseUpdate.model_validate(changes))


@tools.tool(
    "expenses:rw",
    rest="DELETE /api/expenses/{expense_id}",
    title="Delete an expense",
    destructive=True,
    idempotent=True,
)
def expense_delete(id: ExpenseId) -> Deleted:
    """Delete an expense permanently. A second delete of the same id reports "expense not found". Requires
    expenses:rw."""
    service.delete(db(), principal(), id)
    return Deleted(id=id)


@tools.tool("expenses:r", rest="GET /api/tags?module=expenses", title="List expense tags")
def expenses_tags(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[TagCount]:
    """Which tags the account's expenses carry, with how many expenses carry each, most used first, then by tag: ask
    before filtering expense_list by a tag. Returns {items: [{tag, count}], total, limit, offset}; page with limit
    (1..100) and offset. Requires expenses:r."""
    return service.tags(db(), principal(), PageParams(limit=limit, offset=offset))
