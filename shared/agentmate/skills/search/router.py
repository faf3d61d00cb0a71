"""Skill card indexing and skill search (spec/001 "Skills").
MCP face: ``agentmate.mcp.tools.skills.registry``."""

from typing import TYPE_CHECKING

from fastapi import Response
from fastapi.responses import JSONResponse

from agentmate.api.deps import DbDep, RetrievalDep, SkillsRead, SkillsWrite
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.skills.http import QUEUED, no_store, queued_or_done
from agentmate.skills.search.schemas import (
    SkillIndexReport,
    SkillIndexRequest,
    SkillSearchRequest,
    SkillSearchResponse,
)

if TYPE_CHECKING:
    from agentmate.skills.search import service as search_service
else:  # the use cases load on the first request that needs them
    search_service = lazy_module("agentmate.skills.search.service")

router = Router(prefix="/api/skills", tags=["skills"], responses=PROBLEM_RESPONSES)
Reader = SkillsRead
Writer = SkillsWrite


@router.post(
    "/index",
    response_model=SkillIndexReport,
    responses={202: {"model": SkillIndexReport, "description": QUEUED}},
)
def index_active(
    principal: Writer, db: DbDep, rt: RetrievalDep, body: SkillIndexRequest | None = None
) -> JSONResponse:
    """Index active skills' L0 cards into skill search (cards only: instructions never enter the index): inline
    up to 200 versions, otherwise 202 with the job that indexes them all."""
    return queued_or_done(search_service.index_active(db, rt, principal, body or SkillIndexRequest()))


@router.post("/search", response_model=SkillSearchResponse)
def search(
    body: SkillSearchRequest, principal: Reader, db: DbDep, rt: RetrievalDep, response: Response
) -> SkillSearchResponse:
    """Hybrid search over indexed active cards; include_content=true loads each hit's L1 from Postgres."""
    if body.include_content:
        no_store(response)
    return search_service.search(db, rt, principal, body)
