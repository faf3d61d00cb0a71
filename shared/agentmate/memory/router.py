from __future__ import annotations

from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, MemoryRead, MemoryWrite, PageDep, RetrievalDep
from agentmate.api.errors import PROBLEM, PROBLEM_RESPONSES, Problem
from agentmate.api.responses import created
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none
from agentmate.memory.schemas import (
    Attribution,
    CheckpointCreate,
    CheckpointSaved,
    Entry,
    EntryCreate,
    EntryDetail,
    EntryStatus,
    Event,
    EventCreate,
    EventDetail,
    EventRecorded,
    EventType,
    Feedback,
    FeedbackCreate,
    FeedbackRecorded,
    MemoryType,
    Resume,
    ScopePage,
    ScopeType,
    SearchRequest,
    SearchResponse,
    SupersedeRequest,
    SupersedeResult,
    Timeline,
)
from agentmate.memory.service import checkpoints, curation, entries, events, provenance, ranking

router = APIRouter(prefix="/api/memory", tags=["memory"], responses=PROBLEM_RESPONSES)
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


@router.get("/events", response_model=Page[Event])
def list_events(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    session_id: Annotated[str | None, Query(max_length=200)] = None,
    scope_type: Annotated[ScopeType | None, Query()] = None,
    scope_key: Annotated[str | None, Query(max_length=500)] = None,
    event_type: Annotated[EventType | None, Query()] = None,
) -> Page[Event]:
    """Read back journal events, newest first."""
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
    return events.list_scopes(db, principal, page)


# -- entries -----------------------------------------------------------------------------------------------------


@router.post("/entries", status_code=201, response_model=EntryDetail)
def create_entry(
    body: EntryCreate,
    principal: MemoryWrite,
    db: DbDep,
    retrieval: RetrievalDep,
    idempotency_key: IdempotencyKey,
) -> Response:
    """Store a durable memory (needs source_event_id or evidence); `indexing` reports the search projection."""
    result = entries.create_entry(db, retrieval, principal, body, idempotency_key)
    return created(result)


@router.get("/entries", response_model=Page[Entry])
def list_entries(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    scope_type: Annotated[ScopeType | None, Query()] = None,
    scope_key: Annotated[str | None, Query(max_length=500)] = None,
    memory_type: Annotated[MemoryType | None, Query()] = None,
    status: Annotated[EntryStatus | None, Query()] = None,
) -> Page[Entry]:
    """List durable memories, most important and most recently updated first."""
    return entries.list_entries(
        db,
        principal,
        page,
        scope_type=scope_type,
        scope_key=blank_to_none(scope_key),
        memory_type=memory_type,
        status=status,
    )


@router.get("/entries/{entry_id}", response_model=EntryDetail)
def get_entry(entry_id: UUID, principal: MemoryRead, db: DbDep) -> EntryDetail:
    """One memory with its evidence and indexing state."""
    return entries.get_entry(db, principal, entry_id)


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
    limit: Annotated[int, Query(ge=1, le=provenance.TIMELINE_MAX_LIMIT, description="1..500")] = 200,
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
    principal: MemoryRead, db: DbDep, session_id: Annotated[str, Query(min_length=1, max_length=200)]
) -> Resume:
    """Latest checkpoint plus everything recorded after it: checkpoint, journal_only or empty."""
    return checkpoints.resume(db, principal, session_id)
