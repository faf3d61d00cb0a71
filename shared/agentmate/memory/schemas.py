"""Memory: the immutable event journal, evidence-backed durable entries, hybrid search, feedback, checkpoints.

Write models are strict: an unknown field is a 400 naming it. For fields that agents commonly send in the wrong
place each model lists a hint in ``field_hints`` (core.validation), so the 400 says where the value belongs,
e.g. ``content`` on an event → "event content belongs inside payload".
"""

from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal, get_args
from uuid import UUID

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_serializer,
    field_validator,
)

from agentmate.core.inputs import Int, Number, Timestamp
from agentmate.core.schema_rules import NOT_BLANK, requires, rules, scope_rule, together
from agentmate.retrieval.schemas import LEXICAL_MATCHED, LEXICAL_SCORE, MIN_SIMILARITY, VECTOR_SCORE

ScopeType = Literal["global", "project", "repository", "agent", "session"]
EventType = Literal[
    "goal",
    "observation",
    "action",
    "decision",
    "issue",
    "attempt",
    "outcome",
    "correction",
    "checkpoint",
    "note",
]
# Written by the service itself (never accepted from clients): an entry retired by PATCH, an entry deleted for good.
SystemEventType = Literal["memory_retired", "memory_forgotten"]
StoredEventType = Literal[
    "goal",
    "observation",
    "action",
    "decision",
    "issue",
    "attempt",
    "outcome",
    "correction",
    "checkpoint",
    "note",
    "memory_retired",
    "memory_forgotten",
]
MemoryType = Literal["semantic", "episodic", "procedural"]
EntryStatus = Literal["pending", "active", "superseded", "invalidated", "archived", "expired"]
CreateStatus = Literal["active", "pending"]
RetireStatus = Literal["archived", "invalidated"]
# Only these are in the search index: retiring, superseding or expiring an entry removes its projection.
SearchStatus = Literal["active", "pending"]
NOT_SEARCHABLE = (
    "{status} entries are not in the search index (retired, superseded and expired memories leave "
    "search): list them with GET /api/memory/entries?status={status}, or read one by id (memory_get "
    "over MCP)"
)
ExtractionMethod = Literal["explicit", "rule", "llm", "dream"]
Signal = Literal["useful", "harmful"]
Resolution = Literal["skill_version", "session_only", "event_only", "none"]
ResumeResolution = Literal["checkpoint", "journal_only", "empty"]
ResumeSelection = Literal["session_id", "scope"]

SCOPE_TYPES: tuple[str, ...] = ScopeType.__args__  # type: ignore[attr-defined]
EVENT_TYPES: tuple[str, ...] = EventType.__args__  # type: ignore[attr-defined]
MEMORY_TYPES: tuple[str, ...] = MemoryType.__args__  # type: ignore[attr-defined]
ENTRY_STATUSES: tuple[str, ...] = EntryStatus.__args__  # type: ignore[attr-defined]
CHECKPOINT_STRING_FIELDS = ("goal", "label", "notes")
CHECKPOINT_LIST_FIELDS = ("done", "next", "open")
CHECKPOINT_FIELDS = CHECKPOINT_STRING_FIELDS + CHECKPOINT_LIST_FIELDS

MAX_SESSION_ID = 200
MAX_SCOPE_KEY = 500
MAX_IDEMPOTENCY_KEY = 512
MAX_PAYLOAD_BYTES = 256 * 1024
MAX_METADATA_BYTES = 64 * 1024
MAX_EVIDENCE = 50
MAX_CHECKPOINT_ITEMS = 100
MAX_CHECKPOINT_ITEM_CHARS = 2000
TIMELINE_MAX_LIMIT = 500


def _is_none(value: object) -> bool:
    """Optional diagnostics are left out of a response unless set, so the usual envelopes stay as they are."""
    return value is None


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def _lower_strip(value: object) -> object:
    return value.strip().lower() if isinstance(value, str) else value


