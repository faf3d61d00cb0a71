from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    WithJsonSchema,
)

from agentmate.core.patch import PatchModel
from agentmate.core.schema_rules import NON_BLANK_TEXT
from agentmate.core.text import Content, Tags, no_nul

ReportFormat = Literal["md", "html"]
FORMATS: tuple[str, ...] = ReportFormat.__args__  # type: ignore[attr-defined]
MAX_TITLE_LENGTH = 500
MAX_SOURCE_LENGTH = 255


def blank_to_none(value: object) -> object:
    if isinstance(value, str):
        return value.strip() or None
    return value


Title = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_LENGTH),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_LENGTH, "pattern": NON_BLANK_TEXT}
    ),
    AfterValidator(no_nul),
]
ReportTags = Tags
# A free-form label of the agent or skill that wrote the report; blank means "none" (stored as null).
Source = Annotated[
    Annotated[str, StringConstraints(max_length=MAX_SOURCE_LENGTH), AfterValidator(no_nul)] | None,
    BeforeValidator(blank_to_none),
]

_CONTENT_DOC = "The report body in `format`, stored verbatim; at most 1 MiB (1048576 bytes of UTF-8)"
_TAGS_DOC = "Trimmed and lowercased on write; duplicates dropped"
_SOURCE_DOC = "Agent or skill label (≤255, trimmed); blank or null = none"


class ReportCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Title = Field(description="1..500 characters, trimmed")
    content: Content = Field(default="", description=_CONTENT_DOC)
    format: ReportFormat = Field(default="md", description="How `content` is written")
    tags: ReportTags = Field(default_factory=list, description=_TAGS_DOC)
    source: Source = Field(default=None, description=_SOURCE_DOC)


class ReportUpdate(PatchModel):
    """Only the fields sent are changed; send source null to clear it. Other fields may not be null."""

    nullable = frozenset({"source"})

    model_config = ConfigDict(extra="forbid")
    title: Title | None = Field(default=None, description="1..500 characters, trimmed")
    content: Content | None = Field(default=None, description=_CONTENT_DOC)
    format: ReportFormat | None = None
    tags: ReportTags | None = Field(default=None, description=_TAGS_DOC + "; replaces the whole list")
    source: Source = Field(default=None, description=_SOURCE_DOC)


class ReportSummary(BaseModel):
    """A report without its content, as listed."""

    id: UUID
    title: str
    format: ReportFormat
    tags: list[str]
    source: str | None
    source_key_id: UUID | None = Field(
        description="The API key that created the report (null for a JWT session)"
    )
    created_at: datetime
    updated_at: datetime


class Report(ReportSummary):
    content: str


class ReportSource(BaseModel):
    source: str
    count: int
