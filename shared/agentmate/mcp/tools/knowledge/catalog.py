"""The K0 catalog tool on ``/mcp/knowledge``, over ``agentmate.knowledge.catalog.service`` (the same use case and
scope as the REST route).
REST twin: ``agentmate.knowledge.catalog.router``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from agentmate.core.pagination import DEFAULT_LIMIT, PageParams
from agentmate.core.text import blank_to_none
from agentmate.knowledge.catalog import service as catalog
from agentmate.knowledge.catalog.schemas import MAX_CATALOG_QUERY, MAX_DOMAIN, KnowledgeCatalog
from agentmate.mcp.context import db, principal
from agentmate.mcp.schemas import Limit, Offset
from agentmate.mcp.tools.knowledge._toolset import tools
from agentmate.packages.service import Actor


@tools.tool("knowledge:r", rest="GET /api/knowledge/catalog", title="List the knowledge catalog")
def knowledge_catalog_list(
    query: Annotated[
        str | None,
        Field(
            max_length=MAX_CATALOG_QUERY,
            description="Substring of the name or description (case-insensitive)",
        ),
    ] = None,
    domain: Annotated[
        str | None,
        Field(max_length=MAX_DOMAIN, description="Exact owning domain (see domains in the answer)"),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    offset: Offset = 0,
) -> KnowledgeCatalog:
    """K0 cards of the knowledge collections (sources with an active revision), ordered by name: manifest
    metadata, capabilities and languages, domain, document count, package hash, chunk index status; plus
    domains, the account's domain roster with collection counts. Requires knowledge:r."""
    return catalog.catalog(
        db(),
        Actor.of(principal()),
        PageParams(limit=limit, offset=offset),
        blank_to_none(query),
        blank_to_none(domain),
    )
