"""Todo use cases. Each runs in one tenant transaction."""

from __future__ import annotations

from agentmate.core import records
from agentmate.core.db import TenantTransactions
from agentmate.core.errors import invalid
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.todos import repository as repo
from agentmate.todos.schemas import STATUSES, Todo

# create / get / update / delete: the shared record use cases (agentmate.core.records).
_records = records.RecordService(resource="todo", model=Todo, repo=repo, id_field="todo_id")
create = _records.create
get = _records.get
update = _records.update
delete = _records.delete
tags = _records.tags  # the tag roster: GET /api/tags?module=todos, the todos_tags tool


def search(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    status: str | None = None,
    tags: list[str] | None = None,
    q: str | None = None,
) -> Page[Todo]:
    if status is not None and status not in STATUSES:
        raise invalid("status", "unknown status", list(STATUSES))
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search(
            conn,
            account_id=principal.account_id,
            status=status,
            tags=tags or [],
            q=q,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[Todo](items=[Todo(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)


def containing_any_of(
    db: TenantTransactions, principal: Principal, substrings: list[str], limit: int
) -> list[Todo]:
    """At most ``limit`` todos whose text contains any of ``substrings`` (case-insensitive), those containing the most
    first, then newest: the context pack ranks them word by word (``retrieval.bm25``)."""
    with db.tenant(principal.account_id) as conn:
        rows = repo.containing_any_of(
            conn, account_id=principal.account_id, substrings=substrings, limit=limit
        )
    return [Todo(**r) for r in rows]
