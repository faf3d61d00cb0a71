"""Working memory: sessions and their raw items (messages, tool results, drafts) in server-assigned seq order.

Item ``content`` is stored verbatim: these models never strip or normalise it (no ``str_strip_whitespace``).
"""

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from agentmate.core.idempotency import KEY_PATTERN
from agentmate.core.patch import PatchModel
from agentmate.core.schema_rules import NON_BLANK_TEXT, only_when, rules

SessionStatus = Literal["active", "archived"]
ItemType = Literal["message", "tool_result", "draft"]
Role = Literal["system", "user", "assistant", "tool"]
SESSION_STATUSES: tuple[str, ...] = SessionStatus.__args__  # type: ignore[attr-defined]
ITEM_TYPES: tuple[str, ...] = ItemType.__args__  # type: ignore[attr-defined]
ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]

MAX_BATCH_ITEMS = 500
MAX_CONTENT_BYTES = 1024 * 1024  # per item, UTF-8
MAX_ITEM_METADATA_BYTES = 1024 * 1024  # per item, serialized JSON
MAX_BATCH_BYTES = 5 * 1024 * 1024  # content + metadata of a whole batch (a Lambda request is at most 6 MB)
MAX_SESSION_METADATA_BYTES = 64 * 1024
MAX_IDEMPOTENCY_KEY_LENGTH = 512
MAX_TITLE_LENGTH = 500
MAX_AGENT_LENGTH = 200
DEFAULT_ITEM_LIMIT = 100  # replay page size
MAX_SEQ = 2**63 - 1  # seq is a bigint


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


Title = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TITLE_LENGTH, json_schema_extra={"pattern": NON_BLANK_TEXT}),
    BeforeValidator(_strip),
]
Agent = Annotated[
    str,
    Field(min_length=1, max_length=MAX_AGENT_LENGTH, json_schema_extra={"pattern": NON_BLANK_TEXT}),
    BeforeValidator(_strip),
]
Metadata = dict[str, Any]


# --- sessions -------------------------------------------------------------------------------------------------


class SessionCreate(BaseModel):
    """Every field is optional: ``{}`` creates an untitled active session."""

    model_config = ConfigDict(extra="forbid")
    title: Title | None = Field(default=None, description="Trimmed; 1..500 characters")
    agent: Agent | None = Field(
        default=None, description="Which agent owns the session (filterable); trimmed"
    )
    metadata: Metadata = Field(default_factory=dict, description="Free-form JSON object (at most 64 KiB)")


class SessionUpdate(PatchModel):
    """Only the fields sent change; at least one is required. ``title: null`` clears the title; status and
    metadata may not be null (send ``{}`` to empty the metadata)."""

    nullable = frozenset({"title"})

    model_config = ConfigDict(extra="forbid")
    title: Title | None = None
    status: SessionStatus | None = None
    metadata: Metadata | None = Field(default=None, description="Replaces the whole metadata object")


class WorkingSession(BaseModel):
    id: UUID
    title: str | None
    agent: str | None
    status: SessionStatus
    metadata: Metadata
    last_seq: int = Field(description="Highest seq ever assigned in the session (0 = none); never decreases")
    created_at: datetime
    updated_at: datetime = Field(description="Moves on every change, including appends")


class SessionDeleted(BaseModel):
    id: UUID
    deleted: bool = True
    items_deleted: int = Field(description="How many items were removed with the session")


# --- items ----------------------------------------------------------------------------------------------------


class ItemIn(BaseModel):
    """One item to append. ``role`` is required for messages and must be absent (or null) otherwise."""

    model_config = ConfigDict(
        extra="forbid", json_schema_extra=rules(only_when("role", "item_type", "message"))
    )
    item_type: ItemType
    role: Role | None = None
    content: str = Field(description="Stored verbatim (never trimmed); may be empty; at most 1 MiB UTF-8")
    metadata: Metadata | None = Field(default=None, description="JSON object; null or absent = {}")
    idempotency_key: Annotated[str, BeforeValidator(_strip)] = Field(
        min_length=1,
        max_length=MAX_IDEMPOTENCY_KEY_LENGTH,
        pattern=KEY_PATTERN,
        description="Unique within the session; retry a batch with the same keys to make it safe. Printable "
        "ASCII",
    )


class ItemsAppend(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[ItemIn] = Field(
        min_length=1,
        max_length=MAX_BATCH_ITEMS,
        description=f"1..{MAX_BATCH_ITEMS} items, appended all-or-nothing",
    )


class AppendedItem(BaseModel):
    """Receipt for one appended item, in request order (content is not echoed back)."""

    seq: int
    idempotency_key: str
    item_type: ItemType
    role: Role | None
    content_hash: str
    created: bool = Field(description="false when this key already held identical content (a replay)")
    created_at: datetime


class AppendResult(BaseModel):
    session_id: UUID
    items: list[AppendedItem]
    created_count: int
    replayed_count: int
    last_seq: int

    @property
    def replay(self) -> bool:
        """The whole batch was already stored: nothing was created."""
        return self.created_count == 0


class WorkingItem(BaseModel):
    session_id: UUID
    seq: int
    item_type: ItemType
    role: Role | None
    content: str
    metadata: Metadata
    idempotency_key: str
    content_hash: str
    created_at: datetime


class ItemPage(BaseModel):
    """A replay page. Continue with ``after_seq=next_after_seq`` while ``has_more`` is true."""

    session_id: UUID
    items: list[WorkingItem]
    after_seq: int
    limit: int
    has_more: bool = Field(description="Exact: true only if an item with a higher seq exists")
    next_after_seq: int = Field(description="The seq of the last item returned (after_seq when none)")
    last_seq: int = Field(
        description="The session's highest assigned seq (deleted items count); has_more decides whether to go on"
    )
    size_limited: bool = Field(
        description="The page stopped before `limit` items to stay under the response size budget"
    )


# --- the context pack's read (newest first, under a character budget) ----------------------------------------


class RecentItem(BaseModel):
    seq: int
    item_type: ItemType
    role: Role | None
    content: str = Field(
        description="At most max_chars + 1 characters of the content: enough to tell whether "
        "the item fits a budget of max_chars"
    )
    content_chars: int = Field(description="The full content's length in characters")
    created_at: datetime


class RecentItems(BaseModel):
    session_id: UUID
    items: list[RecentItem] = Field(
        description="Newest first; stops at the item whose content reaches max_chars"
    )
    total: int = Field(description="Items in the session")
