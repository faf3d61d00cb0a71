from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, WithJsonSchema

from agentmate.core.patch import PatchModel
from agentmate.core.schema_rules import NON_BLANK_TEXT
from agentmate.core.text import Content, Tags, no_nul

MAX_TITLE_LENGTH = 500


Title = Annotated[
    str,
    StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_LENGTH),
    WithJsonSchema(
        {"type": "string", "minLength": 1, "maxLength": MAX_TITLE_LENGTH, "pattern": NON_BLANK_TEXT}
    ),
    AfterValidator(no_nul),
]
NoteTags = Tags

_CONTENT_DOC = "Text or Markdown, stored verbatim; at most 1 MiB (1048576 bytes of UTF-8)"
_TAGS_DOC = "Trimmed and lowercased on write; duplicates dropped"


class NoteCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Title = Field(description="1..500 characters, trimmed")
    content: Content = Field(default="", description=_CONTENT_DOC)
    tags: NoteTags = Field(default_factory=list, description=_TAGS_DOC)


class NoteUpdate(PatchModel):
    """Only the fields sent are changed; none of them may be null."""

    model_config = ConfigDict(extra="forbid")
    title: Title | None = Field(default=None, description="1..500 characters, trimmed")
    content: Content | None = Field(default=None, description=_CONTENT_DOC + "; replaces the whole content")
    tags: NoteTags | None = Field(default=None, description=_TAGS_DOC + "; replaces the whole list")


class NoteAppend(BaseModel):
    """Text appended verbatim to the note's content: no separator is added, so send your own newline."""

    model_config = ConfigDict(extra="forbid")
    content: Annotated[Content, Field(min_length=1)] = Field(
        description="Appended exactly as sent (no separator); the resulting content is at most 1 MiB"
    )


class Note(BaseModel):
    id: UUID
    title: str
    content: str
    tags: list[str]
    created_at: datetime
    updated_at: datetime