def _blank_to_none(value: object) -> object:
    if isinstance(value, str) and not value.strip():
        return None
    return value


def _none_to_empty_dict(value: object) -> object:
    return {} if value is None else value


Lower = BeforeValidator(_lower_strip)
Strip = BeforeValidator(_strip)
ScopeTypeIn = Annotated[ScopeType, Lower]
SessionId = Annotated[str, Strip, Field(max_length=MAX_SESSION_ID)]
ScopeKey = Annotated[str, Strip, Field(max_length=MAX_SCOPE_KEY)]
# Blank (empty or whitespace) means "none", as the schema says.
OptionalUUID = Annotated[
    UUID | None,
    BeforeValidator(_blank_to_none),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "uuid"},
                {"type": "string", "pattern": r"^\s*$"},
                {"type": "null"},
            ]
        }
    ),
]
JsonObject = Annotated[dict[str, Any], BeforeValidator(_none_to_empty_dict)]

_IN_PAYLOAD = "event content belongs inside payload"
_USE_SESSION_ID = "use session_id"
_USE_SCOPE = "use scope_type (global, project, repository, agent, session) plus scope_key"
_USE_REPO = 'use scope_type "repository" with scope_key "owner/repo"'
_EVIDENCE_KEYS = "evidence uses source_type/source_id"


# --- events ---------------------------------------------------------------------------------------------------


# A checkpoint event's payload has a fixed shape and needs a session (memory/service/events.py checks it).
CHECKPOINT_EVENT_RULE = {
    "if": {"required": ["event_type"], "properties": {"event_type": {"const": "checkpoint"}}},
    "then": {
        "required": ["payload", "session_id"],
        "properties": {
            "session_id": NOT_BLANK,
            "payload": {
                "type": "object",
                "required": ["goal"],
                "additionalProperties": False,
                "properties": {
                    **{name: {"type": "string"} for name in CHECKPOINT_STRING_FIELDS},
                    "goal": NOT_BLANK,
                    **{
                        name: {
                            "type": "array",
                            "maxItems": MAX_CHECKPOINT_ITEMS,
                            "items": {"type": "string", "maxLength": MAX_CHECKPOINT_ITEM_CHARS},
                        }
                        for name in CHECKPOINT_LIST_FIELDS
                    },
                },
            },
        },
    },
}


