"""Operator endpoints (users.role = 'admin')."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field


def _blank_to_none(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        return None
    return value.strip() if isinstance(value, str) else value


MAX_BATCH_SIZE = 1000
DEFAULT_BATCH_SIZE = 200


class LexicalRebuildRequest(BaseModel):
    """Which rows to re-project; everything when both filters are omitted. The same values may be sent as query
    parameters instead."""

    model_config = ConfigDict(extra="forbid")
    account_id: Annotated[UUID | None, BeforeValidator(_blank_to_none)] = Field(
        default=None, description="Only this account's rows"
    )
    namespace: Annotated[str | None, BeforeValidator(_blank_to_none)] = Field(
        default=None, max_length=64, description="Only this namespace, e.g. memory"
    )
    batch_size: int | None = Field(default=None, ge=1, le=MAX_BATCH_SIZE, description="Rows per transaction")


class LexicalRebuildResult(BaseModel):
    updated: int = Field(description="Rows whose lexical projection changed")
    scanned: int = Field(description="Rows examined")
    batches: int
    account_id: UUID | None
    namespace: str | None
    batch_size: int


class AccountState(BaseModel):
    account_id: UUID
    suspended_at: datetime | None = Field(
        description="When the account was suspended; null when active. While set, the account's JWTs and API keys "
        "are refused (401) and its users cannot log in"
    )
