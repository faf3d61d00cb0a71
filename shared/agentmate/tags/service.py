"""The tag roster use case: one module's tags, or every module the caller may read (each module's roster comes from
that module's own service, under its own read scope)."""

from __future__ import annotations

from agentmate.core.db import TenantTransactions
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.records import TagCount
from agentmate.tags.readmodels.rosters import ROSTERS
from agentmate.tags.schemas import TagModule, TagModuleChoice, TagRoster, Unreadable


def roster(
    db: TenantTransactions, principal: Principal, page: PageParams, module: TagModuleChoice = "all"
) -> TagRoster:
    """``module`` one of the record modules: its roster, or 403 naming its read scope. ``all``: the roster of
    every module the caller may read, and a note naming the scope of each other one."""
    if module != "all":
        principal.require(ROSTERS[module].scope)
        return TagRoster(module=module, modules={module: ROSTERS[module].tags(db, principal, page)})
    modules: dict[TagModule, Page[TagCount]] = {}
    skipped: list[Unreadable] = []
    for name, each in ROSTERS.items():
        if principal.can(each.scope):
            modules[name] = each.tags(db, principal, page)
        else:
            skipped.append(
                Unreadable(
                    module=name,
                    required_scope=each.scope,
                    note=f"this key lacks {each.scope}; a key with it lists the {name} tags",
                )
            )
    return TagRoster(module="all", modules=modules, skipped=skipped)