class EventCreate(BaseModel):
    """An immutable journal event. Retries must reuse ``idempotency_key``: the same body replays the stored event
    (200 + ``X-Idempotent-Replay: true``), a different body under the same key is a 409."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=rules(
            scope_rule(),
            requires("sequence_no", "session_id"),
            *together("source_type", "source_id"),
            CHECKPOINT_EVENT_RULE,
        ),
    )
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "content": _IN_PAYLOAD,
        "text": _IN_PAYLOAD,
        "message": _IN_PAYLOAD,
        "body": _IN_PAYLOAD,
        "data": _IN_PAYLOAD,
        "type": "use event_type",
        "tags": "put tags inside payload",
        "metadata": "put it inside payload",
        "session": _USE_SESSION_ID,
        "scope": _USE_SCOPE,
        "repo": _USE_REPO,
        "repository": _USE_REPO,
    }
    # Required field left out → where it belongs (agents often send the key as an Idempotency-Key header).
    missing_hints: ClassVar[dict[str, str]] = {
        "idempotency_key": "send it in the JSON body, not as an Idempotency-Key header; reuse it on retries",
    }
    event_type: Annotated[EventType, Lower]
    idempotency_key: Annotated[
        str,
        Strip,
        Field(
            min_length=1,
            max_length=MAX_IDEMPOTENCY_KEY,
            description="Stable per logical event; reuse it on retries",
        ),
    ]
    payload: JsonObject = Field(default_factory=dict, description="The event's content (JSON object)")
    scope_type: ScopeTypeIn = "global"
    scope_key: ScopeKey = Field(default="", description="Required unless scope_type is global")
    session_id: SessionId = ""
    sequence_no: Int | None = Field(default=None, ge=0, description="Optional order within session_id")
    source_type: Annotated[str, Lower, Field(max_length=64)] = ""
    source_id: Annotated[str, Strip, Field(max_length=1000)] = ""
    occurred_at: Timestamp | None = Field(
        default=None, description="RFC 3339; defaults to now (then not hashed)"
    )
    skill_version_id: OptionalUUID = Field(
        default=None, description="The skill version that produced the event"
    )


class Event(BaseModel):
    id: UUID
    scope_type: ScopeType
    scope_key: str
    session_id: str
    sequence_no: int | None
    event_type: StoredEventType
    payload: dict[str, Any]
    source_type: str
    source_id: str
    occurred_at: datetime
    idempotency_key: str
    content_hash: str
    skill_version_id: UUID | None
    created_at: datetime


class EventDetail(Event):
    warning: str | None = Field(default=None, description="Set when the stored payload is empty")


SCOPE_WARNING_DESCRIPTION = (
    "Present when this write opened a new scope whose key differs from an existing one only in case, slashes or "
    "spaces: scope keys are exact, so memories of one thing would be split between the two"
)


class EventRecorded(EventDetail):
    created: bool = Field(description="false when this was a replay of an already stored event")
    scope_warning: str | None = Field(
        default=None, exclude_if=_is_none, description=SCOPE_WARNING_DESCRIPTION
    )


# --- entries --------------------------------------------------------------------------------------------------


class EvidenceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "kind": _EVIDENCE_KEYS,
        "ref": _EVIDENCE_KEYS,
        "type": _EVIDENCE_KEYS,
        "url": _EVIDENCE_KEYS,
        "id": _EVIDENCE_KEYS,
        "note": "use excerpt",
        "text": "use excerpt",
        "quote": "use excerpt",
    }
    source_type: Annotated[
        str,
        Lower,
        Field(min_length=1, max_length=64, description="What the evidence is, e.g. memory_event, url, file"),
    ]
    source_id: Annotated[str, Strip, Field(min_length=1, max_length=1000, description="Its id, URL or path")]
    excerpt: str = Field(default="", max_length=5000)
    metadata: JsonObject = Field(default_factory=dict)


class EntryCreate(BaseModel):
    """A durable memory. It needs provenance: ``source_event_id`` or at least one ``evidence`` item."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=rules(scope_rule()))
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "type": "use memory_type",
        "text": "use content",
        "body": "use content",
        "source": "use evidence: [{source_type, source_id, excerpt}]",
        "sources": "use evidence: [{source_type, source_id, excerpt}]",
        "event_id": "use source_event_id",
        "tags": "put tags inside metadata",
        "payload": "entries take content (payload belongs to events)",
        "scope": _USE_SCOPE,
        "repo": _USE_REPO,
        "repository": _USE_REPO,
        "session": "entries have no session: scope them (scope_type session + scope_key) if they are session-bound",
        "session_id": "entries have no session: scope them (scope_type session + scope_key) if they are session-bound",
        "idempotency_key": "send it as the Idempotency-Key header",
    }
    memory_type: Annotated[MemoryType, Lower]
    content: str = Field(min_length=1, max_length=20_000)
    title: Annotated[str, Strip, Field(max_length=500)] = ""
    summary: str = Field(default="", max_length=2000)
    scope_type: ScopeTypeIn = "global"
    scope_key: ScopeKey = Field(default="", description="Required unless scope_type is global")
    confidence: Number = Field(default=0.5, ge=0, le=1)
    importance: Number = Field(default=0.5, ge=0, le=1)
    status: Annotated[CreateStatus, Lower] = "active"
    metadata: JsonObject = Field(default_factory=dict)
    ttl_at: Timestamp | None = None
    valid_from: Timestamp | None = Field(default=None, description="Defaults to now")
    valid_to: Timestamp | None = None
    source_event_id: OptionalUUID = Field(default=None, description="The journal event this memory came from")
    evidence: list[EvidenceIn] = Field(default_factory=list, max_length=MAX_EVIDENCE)
    extraction_method: Annotated[ExtractionMethod, Lower] = "explicit"
    extractor_version: Annotated[str, Strip, Field(max_length=100)] = ""


