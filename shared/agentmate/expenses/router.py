from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Query, Response
from pydantic import AwareDatetime, BeforeValidator, WithJsonSchema

from agentmate.api.deps import DbDep, ExpensesRead, ExpensesWrite, IdempotencyKey, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.core.pagination import Page
from agentmate.core.text import tag_filter
from agentmate.expenses import service
from agentmate.expenses.schemas import Expense, ExpenseCreate, ExpenseSummary, ExpenseUpdate, repair_timestamp

router = Router(prefix="/api/expenses", tags=["expenses"], responses=PROBLEM_RESPONSES)

# Blank = no filter; an offset whose "+" arrived unencoded (as a space) is repaired.
TimeFilter = Annotated[
    AwareDatetime | None,
    BeforeValidator(repair_timestamp),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date-time"},
                {"type": "string", "pattern": r"^\s*$"},
                {"type": "null"},
            ]
        }
    ),
]
Tag = Annotated[str | None, Query(description="Exact tag (normalised)")]
Tags = Annotated[str | None, Query(description="Comma-separated tags; all must match")]
Start = Annotated[TimeFilter, Query(description="RFC 3339 with offset; happened_at >= start (inclusive)")]
End = Annotated[TimeFilter, Query(description="RFC 3339 with offset; happened_at < end (exclusive)")]
Q = Annotated[str | None, Query(description="Case-insensitive substring of the description")]
Source = Annotated[str | None, Query(description="Exact source label")]
Currency = Annotated[str | None, Query(description="ISO 4217 code (case-insensitive)")]


@router.post("", status_code=201, response_model=Expense)
def create_expense(
    body: ExpenseCreate, principal: ExpensesWrite, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Record an expense (amount as a decimal string like "12.50", ISO 4217 currency). Send an `Idempotency-Key` header to make retries safe."""
    result = service.create(db, principal, body, idempotency_key)
    return created(result)


@router.get("", response_model=Page[Expense])
def list_expenses(
    principal: ExpensesRead,
    db: DbDep,
    page: PageDep,
    tag: Tag = None,
    tags: Tags = None,
    q: Q = None,
    source: Source = None,
    currency: Currency = None,
    start: Start = None,
    end: End = None,
) -> Page[Expense]:
    """List expenses, most recent happened_at first. Cross-field rule: `start` after `end` is a 400 naming both
    fields."""
    return service.search(
        db,
        principal,
        page,
        tags=tag_filter(tag, tags),
        q=q,
        source=source,
        currency=currency,
        start=start,
        end=end,
    )


@router.get("/summary", response_model=ExpenseSummary)
def summarise_expenses(
    principal: ExpensesRead,
    db: DbDep,
    tag: Tag = None,
    tags: Tags = None,
    q: Q = None,
    source: Source = None,
    currency: Currency = None,
    start: Start = None,
    end: End = None,
) -> ExpenseSummary:
    """Totals per currency (never summed across currencies), each with per-tag totals, over the filtered expenses.
    Cross-field rule: `start` after `end` is a 400 naming both fields."""
    return service.summary(
        db, principal, tags=tag_filter(tag, tags), q=q, source=source, currency=currency, start=start, end=end
    )


@router.get("/{expense_id}", response_model=Expense)
def get_expense(expense_id: UUID, principal: ExpensesRead, db: DbDep) -> Expense:
    """Get one expense."""
    return service.get(db, principal, expense_id)


@router.patch("/{expense_id}", response_model=Expense)
def update_expense(expense_id: UUID, body: ExpenseUpdate, principal: ExpensesWrite, db: DbDep) -> Expense:
    """Change the fields sent (amount, currency, description, tags, source, happened_at); others stay as they are."""
    return service.update(db, principal, expense_id, body)


@router.delete("/{expense_id}", status_code=204, response_class=Response)
def delete_expense(expense_id: UUID, principal: ExpensesWrite, db: DbDep) -> Response:
    """Delete an expense; 404 if it does not exist."""
    service.delete(db, principal, expense_id)
    return Response(status_code=204)
