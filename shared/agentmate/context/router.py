"""``POST /api/context/pack``: route scope memory:r; every layer is authorised again on its own."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentmate.api.deps import DbDep, MemoryRead, RetrievalDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.context.schemas import Pack, PackRequest
from agentmate.core.lazy import lazy_module

if TYPE_CHECKING:
    from agentmate.context import service
else:  # the six layers and the domains they read load on the first pack (cold start, docs/benchmarks.md)
    service = lazy_module("agentmate.context.service")

router = Router(prefix="/api/context", tags=["context"], responses=PROBLEM_RESPONSES)


@router.post("/pack", response_model=Pack)
def context_pack(body: PackRequest, principal: MemoryRead, db: DbDep, retrieval: RetrievalDep) -> Pack:
    """Assemble a budgeted, cited context for a task from six layers (SKILL, KNOWLEDGE, MEMORY, FACTS, WORKING,
    TASK). Needs memory:r; each layer also needs its own scope (skills:r, knowledge:r, memory:r, todos:r and/or
    notes:r): a layer the key may not read, or one that fails, comes back empty with a note, echoed in warnings."""
    return service.pack(db, retrieval, principal, body)
