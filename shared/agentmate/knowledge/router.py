"""Knowledge registry routes (spec/001 "Knowledge"): sources, revisions, sync, snapshots, documents, catalog.
Mounted with the other knowledge routers in the knowledge function (functions/knowledge/app.py)."""

from __future__ import annotations

from fastapi import APIRouter

from agentmate.api.deps import DbDep, KnowledgeRead, PageDep
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.pagination import Page
from agentmate.knowledge import service
from agentmate.packages.models import Source
from agentmate.packages.service import Actor

router = APIRouter(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)


@router.get("/sources", response_model=Page[Source])
def list_sources(principal: KnowledgeRead, db: DbDep, page: PageDep) -> Page[Source]:
    """List knowledge sources, newest first."""
    items, total = service.list_sources(db, Actor.of(principal), page.limit, page.offset)
    return Page[Source](items=items, total=total, limit=page.limit, offset=page.offset)
