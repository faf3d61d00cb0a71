"""WORKING: the named working-memory session's most recent raw items, shown oldest first. They are fitted
newest first, so under a tight budget the oldest context is what goes: what happened last constrains the next
step. The provider reads backwards only as far as the budget can reach."""

from __future__ import annotations

from uuid import UUID

from agentmate.context.layers.base import (
    Candidate,
    Candidates,
    PackRequest,
    Principal,
    Retrieval,
    TenantTransactions,
)
from agentmate.core.errors import NotFound
from agentmate.working import service as working
from agentmate.working.schemas import RecentItem

NO_SESSION = "no session_id: WORKING shows a working-memory session, name one with session_id"


def _title(item: RecentItem) -> str:
    kind = f"{item.item_type}/{item.role}" if item.role else item.item_type
    return f"#{item.seq} {kind}"


def provide(
    db: TenantTransactions, retrieval: Retrieval, principal: Principal, req: PackRequest, budget: int
) -> Candidates:
    if req.session_id is None:
        return Candidates(note=NO_SESSION)
    try:
        session_id = UUID(req.session_id)
    except ValueError:
        return Candidates(
            note="session_id is not a working-memory session id (a UUID from "
            "POST /api/memory/working/sessions)"
        )
    try:
        recent = working.recent_items(db, principal, session_id, max_chars=budget)
    except NotFound:
        return Candidates(note=f"working-memory session {session_id} not found")
    items = [
        Candidate(
            source="working",
            ref=f"working_item:{session_id}/{item.seq}",
            title=_title(item),
            content=item.content,
        )
        for item in recent.items
    ]
    return Candidates(items=items, unread=recent.total - len(items), newest_first=True)
