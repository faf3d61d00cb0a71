import json
from typing import TYPE_CHECKING, Annotated, Any, Literal
from uuid import UUID

from fastapi import Query, Response
from fastapi.responses import StreamingResponse

from agentmate.api.deps import DbDep, IdempotencyKey, MemoryRead, MemoryWrite, PageDep, RetrievalDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM, PROBLEM_RESPONSES, Problem
from agentmate.api.responses import created
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none
from agentmate.memory.schemas import (
    TIMELINE_MAX_LIMIT,
    Attribution,
    CheckpointCreate,
    CheckpointSaved,
    EntryCreate,
    EntryCreated,
    EntryDeleted,
    EntryDetail,
    EntryPage,
    EntryRetire,
    EntryRetired,
    EntryStatus,
    EventCreate,
    EventDetail,
    EventPage,
    EventRecorded,
    Feedback,
    FeedbackCreate,
    FeedbackRecorded,
    JournalSessionPage,
    MemoryType,
    Resume,
    ScopeForgotten,
    ScopePage,
    ScopeType,
    SearchRequest,
    SearchResponse,
    StoredEventType,
    SupersedeRequest,
    SupersedeResult,
    Timeline,
)

if TYPE_CHECKING:
    import agentmate.memory.service.checkpoints as checkpoints
    import agentmate.memory.service.curation as curation
    import agentmate.memory.service.entries as entries
    import agentmate.memory.service.events as events
    import agentmate.memory.service.forget as forget
    import agentmate.memory.service.provenance as provenance
    import agentmate.memory.service.ranking as ranking
    import agentmate.memory.service.scopes as scopes
else:  # each use case loads on the first request that calls it (cold start, docs/benchmarks.md)
    checkpoints = lazy_module("agentmate.memory.service.checkpoints")
    curation = lazy_module("agentmate.memory.service.curation")
    entries = lazy_module("agentmate.memory.service.entries")
    events = lazy_module("agentmate.memory.service.events")
    forget = lazy_module("agentmate.memory.service.forget")
    provenance = lazy_module("agentmate.memory.service.provenance")
    ranking = lazy_module("agentmate.memory.service.ranking")
    scopes = lazy_module("agentmate.memory.service.scopes")

NDJSON = "application/x-ndjson"
NEAREST_SCOPES_HEADER = "Nearest-Scopes"

router = Router(prefix="/api/memory", tags=["memory"], responses=PROBLEM_RESPONSES)
SEARCH_RESPONSES: dict[int | str, dict[str, Any]] = {
    503: {
        "model": Problem,
        "content": {PROBLEM: {}},
        "description": "Both search legs failed; `degraded` lists why",
    },
}


# -- events ------------------------------------------------------------------------------------------------------


@router.post(
    "/events",
    status_code=201,
    response_model=EventRecorded,
    responses={200: {"model": EventRecorded, "description": "Replay of an already stored event"}},
)
def record_event(body: EventCreate, principal: MemoryWrite, db: DbDep) -> Response:
    """Append an immutable event; retry with the same idempotency_key (same body = 200 replay, else 409)."""
    result = events.record_event(db, principal, body)
    return created(result, replay_status=200)


@router.get("/events", response_model=EventPage)
def list_events(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    scope_type: Annotated[ScopeType | None, Query()] = None,
    scope_key: Annotated[str | None, Query(max_length=500)] = None,
    event_type: Annotated[StoredEventType | None, Query()] = None,
) -> EventPage:
    """Read back journal events, newest first; `nearest_scopes` when a scope key matched nothing."""
    return events.list_events(
        db,
        principal,
        page,
        session_id=blank_to_none(session_id),
        scope_type=scope_type,
        scope_key=blank_to_none(scope_key),
        event_type=event_type,
    )


@router.get("/events/{event_id}", response_model=EventDetail)
def get_event(event_id: UUID, principal: MemoryRead, db: DbDep) -> EventDetail:
    """One event as stored; `warning` is set when its payload is empty."""
    return events.get_event(db, principal, event_id)


@router.get("/scopes", response_model=ScopePage)
def list_scopes(principal: MemoryRead, db: DbDep, page: PageDep) -> ScopePage:
    """Scopes in use with entry and event counts: reuse them instead of inventing new keys."""
    return scopes.list_scopes(db, principal, page)


