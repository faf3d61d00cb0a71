from __future__ import annotations

from datetime import datetime
from typing import Annotated
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from agentmate.core.text import Tags

MAX_TITLE_LENGTH = 500
MAX_CONTENT_BYTES = 1_048_576  # 1 MiB of UTF-8; enforced again by notes_content_size_check


def no_nul(value: str) -> str:
    """Postgres text cannot hold U+0000: reject it as a field error instead of failing the insert."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (U+0000) characters")
    return value


def no_nul_tags(tags: list[str]) -> list[str]:
    for tag in tags:
        no_nul(tag)
    return tags


def within_content_limit(value: str) -> str:
    if len(value.encode("utf-8", "surrogatepass")) > MAX_CONTENT_BYTES:
        raise ValueError(f"must be at most {MAX_CONTENT_BYTES} bytes (UTF-8)")
    return value


Title = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_LENGTH), AfterValidator(no_nul)
]
# Content is stored verbatim (never trimmed): appends rely on the caller's own whitespace.
Content = Annotated[str, AfterValidator(no_nul), AfterValidator(within_content_limit)]
NoteTags = Annotated[Tags, AfterValidator(no_nul_tags)]

_CONTENT_DOC = "Text or Markdown, stored verbatim; at most 1 MiB (1048576 bytes of UTF-8)"
_TAGS_DOC = "Trimmed and lowercased on write; duplicates dropped"


class NoteCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: Title = Field(description="1..500 characters, trimmed")
    content: Content = Field(default="", description=_CONTENT_DOC)
    tags: NoteTags = Field(default_factory=list, description=_TAGS_DOC)


class NoteUpdate(BaseModel):
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
