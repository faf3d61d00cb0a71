"""Result and argument types shared by the tool modules."""

from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, Field
from pydantic_core import PydanticCustomError

from agentmate.core.errors import invalid
from agentmate.core.idempotency import KEY_PATTERN
from agentmate.core.pagination import DEFAULT_LIMIT, MAX_LIMIT, MAX_OFFSET
from agentmate.mcp.context import sent_arguments

Limit = Annotated[
    int, Field(ge=1, le=MAX_LIMIT, description=f"Page size, 1..{MAX_LIMIT} (default {DEFAULT_LIMIT})")
]
Offset = Annotated[int, Field(ge=0, le=MAX_OFFSET, description="Items to skip (default 0)")]


def _a_list_of_tags(value: Any) -> Any:
    """A string ``tags`` (``"work"``) is refused with the fix, not pydantic's "Input should be a valid list"."""
    if isinstance(value, str):
        raise PydanticCustomError(
            "tags_not_a_list", 'must be a list of tags, e.g. ["work"]; for one tag, tag: "work" also works'
        )
    return value


TagList = Annotated[
    list[str] | None,
    BeforeValidator(_a_list_of_tags),
    Field(
        description='Tags, a list (["work"]); all must match. Trimmed and lowercased, as they are on write'
    ),
]
Tag = Annotated[
    str | None,
    Field(max_length=200, description="One tag (as REST's ?tag=); with tags, all must match"),
]


def with_tag(tag: str | None, tags: list[str] | None) -> list[str] | None:
    """A list tool's ``tag`` and ``tags`` as one filter (REST's ``tag=`` and ``tags=``); None when neither."""
    merged = ([tag] if tag is not None and tag.strip() else []) + list(tags or [])
    return merged or None


IdempotencyKey = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=255,
        pattern=KEY_PATTERN,
        description="Optional. Retrying with the same key returns the original record "
        "instead of creating a second one; reusing it with other values is refused",
    ),
]


class Deleted(BaseModel):
    """What a delete tool returns: the id that no longer exists."""

    id: UUID
    deleted: bool = True


def given(**fields: object) -> dict[str, object]:
    """The arguments an update tool was actually sent, for ``*Update(**changes)``: an explicit ``null`` is kept
    (the model clears the field or refuses the null, as REST PATCH does) and an omitted argument is left out.
    Called outside a ``tools/call`` (direct Python calls), ``None`` counts as omitted."""
    sent = sent_arguments()
    if sent is None:
        return {name: value for name, value in fields.items() if value is not None}
    return {name: value for name, value in fields.items() if name in sent}


ClearSource = Annotated[bool, Field(description="true removes the source label (do not also send source)")]


def apply_clear_source(changes: dict[str, object], clear: bool) -> dict[str, object]:
    """Apply ``clear_source=true`` (an update's way to send ``source: null``)."""
    if clear:
        if "source" in changes:
            raise invalid("clear_source", "send either source or clear_source=true, not both")
        changes["source"] = None
    return changes
