"""``GET /api/tags``: the tag roster of the record modules (served by the auth function, beside /api/health). Its
MCP face is one ``<module>_tags`` tool per record module (``mcp/tools/todos.py`` … ``expenses.py``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from agentmate.api.deps import CurrentPrincipal, DbDep, PageDep
from agentmate.api.endpoints import Router
from agentmate.api.errors import PROBLEM_RESPONSES
from agentmate.tags.schemas import SCOPES, TagModuleChoice, TagRoster

router = Router(prefix="/api/tags", tags=["tags"], responses=PROBLEM_RESPONSES)

# The scope is the module's: declared per value of ``module`` (tests/e2e/test_mcp_parity.py reads it for the
# <module>_tags tools' REST twins; tests/integration/test_scope_matrix.py checks each against the table).
SCOPES_BY_MODULE = {"x-required-scopes-by-module": {module: [scope] for module, scope in SCOPES.items()}}


@router.get("", response_model=TagRoster, openapi_extra=SCOPES_BY_MODULE)
def list_tags(
    principal: CurrentPrincipal,
    db: DbDep,
    page: PageDep,
    module: Annotated[
        TagModuleChoice,
        Query(
            description="One record module (needs its read scope, e.g. todos:r; without it a 403 names the "
            "scope), or all: every module the key may read, the others listed under skipped with the scope "
            "they need"
        ),
    ] = "all",
) -> TagRoster:
    """Which tags exist, before filtering a list by one: per module, each tag with the number of records
    carrying it, most used first, then by tag; limit/offset page each module's roster."""
    from agentmate.tags import (
        service,
    )  # on first use: the auth function's cold start does not load the domains

    return service.roster(db, principal, page, module)
