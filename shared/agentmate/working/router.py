from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Body, Path, Query, Response

from agentmate.api.deps import DbDep, IdempotencyKey, MemoryRead, MemoryWrite, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.api.routing import LAMBDA_BODY_LIMIT, max_body
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import MAX_LIMIT, Page
from agentmate.core.results import Created
from agentmate.working.schemas import (
    DEFAULT_ITEM_LIMIT,
    MAX_SEQ,
    AppendResult,
    ItemPage,
    ItemsAppend,
    SessionCreate,
    SessionDeleted,
    SessionStatus,
    SessionUpdate,
    WorkingSession,
)

if TYPE_CHECKING:
    from agentmate.working import service
else:  # the use cases load on the first request (cold start, docs/benchmarks.md)
    service = lazy_module("agentmate.working.service")

router = Router(prefix="/api/memory/working", tags=["working-memory"], responses=PROBLEM_RESPONSES)

SessionId = Annotated[UUID, Path(description="Working session id")]


@router.post("/sessions", status_code=201, response_model=WorkingSession)
def create_session(
    principal: MemoryWrite,
    db: DbDep,
    idempotency_key: IdempotencyKey,
    body: Annotated[SessionCreate | None, Body()] = None,
) -> Response:
    """Create a working memory session; title, agent and metadata are all optional."""
    result = service.create_session(db, principal, body, idempotency_key)
    return created(result)


@router.get("/sessions", response_model=Page[WorkingSession])
def list_sessions(
    principal: MemoryRead,
    db: DbDep,
    page: PageDep,
    status: Annotated[SessionStatus | None, Query()] = None,
    agent: Annotated[str | None, Query(description="Exact agent name")] = None,
) -> Page[WorkingSession]:
    """List working memory sessions, most recently updated first."""
    return service.list_sessions(db, principal, page, status=status, agent=agent)


@router.get("/sessions/{session_id}", response_model=WorkingSession)
def get_session(session_id: SessionId, principal: MemoryRead, db: DbDep) -> WorkingSession:
    """Get one session with its metadata and last_seq."""
    return service.get_session(db, principal, session_id)


@router.patch("/sessions/{session_id}", response_model=WorkingSession)
def update_session(
    session_id: SessionId, body: SessionUpdate, principal: MemoryWrite, db: DbDep
) -> WorkingSession:
    """Update title, status (active|archived) or metadata; at least one is required."""
    return service.update_session(db, principal, session_id, body)


@router.delete("/sessions/{session_id}", response_model=SessionDeleted)
def delete_session(session_id: SessionId, principal: MemoryWrite, db: DbDep) -> SessionDeleted:
    """Delete a session and all of its items; reports items_deleted for verification."""
    return service.delete_session(db, principal, session_id)


@router.post(
    "/sessions/{session_id}/items",
    status_code=201,
    response_model=AppendResult,
    openapi_extra=max_body(LAMBDA_BODY_LIMIT),  # batches of up to 5 MiB
    responses={
        200: {
            "model": AppendResult,
            "description": "Every item was already stored: a replay (header X-Idempotent-Replay: true)",
        }
    },
)
def append_items(session_id: SessionId, body: ItemsAppend, principal: MemoryWrite, db: DbDep) -> Response:
    """Append a batch of items all-or-nothing; seq is assigned by the server; retries replay by idempotency_key.

    Cross-field rules (a 400 names both fields): a message item needs a role, other item types take none; idempotency_key
    is unique within the batch."""
    result = service.append_items(db, principal, session_id, body)
    return created(Created(result, replay=result.replay), replay_status=200)


@router.get("/sessions/{session_id}/items", response_model=ItemPage)
def list_items(
    session_id: SessionId,
    principal: MemoryRead,
    db: DbDep,
    after_seq: Annotated[int, Query(ge=0, le=MAX_SEQ, description="Return items with a higher seq")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size, 1..100")] = DEFAULT_ITEM_LIMIT,
) -> ItemPage:
    """Replay items in seq order after after_seq; has_more is exact even across deletion gaps."""
    return service.list_items(db, principal, session_id, after_seq=after_seq, limit=limit)


@router.delete("/sessions/{session_id}/items/{seq}", status_code=204, response_class=Response)
def delete_item(
    session_id: SessionId,
    principal: MemoryWrite,
    db: DbDep,
    seq: Annotated[int, Path(ge=1, le=MAX_SEQ, description="The item's seq")],
) -> Response:
    """Delete one item; its seq is never reused."""
    service.delete_item(db, principal, session_id, seq)
    return Response(status_code=204)