@router.get("/journal/sessions", response_model=JournalSessionPage)
def journal_sessions(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    scope_type: Annotated[ScopeType | None, Query()] = None,
    scope_key: Annotated[str | None, Query(max_length=500, description="Requires scope_type")] = None,
) -> JournalSessionPage:
    """The journal's sessions (not working-memory sessions), newest activity first, with event count and the
    latest checkpoint's label and goal; with a scope, a session's activity is its events in that scope."""
    return checkpoints.journal_sessions(db, principal, page, scope_type=scope_type, scope_key=scope_key)


# -- entries -----------------------------------------------------------------------------------------------------


@router.post(
    "/entries",
    status_code=201,
    response_model=EntryCreated,
    responses={
        200: {
            "model": EntryCreated,
            "description": "deduplicated: true — an active entry with the same memory_type, scope and normalised "
            "content exists (this is it, new evidence appended); or a replay of an Idempotency-Key",
        }
    },
)
def create_entry(
    body: EntryCreate,
    principal: MemoryWrite,
    db: DbDep,
    retrieval: RetrievalDep,
    idempotency_key: IdempotencyKey,
) -> Response:
    """Store a durable memory (needs source_event_id or evidence); `indexing` reports the search projection.
    An identical active memory (same memory_type, scope and content after Unicode NFC, whitespace collapsing and
    trimming) is not stored twice: 200 with that entry and `deduplicated: true`."""
    result = entries.create_entry(db, retrieval, principal, body, idempotency_key)
    if result.value.deduplicated:
        return created(result, status=200, replay_status=200)
    return created(result)


@router.get("/entries", response_model=EntryPage)
def list_entries(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    scope_type: Annotated[ScopeType | None, Query()] = None,
    scope_key: Annotated[str | None, Query(max_length=500)] = None,
    memory_type: Annotated[MemoryType | None, Query()] = None,
    status: Annotated[EntryStatus | None, Query()] = None,
) -> EntryPage:
    """List durable memories, most important and most recently updated first; `nearest_scopes` when a scope key
    matched nothing."""
    return entries.list_entries(
        db,
        principal,
        page,
        scope_type=scope_type,
        scope_key=blank_to_none(scope_key),
        memory_type=memory_type,
        status=status,
    )


@router.delete("/entries", response_model=ScopeForgotten)
def forget_scope(
    principal: MemoryWrite,
    db: DbDep,
    retrieval: RetrievalDep,
    scope_type: Annotated[ScopeType, Query()],
    confirm: Annotated[
        Literal["true", "false"],
        Query(
            description="Must be true (exactly; not yes, 1 or on): every memory of the scope goes for good"
        ),
    ],
    scope_key: Annotated[str, Query(max_length=500, description="Required unless scope_type is global")] = "",
) -> ScopeForgotten:
    """Delete every memory of one scope for good (as DELETE /entries/{id} does each), reporting how many."""
    return forget.forget_scope(
        db, retrieval, principal, scope_type=scope_type, scope_key=scope_key, confirm=confirm == "true"
    )


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {NDJSON: {"schema": {"$ref": "#/components/schemas/ExportedEntry"}}},
            "description": "One JSON entry with its evidence per line (application/x-ndjson)",
            "headers": {
                NEAREST_SCOPES_HEADER: {
                    "description": "Only on an empty export of a scope key: a JSON array of the nearest "
                    "existing scopes ({scope_type, scope_key}), as nearest_scopes elsewhere",
                    "schema": {"type": "string"},
                }
            },
        }
    },
)
def export(
    principal: MemoryRead,
    db: DbDep,
    scope_type: Annotated[ScopeType, Query()],
    scope_key: Annotated[str, Query(max_length=500, description="Required unless scope_type is global")] = "",
) -> StreamingResponse:
    """A scope's memories (every status) with their evidence as NDJSON, one entry per line."""
    result = forget.export_scope(db, principal, scope_type=scope_type, scope_key=scope_key)
    headers = {}
    if result.nearest_scopes is not None:  # JSON escapes every non-ASCII and control character: header-safe
        headers[NEAREST_SCOPES_HEADER] = json.dumps(
            [s.model_dump(mode="json") for s in result.nearest_scopes]
        )
    return StreamingResponse(
        (r.model_dump_json() + "\n" for r in result.rows), media_type=NDJSON, headers=headers
    )


@router.get("/entries/{entry_id}", response_model=EntryDetail)
def get_entry(entry_id: UUID, principal: MemoryRead, db: DbDep) -> EntryDetail:
    """One memory with its evidence and indexing state."""
    return entries.get_entry(db, principal, entry_id)


