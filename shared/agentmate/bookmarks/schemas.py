from __future__ import annotations

from datetime import datetime
from typing import Annotated
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints

from agentmate.core.inputs import Bool
from agentmate.core.patch import PatchModel
from agentmate.core.text import Content, Tags, no_nul

MAX_URL_LENGTH = 2048
MAX_TITLE_LENGTH = 500
MAX_SUMMARY_LENGTH = 20000
MAX_SOURCE_LENGTH = 255
URL_MESSAGE = "must be an absolute http:// or https:// URL with a host, e.g. https://example.com/page"


def blank_to_none(value: object) -> object:
    if isinstance(value, str):
        return value.strip() or None
    return value


def check_url(value: object) -> object:
    """An absolute http(s) URL with a host, stored as sent (trimmed, not otherwise rewritten)."""
    if not isinstance(value, str):
        return value  # pydantic reports the type error
    value = value.strip()
    if len(value) > MAX_URL_LENGTH:
        raise ValueError(f"must be at most {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise ValueError("must not contain whitespace or control characters (percent-encode them)")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 — raises ValueError for a non-numeric or out-of-range port
    except ValueError:
        raise ValueError(URL_MESSAGE) from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ValueError(URL_MESSAGE)
    return value


Url = Annotated[str, BeforeValidator(check_url)]
Title = Annotated[
    str, StringConstraints(strip_whitespace=True, max_length=MAX_TITLE_LENGTH), AfterValidator(no_nul)
]
Summary = Annotated[str, StringConstraints(max_length=MAX_SUMMARY_LENGTH), AfterValidator(no_nul)]
BookmarkTags = Tags
Source = Annotated[
    Annotated[str, StringConstraints(max_length=MAX_SOURCE_LENGTH), AfterValidator(no_nul)] | None,
    BeforeValidator(blank_to_none),
]

_URL_DOC = "Absolute http(s) URL, at most 2048 characters; stored as sent (trimmed)"
_CONTENT_DOC = (
    "Saved page text, stored verbatim; at most 1 MiB (1048576 bytes of UTF-8); not returned by lists"
)
_TAGS_DOC = "Trimmed and lowercased on write; duplicates dropped"
_SOURCE_DOC = "Agent or skill label (≤255, trimmed); blank or null = none"
_READ_DOC = "true sets read_at to now (kept if already read); false clears read_at"


class BookmarkCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: Url = Field(description=_URL_DOC, json_schema_extra={"format": "uri", "maxLength": MAX_URL_LENGTH})
    title: Title = Field(default="", description="At most 500 characters, trimmed")
    summary: Summary = Field(default="", description="At most 20000 characters")
    content: Content = Field(default="", description=_CONTENT_DOC)
    tags: BookmarkTags = Field(default_factory=list, description=_TAGS_DOC)
    source: Source = Field(default=None, description=_SOURCE_DOC)
    is_read: Bool = Field(default=False, description=_READ_DOC)


class BookmarkUpdate(PatchModel):
    """Only the fields sent are changed; send source null to clear it. Other fields may not be null."""

    nullable = frozenset({"source"})

    model_config = ConfigDict(extra="forbid")
    url: Url | None = Field(
        default=None, description=_URL_DOC, json_schema_extra={"format": "uri", "maxLength": MAX_URL_LENGTH}
    )
    title: Title | None = Field(default=None, description="At most 500 characters, trimmed")
    summary: Summary | None = Field(default=None, description="At most 20000 characters")
    content: Content | None = Field(default=None, description=_CONTENT_DOC)
    tags: BookmarkTags | None = Field(default=None, description=_TAGS_DOC + "; replaces the whole list")
    source: Source = Field(default=None, description=_SOURCE_DOC)
    is_read: Bool | None = Field(default=None, description=_READ_DOC)


class BookmarkSummary(BaseModel):
    """A bookmark without its saved content, as listed."""

    id: UUID
    url: str
    title: str
    summary: str
    tags: list[str]
    source: str | None
    is_read: bool
    read_at: datetime | None = Field(description="When it was marked read; null while unread")
    created_at: datetime
    updated_at: datetime


class Bookmark(BookmarkSummary):
    content: str
