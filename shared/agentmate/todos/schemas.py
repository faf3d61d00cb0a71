from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from agentmate.core.inputs import Timestamp
from agentmate.core.patch import PatchModel
from agentmate.core.schema_rules import NON_BLANK_TEXT
from agentmate.core.text import Tags, no_nul

Text = Annotated[str, AfterValidator(no_nul)]

TodoStatus = Literal["pending", "in_progress", "done", "cancelled"]
TodoPriority = Literal["low", "medium", "high"]
STATUSES: tuple[str, ...] = TodoStatus.__args__  # type: ignore[attr-defined]
PRIORITIES: tuple[str, ...] = TodoPriority.__args__  # type: ignore[attr-defined]


class TodoCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    title: Text = Field(min_length=1, max_length=500, json_schema_extra={"pattern": NON_BLANK_TEXT})
    description: Text = Field(default="", max_length=20000)
    status: TodoStatus = "pending"
    priority: TodoPriority = "medium"
    due_date: Timestamp | None = Field(default=None, description="RFC 3339 timestamp with offset")
    tags: Tags = Field(default_factory=list, description="Trimmed and lowercased on write")


class TodoUpdate(PatchModel):
    """Only the fields sent are changed; send due_date null to clear it. Other fields may not be null."""

    nullable = frozenset({"due_date"})

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)
    title: Text | None = Field(
        default=None, min_length=1, max_length=500, json_schema_extra={"pattern": NON_BLANK_TEXT}
    )
    description: Text | None = Field(default=None, max_length=20000)
    status: TodoStatus | None = None
    priority: TodoPriority | None = None
    due_date: Timestamp | None = None
    tags: Tags | None = None


class Todo(BaseModel):
    id: UUID
    title: str
    description: str
    status: TodoStatus
    priority: TodoPriority
    due_date: datetime | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime
