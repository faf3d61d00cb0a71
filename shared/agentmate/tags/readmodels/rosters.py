"""Read model over the record domains, for the tag roster: each module's read scope and its ``tags`` use case.

This is the only module of ``agentmate.tags`` that reads another domain; it imports each record domain's
service and nothing else of it (``[tool.importlinter]`` lists one line per domain).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentmate.bookmarks import service as bookmarks
from agentmate.core.db import TenantTransactions
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.records import TagCount
from agentmate.expenses import service as expenses
from agentmate.notes import service as notes
from agentmate.reports import service as reports
from agentmate.tags.schemas import SCOPES, TagModule
from agentmate.todos import service as todos

TagsUseCase = Callable[[TenantTransactions, Principal, PageParams], Page[TagCount]]


@dataclass(frozen=True)
class Roster:
    scope: str  # the module's read scope: the roster shows record tags, so it needs what reading them needs
    tags: TagsUseCase


# In the order GET /api/tags?module=all lists them (the order of agentmate.tags.schemas.TagModule).
ROSTERS: dict[TagModule, Roster] = {
    "todos": Roster(SCOPES["todos"], todos.tags),
    "notes": Roster(SCOPES["notes"], notes.tags),
    "reports": Roster(SCOPES["reports"], reports.tags),
    "bookmarks": Roster(SCOPES["bookmarks"], bookmarks.tags),
    "expenses": Roster(SCOPES["expenses"], expenses.tags),
}
