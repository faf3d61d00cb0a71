"""K0 catalog route (spec/001 "GET /api/knowledge/catalog"), mounted right after the source routes in the
knowledge function (functions/knowledge/app.py).
MCP twin: ``agentmate.mcp.tools.knowledge.catalog``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import Query

from agentmate.api.deps import DbDep, KnowledgeRead, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.core.lazy import lazy_module
from agentmate.core.text import blank_to_none
from agentmate.knowledge.catalog.schemas import MAX_CATALOG_QUERY, MAX_DOMAIN, KnowledgeCatalog

if TYPE_CHECKING:
    from agentmate.knowledge.catalog import service as k0
    from agentmate.packages import service as packages
else:  # the use case loads on the first request (cold start, docs/benchmarks.md "Issue 26: cold start")
    k0 = lazy_module("agentmate.knowledge.catalog.service")
    packages = lazy_module("agentmate.packages.service")

router = Router(prefix="/api/knowledge", tags=["knowledge"], responses=PROBLEM_RESPONSES)


@router.get("/catalog", response_model=KnowledgeCatalog)
def catalog(
    principal: KnowledgeRead,
    db: DbDep,
    page: PageDep,
    query: Annotated[
        str | None,
        Query(
            max_length=MAX_CATALOG_QUERY,
            description="Substring of the name or description (case-insensitive)",
        ),
    ] = None,
    domain: Annotated[str | None, Query(max_length=MAX_DOMAIN, description="Exact owning domain")] = None,
) -> KnowledgeCatalog:
    """K0 cards of the sources with an active revision, ordered by name (stable pages), plus the account's
    domain roster with collection counts."""
    return k0.catalog(db, packages.Actor.of(principal), page, blank_to_none(query), blank_to_none(domain))
