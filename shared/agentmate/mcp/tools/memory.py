"""Memory tools (``/mcp/memory``): the journal, durable memories, search, feedback, checkpoints and the working
memory, over the ``agentmate.memory.service`` use cases and ``agentmate.working.service``; scopes as the REST twins."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

from pydantic import BaseModel, Field

from agentmate.core.idempotency import check_key
from agentmate.core.pagination import DEFAULT_LIMIT, MAX_LIMIT, Page, PageParams
from agentmate.mcp.context import db, principal, retrieval
from agentmate.mcp.registry import ToolSet
from agentmate.mcp.schemas import IdempotencyKey, Limit, Offset, given
from agentmate.memory import schemas as m
from agentmate.memory.schemas import (
    Attribution,
    CheckpointCreate,
    CheckpointSaved,
    EntryCreate,
    EntryCreated,
    EntryDeleted,
    EntryDetail,
    EntryRetire,
    EntryRetired,
    EventCreate,
    EventPage,
    EventRecorded,
    EvidenceIn,
    Feedback,
    FeedbackCreate,
    FeedbackRecorded,
    JournalSessionPage,
    Resume,
    ScopePage,
    SearchRequest,
    SearchResponse,
    SupersedeRequest,
    SupersedeResult,
    Timeline,
)
from agentmate.memory.service import (
    checkpoints,
    curation,
    entries,
    events,
    forget,
    provenance,
    ranking,
    scopes,
)
from agentmate.working import schemas as w
from agentmate.working import service as working
from agentmate.working.schemas import (
    AppendResult,
    ItemIn,
    ItemPage,
    ItemsAppend,
    SessionCreate,
    SessionDeleted,
    SessionUpdate,
    WorkingSession,
)

tools = ToolSet(
    "memory",
    instructions=(
        "Agent memory for the account that owns the API key. Reading needs memory:r, writing memory:rw.\n"
        "- Journal: memory_record appends immutable events (event_type: goal, observation, action, decision, "
        "issue, attempt, outcome, correction, checkpoint, note; content goes inside payload); retry with the "
        "same idempotency_key.\n"
        "- Durable memories: memory_store (memory_type: semantic, episodic, procedural) needs provenance: "
        "source_event_id or evidence [{source_type, source_id, excerpt}]. Recall with memory_search; report "
        "usefulness with memory_feedback (useful|harmful); memory_supersede replaces an outdated memory.\n"
        "- Sessions: memory_checkpoint_save (goal, done, next, open) and memory_resume (by session_id, or by "
        "scope after a crash: memory_journal_sessions lists the journal's sessions); memory_events_list reads "
        "events back; memory_timeline and memory_attribution trace what a skill run produced.\n"
        "- Forget: memory_update retires (archived|invalidated + reason), memory_delete deletes for good.\n"
        "- Working memory: raw per-session items (message with role system|user|assistant|tool, tool_result, "
        "draft) appended with memory_working_append and replayed in seq order with memory_working_replay.\n"
        "scope_type is one of global, project, repository, agent, session (scope_key required unless global). "
        "Scope keys are exact: memory_scopes lists the ones in use."
    ),
)

EntryId = Annotated[
    UUID, Field(description="The memory entry's id (UUID), e.g. from memory_store or memory_search")
]
ScopeType = Annotated[
    m.ScopeTypeIn, Field(description="global (default), project, repository, agent or session")
]
ScopeKey = Annotated[
    m.ScopeKey,
    Field(description="Which project/repository/agent/session; required unless scope_type is global"),
]
SessionId = Annotated[m.SessionId, Field(description="The agent session this belongs to")]
SkillVersionId = Annotated[
    UUID | None,
    Field(description="The skill version whose run produced this (from skill_version_get_active)"),
]
WorkingSessionId = Annotated[
    UUID, Field(description="The working memory session's id (UUID), from memory_working_session_create")
]


# -- journal and durable memories --------------------------------------------------------------------------------


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/events",
    title="Record a memory event",
    idempotent=True,
    hints=EventCreate,
)
def memory_record(
    event_type: Annotated[
        m.EventType,
        Field(
            description="goal, observation, action, decision, issue, attempt, "
            "outcome, correction, checkpoint or note"
        ),
    ],
    idempotency_key: Annotated[
        str,
        Field(
            min_length=1,
            max_length=m.MAX_IDEMPOTENCY_KEY,
            description="Stable per logical event; reuse it when retrying",
        ),
    ],
    payload: Annotated[
        dict[str, Any] | None,
        Field(description='The event\'s content as a JSON object, e.g. {"text": "..."}'),
    ] = None,
    scope_type: ScopeType = "global",
    scope_key: ScopeKey = "",
    session_id: SessionId = "",
    sequence_no: Annotated[int | None, Field(ge=0, description="Optional order within session_id")] = None,
    source_type: Annotated[str, Field(max_length=64, description="Where it came from, e.g. chat, tool")] = "",
    source_id: Annotated[str, Field(max_length=1000)] = "",
    occurred_at: Annotated[datetime | None, Field(description="RFC 3339; defaults to now")] = None,
    skill_version_id: SkillVersionId = None,
) -> EventRecorded:
    """Append an immutable event to the memory journal. event_type: goal | observation | action | decision |
    issue | attempt | outcome | correction | checkpoint | note; put the content inside payload (a JSON
    object). Retries must reuse idempotency_key: the same event replays (created=false), different content
    under the same key is refused. Requires memory:rw."""
    body = EventCreate(
        event_type=event_type,
        idempotency_key=idempotency_key,
        payload=payload or {},
        scope_type=scope_type,
        scope_key=scope_key,
        session_id=session_id,
        sequence_no=sequence_no,
        source_type=source_type,
        source_id=source_id,
        occurred_at=occurred_at,
        skill_version_id=skill_version_id,
    )
    return events.record_event(db(), principal(), body).value


@tools.tool("memory:rw", rest="POST /api/memory/entries", title="Store a durable memory", hints=EntryCreate)
def memory_store(
    memory_type: Annotated[
        m.MemoryType, Field(description="semantic (facts), episodic (what happened) or procedural (how to)")
    ],
    content: Annotated[str, Field(min_length=1, max_length=20_000, description="The memory itself")],
    source_event_id: Annotated[
        UUID | None,
        Field(description="The journal event it came from (from memory_record); or give evidence"),
    ] = None,
    evidence: Annotated[
        list[EvidenceIn] | None,
        Field(max_length=m.MAX_EVIDENCE, description="Provenance items {source_type, source_id, excerpt}"),
    ] = None,
    title: Annotated[str, Field(max_length=500)] = "",
    summary: Annotated[str, Field(max_length=2000)] = "",
    scope_type: ScopeType = "global",
    scope_key: ScopeKey = "",
    confidence: Annotated[float, Field(ge=0, le=1, description="0..1 (default 0.5)")] = 0.5,
    importance: Annotated[float, Field(ge=0, le=1, description="0..1 (default 0.5); lists rank by it")] = 0.5,
    status: Annotated[m.CreateStatus, Field(description="active (default) or pending")] = "active",
    metadata: Annotated[dict[str, Any] | None, Field(description="JSON object; tags go here")] = None,
    ttl_at: Annotated[datetime | None, Field(description="RFC 3339: forget after this")] = None,
    valid_from: Annotated[datetime | None, Field(description="RFC 3339; defaults to now")] = None,
    valid_to: Annotated[datetime | None, Field(description="RFC 3339")] = None,
    extraction_method: Annotated[
        m.ExtractionMethod, Field(description="explicit (default), rule, llm or dream")
    ] = "explicit",
    extractor_version: Annotated[str, Field(max_length=100)] = "",
    idempotency_key: IdempotencyKey = None,
) -> EntryCreated:
    """Store an evidence-backed durable memory. memory_type: semantic | episodic | procedural. Provenance is
    required: source_event_id (a journal event) or at least one evidence item {source_type, source_id,
    excerpt}. scope_type: global | project | repository | agent | session (scope_key required unless
    global). The result's indexing.status says whether semantic search has it (failed = full-text only).
    An active memory with the same memory_type, scope and content (whitespace-normalised) is not stored twice:
    the result is that entry with deduplicated=true and this evidence appended. Requires memory:rw."""
    body = EntryCreate(
        memory_type=memory_type,
        content=content,
        source_event_id=source_event_id,
        evidence=evidence or [],
        title=title,
        summary=summary,
        scope_type=scope_type,
        scope_key=scope_key,
        confidence=confidence,
        importance=importance,
        status=status,
        metadata=metadata or {},
        ttl_at=ttl_at,
        valid_from=valid_from,
        valid_to=valid_to,
        extraction_method=extraction_method,
        extractor_version=extractor_version,
    )
    return entries.create_entry(db(), retrieval(), principal(), body, check_key(idempotency_key)).value


@tools.tool("memory:r", rest="POST /api/memory/search", title="Search memories", hints=SearchRequest)
def memory_search(
    query: Annotated[
        str,
        Field(min_length=1, max_length=2000, description="What to recall, in natural language or keywords"),
    ],
    top_k: Annotated[int, Field(ge=1, le=20, description="1..20 (default 8)")] = 8,
    scope_type: Annotated[
        m.ScopeType | None,
        Field(description="Only this scope type: global, project, repository, agent, session"),
    ] = None,
    scope_key: Annotated[
        str, Field(max_length=m.MAX_SCOPE_KEY, description="Only this scope key (requires scope_type)")
    ]
    | None = None,
    memory_type: Annotated[m.MemoryType | None, Field(description="semantic, episodic or procedural")] = None,
    status: Annotated[
        m.EntryStatus,
        Field(
            description="active (default) or pending: retired, superseded and "
            "expired memories are not searchable (read one by id with "
            "memory_get)"
        ),
    ] = "active",
    min_similarity: Annotated[
        float | None,
        Field(
            ge=-1,
            le=1,
            description="Drop hits whose raw vector "
            "similarity (vector_score) is below this unless the full-text "
            "leg matched; see the guide for a threshold",
        ),
    ] = None,
) -> SearchResponse:
    """Hybrid (full-text + semantic) search over durable memories, nudged by usefulness feedback. Each item
    has the entry with its evidence, rank, score, retrieval_score, feedback_adjustment, channels and
    hit_reason; vector_score is the raw similarity and lexical_matched says whether the words matched (the
    fused score cannot say "nothing relevant": pass min_similarity for that). degraded lists a failed search
    leg; nearest_scopes names existing scope keys when a scoped search found nothing (keys are exact). Report
    whether a result helped with memory_feedback. Requires memory:r."""
    # Optional filters are passed only when given: the model's constraints refuse an explicit None.
    body = SearchRequest.model_validate(
        {
            "query": query,
            "top_k": top_k,
            "status": status,
            **given(
                scope_type=scope_type,
                scope_key=scope_key,
                memory_type=memory_type,
                min_similarity=min_similarity,
            ),
        }
    )
    return ranking.search(db(), retrieval(), principal(), body)


@tools.tool("memory:r", rest="GET /api/memory/entries/{entry_id}", title="Get a memory")
def memory_get(id: EntryId) -> EntryDetail:
    """One durable memory with its evidence and indexing state. Requires memory:r."""
    return entries.get_entry(db(), principal(), id)


@tools.tool("memory:r", rest="GET /api/memory/timeline", title="Session / skill timeline")
def memory_timeline(
    session_id: Annotated[str, Field(max_length=m.MAX_SESSION_ID, description="The session to trace")]
    | None = None,
    skill_version_id: Annotated[UUID | None, Field(description="The skill version to trace")] = None,
    limit: Annotated[
        int, Field(ge=1, le=provenance.TIMELINE_MAX_LIMIT, description="1..500 (default 200)")
    ] = provenance.TIMELINE_DEFAULT_LIMIT,
) -> Timeline:
    """Skill executions and journal events of a session and/or skill version, in time order (one of
    session_id or skill_version_id is required). Reports skill_log_count, memory_event_count,
    unattributed_count and truncated so the coverage of an attribution conclusion is explicit. Requires
    memory:r."""
    return provenance.timeline(
        db(), principal(), session_id=session_id, skill_version_id=skill_version_id, limit=limit
    )


@tools.tool("memory:r", rest="GET /api/memory/entries/{entry_id}/attribution", title="Attribute a memory")
def memory_attribution(id: EntryId) -> Attribution:
    """Which skill execution produced a durable memory: walks entry → source event → skill version.
    resolution is skill_version, session_only, event_only or none; includes the session timeline when a
    session is known. Requires memory:r."""
    return provenance.attribution(db(), principal(), id)


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/entries/{entry_id}/supersede",
    title="Supersede a memory",
    idempotent=True,
    hints=SupersedeRequest,
)
def memory_supersede(
    id: Annotated[UUID, Field(description="The NEW entry, which replaces superseded_id")],
    superseded_id: Annotated[UUID, Field(description="The outdated entry being replaced")],
) -> SupersedeResult:
    """Record that entry id replaces superseded_id: the old entry becomes superseded, its validity window
    closes and it leaves search. Supersedes form a chain (a cycle is refused); replaying is a no-op.
    Requires memory:rw."""
    return curation.supersede(
        db(), retrieval(), principal(), id, SupersedeRequest(superseded_id=superseded_id)
    )


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/entries/{entry_id}/feedback",
    title="Rate a memory",
    idempotent=True,
    hints=FeedbackCreate,
)
def memory_feedback(
    id: EntryId,
    signal: Annotated[m.Signal, Field(description="useful or harmful")],
    reason: Annotated[str, Field(max_length=2000)] = "",
    session_id: Annotated[
        m.SessionId, Field(description="One signal of each kind per memory per session")
    ] = "",
    skill_version_id: SkillVersionId = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="JSON object")] = None,
) -> FeedbackRecorded:
    """Report whether a memory helped: signal useful | harmful, with an optional reason. One signal of each
    kind per memory per session (a repeat returns created=false). Feedback nudges search ranking (at most
    ±0.15). Requires memory:rw."""
    body = FeedbackCreate(
        signal=signal,
        reason=reason,
        session_id=session_id,
        skill_version_id=skill_version_id,
        metadata=metadata or {},
    )
    return curation.add_feedback(db(), principal(), id, body).value


@tools.tool("memory:r", rest="GET /api/memory/entries/{entry_id}/feedback", title="List a memory's feedback")
def memory_feedback_list(id: EntryId, limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[Feedback]:
    """The usefulness signals recorded for a memory, newest first, as {items, total, limit, offset}.
    Requires memory:r."""
    return curation.list_feedback(db(), principal(), id, PageParams(limit=limit, offset=offset))


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/checkpoints",
    title="Save a checkpoint",
    idempotent=True,
    hints=CheckpointCreate,
)
def memory_checkpoint_save(
    session_id: Annotated[str, Field(min_length=1, max_length=m.MAX_SESSION_ID, description="The session")],
    goal: Annotated[
        str, Field(min_length=1, max_length=2000, description="What the session is trying to do")
    ],
    done: Annotated[
        list[m.CheckpointItem] | None,
        Field(max_length=m.MAX_CHECKPOINT_ITEMS, description="Completed steps (strings)"),
    ] = None,
    next: Annotated[
        list[m.CheckpointItem] | None,
        Field(max_length=m.MAX_CHECKPOINT_ITEMS, description="Next steps (strings)"),
    ] = None,
    open: Annotated[
        list[m.CheckpointItem] | None,
        Field(max_length=m.MAX_CHECKPOINT_ITEMS, description="Open questions and blockers"),
    ] = None,
    notes: Annotated[str, Field(max_length=10_000)] = "",
    label: Annotated[str, Field(max_length=200)] = "",
    scope_type: ScopeType = "global",
    scope_key: ScopeKey = "",
    skill_version_id: SkillVersionId = None,
    idempotency_key: Annotated[
        str,
        Field(
            max_length=m.MAX_IDEMPOTENCY_KEY,
            description="Optional; by default derived from the content, so unchanged state is a no-op",
        ),
    ]
    | None = None,
) -> CheckpointSaved:
    """Save a resumable snapshot of the session: goal (required), done, next and open (lists of strings),
    notes and label. Saving unchanged state again is a no-op (created=false). Resume later with
    memory_resume. Requires memory:rw."""
    body = CheckpointCreate.model_validate(
        {
            "session_id": session_id,
            "goal": goal,
            "done": done or [],
            "next": next or [],
            "open": open or [],
            "notes": notes,
            "label": label,
            "scope_type": scope_type,
            "scope_key": scope_key,
            **given(skill_version_id=skill_version_id, idempotency_key=idempotency_key),
        }
    )
    return checkpoints.save_checkpoint(db(), principal(), body).value


@tools.tool("memory:r", rest="GET /api/memory/resume", title="Resume a session")
def memory_resume(
    session_id: Annotated[
        str | None,
        Field(
            max_length=m.MAX_SESSION_ID,
            description="The session; or omit it and give scope_type (+ scope_key)",
        ),
    ] = None,
    scope_type: Annotated[
        m.ScopeType | None,
        Field(
            description="Resume the latest session of this scope "
            "(after a crash you may not know your "
            "session_id)"
        ),
    ] = None,
    scope_key: Annotated[str | None, Field(max_length=m.MAX_SCOPE_KEY, description="With scope_type")] = None,
) -> Resume:
    """The session's latest checkpoint plus everything recorded after it. Give session_id, or scope_type (+
    scope_key) to resume the session whose latest event in that scope is newest: session_id in the result says
    which one was chosen. resolution is checkpoint, journal_only (no checkpoint: the journal tail) or empty.
    memory_journal_sessions lists the candidates. Requires memory:r."""
    return checkpoints.resume(db(), principal(), session_id, scope_type=scope_type, scope_key=scope_key)


@tools.tool("memory:r", rest="GET /api/memory/journal/sessions", title="List journal sessions")
def memory_journal_sessions(
    scope_type: Annotated[
        m.ScopeType | None, Field(description="Only sessions with events in this scope")
    ] = None,
    scope_key: Annotated[str | None, Field(max_length=m.MAX_SCOPE_KEY, description="With scope_type")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> JournalSessionPage:
    """The journal's sessions (not working-memory sessions), newest activity first: session_id, first and last
    activity, event count, and the latest checkpoint's label and goal. With a scope, a session's activity is
    its events in that scope. Use it to find your session again after a crash, then memory_resume. Requires
    memory:r."""
    return checkpoints.journal_sessions(
        db(), principal(), PageParams(limit=limit, offset=offset), scope_type=scope_type, scope_key=scope_key
    )


@tools.tool("memory:r", rest="GET /api/memory/events", title="List journal events")
def memory_events_list(
    session_id: Annotated[
        str | None, Field(max_length=m.MAX_SESSION_ID, description="Only this session")
    ] = None,
    scope_type: Annotated[m.ScopeType | None, Field(description="Only this scope type")] = None,
    scope_key: Annotated[
        str | None, Field(max_length=m.MAX_SCOPE_KEY, description="Only this scope key")
    ] = None,
    event_type: Annotated[m.StoredEventType | None, Field(description="Only this event type")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> EventPage:
    """Read back journal events, newest first, as {items, total, limit, offset}; nearest_scopes names existing
    scope keys when a scope key matched nothing. Requires memory:r."""
    return events.list_events(
        db(),
        principal(),
        PageParams(limit=limit, offset=offset),
        session_id=(session_id or "").strip() or None,
        scope_type=scope_type,
        scope_key=(scope_key or "").strip() or None,
        event_type=event_type,
    )


@tools.tool("memory:r", rest="GET /api/memory/scopes", title="List memory scopes")
def memory_scopes(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> ScopePage:
    """Scopes in use (scope_type, scope_key) with entry and event counts, most recently active first: reuse one
    before inventing a key (keys are exact). Requires memory:r."""
    return scopes.list_scopes(db(), principal(), PageParams(limit=limit, offset=offset))


@tools.tool(
    "memory:rw",
    rest="PATCH /api/memory/entries/{entry_id}",
    title="Retire a memory",
    idempotent=True,
    hints=EntryRetire,
)
def memory_update(
    id: EntryId,
    status: Annotated[
        m.RetireStatus, Field(description="archived (no longer relevant) or invalidated (it was wrong)")
    ],
    reason: Annotated[str, Field(min_length=1, max_length=2000, description="Why")],
) -> EntryRetired:
    """Retire a durable memory: status archived or invalidated, with a reason. It leaves search, its validity
    window closes and a memory_retired journal event records the change; the same status again changes
    nothing. Content cannot change: store a new memory and memory_supersede this one. Requires memory:rw."""
    return forget.retire(db(), retrieval(), principal(), id, EntryRetire(status=status, reason=reason))


@tools.tool(
    "memory:rw",
    rest="DELETE /api/memory/entries/{entry_id}",
    title="Delete a memory",
    destructive=True,
    idempotent=False,
)
def memory_delete(id: EntryId) -> EntryDeleted:
    """Forget a durable memory for good: the entry, its evidence, feedback and search projection go; a
    memory_forgotten tombstone event keeps only its id and the time. Supersede chains through it are relinked
    and listed in relinked. Prefer memory_update (archived/invalidated) to keep history. Requires memory:rw."""
    return forget.delete(db(), retrieval(), principal(), id)


# -- working memory ----------------------------------------------------------------------------------------------


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/working/sessions",
    title="Create a working memory session",
    hints=SessionCreate,
)
def memory_working_session_create(
    title: Annotated[w.Title | None, Field(description="1..500 characters")] = None,
    agent: Annotated[w.Agent | None, Field(description="Which agent owns the session (filterable)")] = None,
    metadata: Annotated[dict[str, Any] | None, Field(description="JSON object (at most 64 KiB)")] = None,
    idempotency_key: IdempotencyKey = None,
) -> WorkingSession:
    """Create a working memory session (every argument optional) to hold raw conversation messages, tool
    results and drafts in seq order. Requires memory:rw."""
    body = SessionCreate(title=title, agent=agent, metadata=metadata or {})
    return working.create_session(db(), principal(), body, check_key(idempotency_key)).value


@tools.tool("memory:r", rest="GET /api/memory/working/sessions", title="List working memory sessions")
def memory_working_session_list(
    status: Annotated[w.SessionStatus | None, Field(description="active or archived")] = None,
    agent: Annotated[str | None, Field(description="Exact agent name")] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> Page[WorkingSession]:
    """Working memory sessions, most recently updated first, optionally filtered by status (active |
    archived) and agent. Returns {items, total, limit, offset}. Requires memory:r."""
    return working.list_sessions(
        db(), principal(), PageParams(limit=limit, offset=offset), status=status, agent=agent
    )


@tools.tool("memory:r", rest="GET /api/memory/working/sessions/{session_id}", title="Get a working session")
def memory_working_session_get(id: WorkingSessionId) -> WorkingSession:
    """One working memory session with its metadata and last_seq. Requires memory:r."""
    return working.get_session(db(), principal(), id)


@tools.tool(
    "memory:rw",
    rest="PATCH /api/memory/working/sessions/{session_id}",
    title="Update a working session",
    idempotent=True,
    hints=SessionUpdate,
    patch=SessionUpdate,
)
def memory_working_session_update(
    id: WorkingSessionId,
    title: Annotated[w.Title | None, Field(description="New title")] = None,
    clear_title: Annotated[bool, Field(description="true removes the title")] = False,
    status: Annotated[w.SessionStatus | None, Field(description="active or archived")] = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Replaces the whole metadata object")
    ] = None,
) -> WorkingSession:
    """Change a working session's title, status (active | archived) or metadata (replaced whole); at least
    one is required. clear_title=true removes the title. Requires memory:rw."""
    changes: dict[str, Any] = given(title=title, status=status, metadata=metadata)
    if clear_title:
        changes["title"] = None
    return working.update_session(db(), principal(), id, SessionUpdate.model_validate(changes))


@tools.tool(
    "memory:rw",
    rest="DELETE /api/memory/working/sessions/{session_id}",
    title="Delete a working session",
    destructive=True,
    idempotent=True,
)
def memory_working_session_delete(id: WorkingSessionId) -> SessionDeleted:
    """Delete a working memory session and all of its items; reports items_deleted. Requires memory:rw."""
    return working.delete_session(db(), principal(), id)


@tools.tool(
    "memory:rw",
    rest="POST /api/memory/working/sessions/{session_id}/items",
    title="Append to working memory",
    idempotent=True,
    hints=ItemsAppend,
)
def memory_working_append(
    session_id: WorkingSessionId,
    items: Annotated[
        list[ItemIn],
        Field(
            min_length=1,
            max_length=w.MAX_BATCH_ITEMS,
            description="1..500 items "
            "{item_type, role?, content, metadata?, idempotency_key}, stored "
            "all-or-nothing",
        ),
    ],
) -> AppendResult:
    """Append items to a working session all-or-nothing; the server assigns seq. item_type: message (role
    required: system | user | assistant | tool) | tool_result | draft (no role). content is stored verbatim
    and may be empty. Each item needs an idempotency_key unique in the session: retrying replays
    (created=false), the same key with other content is refused. Requires memory:rw."""
    return working.append_items(db(), principal(), session_id, ItemsAppend(items=items))


@tools.tool(
    "memory:r", rest="GET /api/memory/working/sessions/{session_id}/items", title="Replay working memory"
)
def memory_working_replay(
    session_id: WorkingSessionId,
    after_seq: Annotated[
        int,
        Field(
            ge=0,
            le=working.MAX_SEQ,
            description="Return items with a higher seq (default 0 = from the start)",
        ),
    ] = 0,
    limit: Annotated[
        int, Field(ge=1, le=MAX_LIMIT, description=f"1..{MAX_LIMIT} (default {working.DEFAULT_ITEM_LIMIT})")
    ] = working.DEFAULT_ITEM_LIMIT,
) -> ItemPage:
    """Replay a working session's items in seq order after after_seq. Continue with
    after_seq=next_after_seq while has_more is true (exact even across deleted items). Requires memory:r."""
    return working.list_items(db(), principal(), session_id, after_seq=after_seq, limit=limit)


class ItemDeleted(BaseModel):
    session_id: UUID
    seq: int
    deleted: bool = True


@tools.tool(
    "memory:rw",
    rest="DELETE /api/memory/working/sessions/{session_id}/items/{seq}",
    title="Delete a working memory item",
    destructive=True,
    idempotent=True,
)
def memory_working_item_delete(
    session_id: WorkingSessionId,
    seq: Annotated[int, Field(ge=1, le=working.MAX_SEQ, description="The item's seq")],
) -> ItemDeleted:
    """Delete one item from a working session; its seq is never reused. Requires memory:rw."""
    working.delete_item(db(), principal(), session_id, seq)
    return ItemDeleted(session_id=session_id, seq=seq)
