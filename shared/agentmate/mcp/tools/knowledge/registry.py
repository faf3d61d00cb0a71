"""Knowledge registry tools: sources, sync, documents and the catalog, over ``agentmate.knowledge.service``
(the same use cases and scopes as the REST routes of ``agentmate.knowledge.router``)."""

from __future__ import annotations

from agentmate.core.pagination import DEFAULT_LIMIT, Page, PageParams
from agentmate.knowledge import service
from agentmate.mcp.context import db, principal
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools
from agentmate.packages.models import Source
from agentmate.packages.service import Actor


@tools.tool("knowledge:r", rest="GET /api/knowledge/sources", title="List knowledge sources")
def knowledge_sources_list(limit: Limit = DEFAULT_LIMIT, offset: Offset = 0) -> Page[Source]:
    """List the account's knowledge sources (git or local), newest first, with status and active revision."""
    page = PageParams(limit=limit, offset=offset)
    items, total = service.list_sources(db(), Actor.of(principal()), page.limit, page.offset)
    return Page[Source](items=items, total=total, limit=page.limit, offset=page.offset)