@router.patch("/entries/{entry_id}", response_model=EntryRetired)
def retire_entry(
    entry_id: UUID, body: EntryRetire, principal: MemoryWrite, db: DbDep, retrieval: RetrievalDep
) -> EntryRetired:
    """Archive or invalidate a memory with a reason: it leaves search, its validity window closes, and a
    memory_retired journal event records the change. Content cannot change (store a new memory and supersede)."""
    return forget.retire(db, retrieval, principal, entry_id, body)


@router.delete("/entries/{entry_id}", response_model=EntryDeleted)
def delete_entry(entry_id: UUID, principal: MemoryWrite, db: DbDep, retrieval: RetrievalDep) -> EntryDeleted:
    """Forget a memory for good: the entry, its evidence, feedback and search projection. A memory_forgotten
    tombstone event keeps only the id and time; supersede chains through it are relinked and reported."""
    return forget.delete(db, retrieval, principal, entry_id)


@router.post("/search", response_model=SearchResponse, responses=SEARCH_RESPONSES)
def search(body: SearchRequest, principal: MemoryRead, db: DbDep, retrieval: RetrievalDep) -> SearchResponse:
    """Hybrid (full-text + vector) memory search; `degraded` names a failed leg, 503 when both fail."""
    result = ranking.search(db, retrieval, principal, body)
    return result


@router.post("/entries/{entry_id}/supersede", response_model=SupersedeResult)
def supersede(
    entry_id: UUID, body: SupersedeRequest, principal: MemoryWrite, db: DbDep, retrieval: RetrievalDep
) -> SupersedeResult:
    """This entry replaces `superseded_id`: that one becomes superseded, its window closes, its projection goes."""
    return curation.supersede(db, retrieval, principal, entry_id, body)


@router.post(
    "/entries/{entry_id}/feedback",
    status_code=201,
    response_model=FeedbackRecorded,
    responses={200: {"model": FeedbackRecorded, "description": "Signal already recorded (created: false)"}},
)
def add_feedback(entry_id: UUID, body: FeedbackCreate, principal: MemoryWrite, db: DbDep) -> Response:
    """Report whether a memory helped (useful|harmful); one signal of each kind per memory per session."""
    result = curation.add_feedback(db, principal, entry_id, body)
    return created(result, replay_status=200)


@router.get("/entries/{entry_id}/feedback", response_model=Page[Feedback])
def list_feedback(entry_id: UUID, principal: MemoryRead, db: DbDep, page: PageDep) -> Page[Feedback]:
    """The usefulness signal log of a memory, newest first."""
    return curation.list_feedback(db, principal, entry_id, page)


@router.get("/entries/{entry_id}/attribution", response_model=Attribution)
def attribution(entry_id: UUID, principal: MemoryRead, db: DbDep) -> Attribution:
    """Which skill execution produced this memory: entry → source event → skill version."""
    return provenance.attribution(db, principal, entry_id)


# -- timeline / checkpoints --------------------------------------------------------------------------------------


@router.get("/timeline", response_model=Timeline)
def timeline(
    principal: MemoryRead,
    db: DbDep,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    skill_version_id: Annotated[UUID | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=TIMELINE_MAX_LIMIT, description="1..500")] = 200,
) -> Timeline:
    """Skill executions and journal events in time order; needs session_id or skill_version_id."""
    return provenance.timeline(
        db, principal, session_id=session_id, skill_version_id=skill_version_id, limit=limit
    )


@router.post(
    "/checkpoints",
    status_code=201,
    response_model=CheckpointSaved,
    responses={200: {"model": CheckpointSaved, "description": "Same state already saved (created: false)"}},
)
def save_checkpoint(body: CheckpointCreate, principal: MemoryWrite, db: DbDep) -> Response:
    """Save a resumable snapshot (goal required; done/next/open are string arrays); unchanged state is a no-op."""
    result = checkpoints.save_checkpoint(db, principal, body)
    return created(result, replay_status=200)


@router.get("/resume", response_model=Resume)
def resume(
    principal: MemoryRead,
    db: DbDep,
    session_id: Annotated[str | None, Query(max_length=200, description="The session to resume")] = None,
    scope_type: Annotated[
        ScopeType | None, Query(description="Instead of session_id: resume the scope's latest session")
    ] = None,
    scope_key: Annotated[str | None, Query(max_length=500, description="With scope_type")] = None,
) -> Resume:
    """Latest checkpoint plus everything recorded after it: checkpoint, journal_only or empty. Give session_id,
    or scope_type (+ scope_key) to resume the session whose latest event in that scope is newest (after a crash
    the new process does not know its session_id); `session_id` in the answer says which one."""
    return checkpoints.resume(db, principal, session_id, scope_type=scope_type, scope_key=scope_key)