class Evidence(BaseModel):
    id: UUID
    memory_id: UUID
    source_type: str
    source_id: str
    excerpt: str
    metadata: dict[str, Any]
    created_at: datetime


class Entry(BaseModel):
    id: UUID
    scope_type: ScopeType
    scope_key: str
    memory_type: MemoryType
    title: str
    content: str
    summary: str
    content_hash: str
    confidence: float
    importance: float
    status: EntryStatus
    metadata: dict[str, Any]
    ttl_at: datetime | None
    last_accessed_at: datetime | None
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: UUID | None
    source_event_id: UUID | None
    extraction_method: ExtractionMethod
    extractor_version: str
    access_count: int
    useful_count: int
    harmful_count: int
    status_reason: str = Field(description="Why the entry was archived or invalidated (empty otherwise)")
    superseded_by_deleted: UUID | None = Field(
        description="A superseding entry of this one that was deleted for good: the chain had a link here"
    )
    created_at: datetime
    updated_at: datetime


class Indexing(BaseModel):
    status: Literal["indexed", "failed", "pending", "missing"] = Field(
        description="indexed: both search legs; failed: lexical leg only (error says why); pending: being "
        "indexed; missing: no retrieval projection (e.g. superseded)"
    )
    document_id: UUID | None = None
    error: str | None = None
    waiting: int | None = Field(
        default=None,
        description="On an entry's read: how many of the account's items (memories, knowledge, skills) still "
        "wait to be re-embedded after an embedder or vector-index failure; a job retries them with backoff "
        "and this drops to 0 once the dependency is back",
        exclude_if=_is_none,
    )


class EntryDetail(Entry):
    evidence: list[Evidence]
    indexing: Indexing | None = None


class EntryCreated(EntryDetail):
    """The answer to a create: ``indexing`` names only what is known (no null document_id/error)."""

    scope_warning: str | None = Field(
        default=None, exclude_if=_is_none, description=SCOPE_WARNING_DESCRIPTION
    )
    deduplicated: bool = Field(
        default=False,
        description="true when an active entry with the same memory_type, scope and normalised content already "
        "existed: this is that entry, with the new evidence appended (200, nothing new was stored)",
    )

    @field_serializer("indexing")
    def _known_indexing(self, value: Indexing | None) -> dict[str, Any] | None:
        return None if value is None else value.model_dump(mode="json", exclude_none=True)


# --- scopes (shared) -----------------------------------------------------------------------------------------


class ScopeRef(BaseModel):
    scope_type: ScopeType
    scope_key: str


NEAREST_SCOPES_DESCRIPTION = (
    "Present when a scoped read found nothing: existing scopes of this account whose key matches the requested one "
    "after case folding and trimming slashes/whitespace, or shares a path segment with it. Scope keys are exact: "
    "retry with one of these"
)
# The field every scoped read's response carries (left out unless set).
NearestScopes = Annotated[
    list[ScopeRef] | None, Field(description=NEAREST_SCOPES_DESCRIPTION, exclude_if=_is_none)
]


# --- search ---------------------------------------------------------------------------------------------------


