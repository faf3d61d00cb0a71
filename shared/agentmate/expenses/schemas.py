"""Expense models. Money is a decimal with exactly two places: written as a JSON string ("12.50") or number,
never rounded (more than two places is a 400), and always serialised as a two-place decimal string."""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    StringConstraints,
    WithJsonSchema,
)

from agentmate.core.patch import PatchModel
from agentmate.core.text import Tags, no_nul
from agentmate.core.timestamps import rfc3339
from agentmate.expenses.currencies import CurrencyCode

CENT = Decimal("0.01")
MAX_AMOUNT = Decimal("9999999999.99")  # numeric(12,2)
MAX_AMOUNT_NUMBER = float(MAX_AMOUNT)
MAX_DESCRIPTION_LENGTH = 2000
MAX_SOURCE_LENGTH = 255
AMOUNT_MESSAGE = 'must be a decimal number such as "12.50"'


def blank_to_none(value: object) -> object:
    if isinstance(value, str):
        return value.strip() or None
    return value


def parse_amount(value: object) -> Decimal:
    """> 0, at most two decimal places, at most 9999999999.99; returned with exactly two places."""
    if isinstance(value, bool):
        raise ValueError(AMOUNT_MESSAGE)
    if isinstance(value, float):
        value = repr(value)  # the shortest text that round-trips: 12.5 -> "12.5", 0.1 + 0.2 -> 17 places
    if isinstance(value, int):
        value = Decimal(value)
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(AMOUNT_MESSAGE) from None
    if not isinstance(value, Decimal) or not value.is_finite():
        raise ValueError(AMOUNT_MESSAGE)
    if value <= 0:
        raise ValueError("must be greater than 0")
    if value > MAX_AMOUNT:
        raise ValueError(f"must be at most {MAX_AMOUNT}")
    cents = value.quantize(CENT)
    if cents != value:
        raise ValueError("must have at most 2 decimal places (amounts are never rounded)")
    return cents


def upper_code(value: object) -> object:
    return value.strip().upper() if isinstance(value, str) else value


_TZ_AFTER_SPACE = re.compile(r"^(.+[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?) (\d{2}:?\d{2})$")


def repair_timestamp(value: object) -> object:
    """Blank = absent; an unencoded ``+hh:mm`` offset that arrived as `` hh:mm`` in a query string is repaired."""
    if isinstance(value, str):
        value = value.strip()
        if not value:
            return None
        value = _TZ_AFTER_SPACE.sub(r"\1+\2", value)
    return rfc3339(value)


def money_text(value: Decimal) -> str:
    return f"{value:.2f}"


Amount = Annotated[
    Decimal,
    BeforeValidator(parse_amount),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^(?=.*[1-9])\d{1,10}(\.\d{1,2})?$", "examples": ["12.50"]},
                {"type": "number", "minimum": 0.01, "maximum": MAX_AMOUNT_NUMBER, "multipleOf": 0.01},
            ]
        }
    ),
]
Money = Annotated[Decimal, PlainSerializer(money_text, return_type=str)]
Currency = Annotated[CurrencyCode, BeforeValidator(upper_code)]
Description = Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION_LENGTH), AfterValidator(no_nul)]
ExpenseTags = Tags
Source = Annotated[
    Annotated[str, StringConstraints(max_length=MAX_SOURCE_LENGTH), AfterValidator(no_nul)] | None,
    BeforeValidator(blank_to_none),
]
# RFC 3339 with an offset (a timestamp without one is ambiguous and rejected).
Timestamp = Annotated[AwareDatetime, BeforeValidator(repair_timestamp)]

_AMOUNT_DOC = (
    'Decimal string such as "12.50" (a JSON number is accepted); > 0, at most 2 decimal places, never rounded'
)
_CURRENCY_DOC = "Active ISO 4217 code; lowercase is accepted and uppercased"
_TAGS_DOC = "Trimmed and lowercased on write; duplicates dropped"
_SOURCE_DOC = "Agent or skill label (≤255, trimmed); blank or null = none"
_HAPPENED_DOC = "RFC 3339 timestamp with offset; defaults to now"


class ExpenseCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amount: Amount = Field(description=_AMOUNT_DOC)
    currency: Currency = Field(description=_CURRENCY_DOC)
    description: Description = Field(default="", description="At most 2000 characters")
    tags: ExpenseTags = Field(default_factory=list, description=_TAGS_DOC)
    source: Source = Field(default=None, description=_SOURCE_DOC)
    happened_at: Timestamp | None = Field(default=None, description=_HAPPENED_DOC)


class ExpenseUpdate(PatchModel):
    """Only the fields sent are changed; send source null to clear it. Other fields may not be null."""

    nullable = frozenset({"source"})

    model_config = ConfigDict(extra="forbid")
    amount: Amount | None = Field(default=None, description=_AMOUNT_DOC)
    currency: Currency | None = Field(default=None, description=_CURRENCY_DOC)
    description: Description | None = Field(default=None, description="At most 2000 characters")
    tags: ExpenseTags | None = Field(default=None, description=_TAGS_DOC + "; replaces the whole list")
    source: Source = Field(default=None, description=_SOURCE_DOC)
    happened_at: Timestamp | None = Field(default=None, description="RFC 3339 timestamp with offset")


class Expense(BaseModel):
    id: UUID
    amount: Money = Field(description='Two-place decimal string, e.g. "12.50"')
    currency: str
    description: str
    tags: list[str]
    source: str | None
    happened_at: datetime
    created_at: datetime
    updated_at: datetime


class TagTotal(BaseModel):
    tag: str
    total: Money
    count: int


class CurrencyTotal(BaseModel):
    currency: str
    total: Money = Field(description="Sum of this currency's matching expenses (two-place decimal string)")
    count: int
    by_tag: list[TagTotal] = Field(
        description="Per tag within this currency, largest first; an expense with several tags counts under each, "
        "untagged expenses only in the currency total"
    )


class ExpenseSummary(BaseModel):
    """Totals per currency: amounts in different currencies are never added together."""

    currencies: list[CurrencyTotal]
    count: int = Field(description="Matching expenses across all currencies")
