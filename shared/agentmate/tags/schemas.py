"""The tag roster's request vocabulary and answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agentmate.core.pagination import Page
from agentmate.core.records import TagCount

TagModule = Literal["todos", "notes", "reports", "bookmarks", "expenses"]
TagModuleChoice = Literal["all", "todos", "notes", "reports", "bookmarks", "expenses"]

# The read scope each module's roster needs (the REST route and each <module>_tags MCP tool check the same).
SCOPES: dict[TagModule, str] = {
    "todos": "todos:r",
    "notes": "notes:r",
    "reports": "reports:r",
    "bookmarks": "bookmarks:r",
    "expenses": "expenses:r",
}


class Unreadable(BaseModel):
    """A module left out of ``module=all`` because the key may not read it."""

    module: TagModule
    required_scope: str
    note: str


class TagRoster(BaseModel):
    """Per module, one page of its tags (``{items: [{tag, count}], total, limit, offset}``), most used first, then
    by tag; ``limit``/``offset`` page each module's roster alike. ``skipped`` names the modules ``module=all`` left
    out because the key lacks their read scope."""

    module: TagModuleChoice
    modules: dict[TagModule, Page[TagCount]]
    skipped: list[Unreadable] = Field(default_factory=list)