class SearchRequest(BaseModel):
    model_config = ConfigDict(
        extra="forbid", json_schema_extra=rules(requires("scope_key", "scope_type", other_text=False))
    )
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "q": "use query",
        "text": "use query",
        "limit": "use top_k",
        "type": "use memory_type",
        "scope": _USE_SCOPE,
        "repo": _USE_REPO,
        "session_id": "search has no session filter: memories are found by scope (scope_type + scope_key)",
    }
    query: Annotated[str, Strip, Field(min_length=1, max_length=2000)]
    top_k: Int = Field(default=8, ge=1, le=20)
    scope_type: Annotated[ScopeType | None, Lower] = None
    scope_key: Annotated[str, Strip, Field(max_length=MAX_SCOPE_KEY)] | None = Field(
        default=None, description="Requires scope_type"
    )
    memory_type: Annotated[MemoryType | None, Lower] = None
    status: Annotated[SearchStatus, Lower] = "active"
    min_similarity: Number | None = Field(default=None, ge=-1, le=1, description=MIN_SIMILARITY)

    @field_validator("status", mode="before")
    @classmethod
    def _searchable(cls, value: Any) -> Any:
        status = value.strip().lower() if isinstance(value, str) else value
        if status in ENTRY_STATUSES and status not in get_args(SearchStatus):
            raise ValueError(NOT_SEARCHABLE.format(status=status))
        return value


class Degraded(BaseModel):
    leg: Literal["lexical", "vector"]
    reason: str


class SearchItem(BaseModel):
    entry: EntryDetail
    rank: int
    score: float = Field(description="retrieval_score + feedback_adjustment, clamped to 0..1")
    retrieval_score: float = Field(
        description="Fused rank score: 1.0 = first in both legs, 0.5 = first in one"
    )
    feedback_adjustment: float = Field(description="0.15 * (useful - harmful) / (useful + harmful + 3)")
    channels: list[Literal["lexical", "vector"]]
    hit_reason: str
    lexical_score: float | None = Field(description=LEXICAL_SCORE)
    vector_score: float | None = Field(description=VECTOR_SCORE)
    lexical_matched: bool = Field(description=LEXICAL_MATCHED)


class SearchResponse(BaseModel):
    items: list[SearchItem]
    total: int
    degraded: list[Degraded] = Field(
        default_factory=list, description="Search legs that failed; the others still answered"
    )
    filtered_by_min_similarity: int | None = Field(
        default=None,
        description="Hits dropped by min_similarity (absent when it was not sent)",
        exclude_if=_is_none,
    )
    nearest_scopes: NearestScopes = None


# --- supersede / feedback -------------------------------------------------------------------------------------


class SupersedeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "superseding_id": "the superseding entry is the one in the path",
        "replaces": "use superseded_id",
    }
    superseded_id: UUID = Field(description="The entry this one (the path id) replaces")


class SupersedeResult(BaseModel):
    superseding: Entry
    superseded: Entry
    projection_removed: int = Field(description="Retrieval rows of the replaced entry deleted by this call")
    created: bool = Field(description="false when this supersede was already recorded")
    warning: str | None = None


class FeedbackCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "useful": "use signal: useful|harmful",
        "helpful": "use signal: useful|harmful",
        "rating": "use signal: useful|harmful",
        "score": "use signal: useful|harmful",
        "memory_id": "the memory id is in the path",
    }
    signal: Annotated[Signal, Lower]
    reason: str = Field(default="", max_length=2000)
    session_id: SessionId = Field(default="", description="One signal of each kind per memory per session")
    skill_version_id: OptionalUUID = None
    metadata: JsonObject = Field(default_factory=dict)


class Feedback(BaseModel):
    id: UUID
    memory_id: UUID
    signal: Signal
    reason: str
    session_id: str
    skill_version_id: UUID | None
    metadata: dict[str, Any]
    observed_at: datetime
    created_at: datetime


class FeedbackRecorded(BaseModel):
    feedback: Feedback
    created: bool = Field(
        description="false when this signal was already recorded for this memory and session"
    )
    entry: Entry


# --- timeline / attribution -----------------------------------------------------------------------------------


class TimelineItem(BaseModel):
    kind: Literal["skill_log", "memory_event"]
    id: UUID
    occurred_at: datetime
    session_id: str
    skill_version_id: UUID | None
    skill_name: str | None
    skill_version: str | None
    attributed: bool = Field(description="Tied to a specific skill version")
    outcome: str | None = None
    was_triggered: bool | None = None
    failure_reason: str | None = None
    duration_ms: int | None = None
    event_type: str | None = None
    payload: dict[str, Any] | None = None


