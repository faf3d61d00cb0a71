"""K4 routes: discover (a skill's knowledge contract against the K0 catalog) and resolution runs. Mounted with the
other knowledge routers in the knowledge function (functions/knowledge/app.py).
MCP twin: ``agentmate.mcp.tools.knowledge.discovery``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated
from uuid import UUID

from fastapi import Path, Query, Response

from agentmate.api.deps import (
    DbDep,
    IdempotencyKey,
    KnowledgeDiscover,
    KnowledgeRead,
    KnowledgeResolve,
    PageDep,
)
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.api.responses import created
from agentmate.core.lazy import lazy_module
from agentmate.core.pagination import Page
from agentmate.core.text import blank_to_none
from agentmate.knowledge.discovery.schemas import (
    DiscoverRequest,
    DiscoverResponse,
    ResolutionCreate,
    ResolutionRun,
    ResolutionSummary,
)

# The use cases load on the first discover or resolution call: discovery reads the skills domain's compiler and
# tables (readmodels/skill_contracts), which no other knowledge route needs at cold start.
if TYPE_CHECKING:
    from agentmate.knowledge.discovery import discover, resolutions
else:
    discover = lazy_module("agentmate.knowledge.discovery.discover")
    resolutions = lazy_module("agentmate.knowledge.discovery.resolutions")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)
RunId = Annotated[UUID, Path(description="A resolution run id")]


@router.post("/discover", response_model=DiscoverResponse)
def discover_knowledge(body: DiscoverRequest, principal: KnowledgeDiscover, db: DbDep) -> Response:
    """Resolve a skill version's compiled knowledge contract against this account's K0 catalog: per requirement a
    status (matched, ambiguous, no_metadata_match, no_authorized_knowledge, pinned_resolved, pinned_missing), ranked
    candidates with the matched terms, the budgets, and a discovery_fingerprint to record; scoped_discover is 501.
    skill_version_id must name a version of this account whose SKILL.md declares a knowledge: contract (400 naming
    the field; 409 while it has no current compiled artifact). Needs knowledge:r and skills:r."""
    # Serialised once here: FastAPI would dump, re-validate and dump again a response that can carry 8 x 50
    # candidates (bench/knowledge_discover_bench.py); response_model still documents the shape.
    return Response(discover.discover(db, principal, body).model_dump_json(), media_type="application/json")


@router.post("/resolutions", status_code=201, response_model=ResolutionRun)
def record_resolution(
    body: ResolutionCreate, principal: KnowledgeResolve, db: DbDep, idempotency_key: IdempotencyKey
) -> Response:
    """Record what one execution resolved for one requirement (append-only): contract_identity is filled by the
    server, every selected base is verified in this account, candidates/retrieved/citations are bounded
    references; selected may be empty. skill_version_id, requirement_id and every selected source/revision must
    exist (in this account, in the contract): else a 400 naming the field. An idempotency_key replay returns the
    original run with 200, a disagreeing one is 409. Needs knowledge:rw and skills:r."""
    return created(resolutions.record(db, principal, body, idempotency_key), replay_status=200)


@router.get("/resolutions", response_model=Page[ResolutionSummary])
def list_resolutions(
    principal: KnowledgeRead,
    db: DbDep,
    page: PageDep,
    skill_version_id: Annotated[UUID | None, Query(description="Runs of this skill version")] = None,
    session_id: Annotated[str | None, Query(max_length=200, description="Runs of this agent session")] = None,
    source_id: Annotated[
        UUID | None, Query(description="Runs whose selected set contains this source")
    ] = None,
) -> Page[ResolutionSummary]:
    """Resolution run summaries, newest first, with candidate/selected/retrieved/citation counts instead of the
    evidence arrays."""
    return resolutions.list_runs(
        db,
        principal,
        page,
        skill_version_id=skill_version_id,
        session_id=blank_to_none(session_id),
        source_id=source_id,
    )


@router.get("/resolutions/{run_id}", response_model=ResolutionRun)
def get_resolution(run_id: RunId, principal: KnowledgeRead, db: DbDep) -> ResolutionRun:
    """One resolution run in full: contract identity, discovery anchor, candidates, verified selections,
    retrieved references and citations."""
    return resolutions.get_run(db, principal, run_id)