class Timeline(BaseModel):
    session_id: str | None
    skill_version_id: UUID | None
    items: list[TimelineItem]
    total: int
    skill_log_count: int
    memory_event_count: int
    unattributed_count: int
    truncated: bool = Field(description="More items exist than limit")
    limit: int


class Attribution(BaseModel):
    entry_id: UUID
    resolution: Resolution
    source_event_id: UUID | None = None
    session_id: str | None = None
    skill_version_id: UUID | None = None
    skill_name: str | None = None
    skill_version: str | None = None
    session_timeline: list[TimelineItem] | None = None
    session_timeline_truncated: bool | None = None


# --- checkpoints ----------------------------------------------------------------------------------------------

CheckpointItem = Annotated[str, Field(max_length=MAX_CHECKPOINT_ITEM_CHARS)]
_NOT_IN_CHECKPOINT = "a checkpoint has goal, done, next, open, notes and label"


class CheckpointCreate(BaseModel):
    """A resumable snapshot of session intent. Without ``idempotency_key`` the key derives from the content, so
    saving unchanged state again is a no-op."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=rules(scope_rule()))
    # Unknown field → what to send instead (core.validation adds it to the "unknown field" message).
    field_hints: ClassVar[dict[str, str]] = {
        "blocked_on": "list blockers in open",
        "blockers": "list blockers in open",
        "questions": "use open",
        "completed": "use done",
        "todo": "use next",
        "steps": "use next",
        "summary": "use notes",
        "content": _NOT_IN_CHECKPOINT,
        "payload": _NOT_IN_CHECKPOINT,
        "session": _USE_SESSION_ID,
        "scope": _USE_SCOPE,
        "repo": _USE_REPO,
    }
    session_id: Annotated[str, Strip, Field(min_length=1, max_length=MAX_SESSION_ID)]
    goal: Annotated[str, Strip, Field(min_length=1, max_length=2000)]
    label: Annotated[str, Strip, Field(max_length=200)] = ""
    notes: str = Field(default="", max_length=10_000)
    done: list[CheckpointItem] = Field(default_factory=list, max_length=MAX_CHECKPOINT_ITEMS)
    next: list[CheckpointItem] = Field(default_factory=list, max_length=MAX_CHECKPOINT_ITEMS)
    open: list[CheckpointItem] = Field(default_factory=list, max_length=MAX_CHECKPOINT_ITEMS)
    scope_type: ScopeTypeIn = "global"
    scope_key: ScopeKey = ""
    skill_version_id: OptionalUUID = None
    idempotency_key: Annotated[str, Strip, Field(max_length=MAX_IDEMPOTENCY_KEY)] | None = None


class Checkpoint(BaseModel):
    event_id: UUID
    session_id: str
    scope_type: ScopeType
    scope_key: str
    goal: str
    label: str
    notes: str
    done: list[str]
    next: list[str]
    open: list[str]
    skill_version_id: UUID | None
    idempotency_key: str
    occurred_at: datetime
    warning: str | None = None


class CheckpointSaved(BaseModel):
    checkpoint: Checkpoint
    created: bool = Field(description="false when identical state was already saved (nothing appended)")
    warning: str | None = None
    scope_warning: str | None = Field(
        default=None, exclude_if=_is_none, description=SCOPE_WARNING_DESCRIPTION
    )


class Resume(BaseModel):
    session_id: str | None = Field(
        description="The session resumed; with scope_type/scope_key, the one whose latest event in that scope is "
        "newest (null when the scope has no session)"
    )
    selected_by: ResumeSelection = Field(
        default="session_id", description="session_id: as asked; scope: chosen from the scope's sessions"
    )
    resolution: ResumeResolution
    checkpoint: Checkpoint | None
    since_checkpoint: list[TimelineItem] = Field(
        description="Everything recorded after the checkpoint (the whole session journal when there is none)"
    )
    truncated: bool
    nearest_scopes: NearestScopes = None
    note: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Present when a resume by scope returns a checkpoint saved in another scope (resume returns "
        "the chosen session's latest checkpoint, whatever its scope), or when a session_id has nothing recorded "
        "(how to find the session after a restart)",
    )


class JournalSession(BaseModel):
    session_id: str
    first_activity_at: datetime = Field(
        description="occurred_at of its first event (in the scope, if filtered)"
    )
    last_activity_at: datetime = Field(
        description="occurred_at of its latest event (in the scope, if filtered)"
    )
    event_count: int = Field(description="Its events (in the scope, if filtered)")
    latest_checkpoint_label: str | None = Field(description="label of the checkpoint resume would return")
    latest_checkpoint_goal: str | None = Field(description="goal of the checkpoint resume would return")
    latest_checkpoint_at: datetime | None = None


class JournalSessionPage(BaseModel):
    items: list[JournalSession]
    total: int
    limit: int
    offset: int
    nearest_scopes: NearestScopes = None


# --- scopes ---------------------------------------------------------------------------------------------------


class ScopeSummary(BaseModel):
    scope_type: ScopeType
    scope_key: str
    entry_count: int
    event_count: int
    last_activity_at: datetime | None


class ScopePage(BaseModel):
    items: list[ScopeSummary]
    total: int
    limit: int
    offset: int
    note: str


class EntryPage(BaseModel):
    items: list[Entry]
    total: int
    limit: int
    offset: int
    nearest_scopes: NearestScopes = None


class EventPage(BaseModel):
    items: list[Event]
    total: int
    limit: int
    offset: int
    nearest_scopes: NearestScopes = None


# --- retire / forget / export ---------------------------------------------------------------------------------


class EntryRetire(BaseModel):
    """Retire a memory: it leaves search (its retrieval projection is removed) and its validity window closes; the
    change is recorded as a ``memory_retired`` journal event. Use DELETE to forget it for good."""

    model_config = ConfigDict(extra="forbid")
    field_hints: ClassVar[dict[str, str]] = {
        "content": "an entry's content cannot change: store a new memory and supersede this one",
        "title": "an entry's title cannot change: store a new memory and supersede this one",
        "superseded_by": "use POST /api/memory/entries/{id}/supersede",
    }
    status: Annotated[RetireStatus, Lower] = Field(
        description="archived (no longer relevant) or invalidated (it was wrong)"
    )
    reason: Annotated[str, Strip, Field(min_length=1, max_length=2000, description="Why (kept on the entry)")]


class EntryRetired(BaseModel):
    entry: Entry
    changed: bool = Field(description="false when the entry already had this status (nothing recorded)")
    projection_removed: int = Field(description="Retrieval rows of the entry deleted by this call")
    event_id: UUID | None = Field(description="The memory_retired journal event (null when unchanged)")
    warning: str | None = None


class DeletedLink(BaseModel):
    entry_id: UUID = Field(description="An entry the deleted one superseded")
    superseded_by: UUID | None = Field(
        description="Where its chain now points: the deleted entry's own successor, or null if it had none"
    )


class EntryDeleted(BaseModel):
    id: UUID
    deleted: bool = True
    evidence_deleted: int
    feedback_deleted: int
    projection_removed: int
    relinked: list[DeletedLink] = Field(
        description="Supersede chains that ran through the deleted entry; each keeps superseded_by_deleted = id"
    )
    tombstone_event_id: UUID = Field(description="The memory_forgotten journal event (id and time only)")
    warning: str | None = None


class ScopeForgotten(BaseModel):
    scope_type: ScopeType
    scope_key: str
    deleted: int = Field(description="How many entries were deleted for good")
    projection_removed: int
    warning: str | None = None
    nearest_scopes: NearestScopes = None


class ExportedEntry(EntryDetail):
    """One NDJSON line of GET /api/memory/export: an entry with its evidence."""
