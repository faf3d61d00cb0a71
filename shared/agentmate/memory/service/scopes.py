"""Scopes: the ones in use (so agents reuse keys), and the nearest ones when a scoped read finds nothing.

Scope keys are exact: ``octo/widgets``, ``Octo/Widgets`` and ``octo/widgets/`` are three scopes. A scoped search or
list that finds nothing therefore names the existing keys the caller probably meant, instead of an empty answer
that reads as "nothing remembered".
"""

from __future__ import annotations

from uuid import UUID

from agentmate.core.db import Conn, TenantTransactions
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.schemas import ScopePage, ScopeRef, ScopeSummary

SCOPES_NOTE = (
    "Reuse an existing scope before inventing a new key, so every agent's memories of one thing meet. Scope keys "
    "are exact (case and slashes count; only surrounding spaces are trimmed). Conventions: repository → owner/repo, project → its name, "
    "agent → agent id, session → session id; global only for facts that hold everywhere."
)
MAX_NEAREST = 10


def list_scopes(db: TenantTransactions, principal: Principal, page: PageParams) -> ScopePage:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.scopes(conn, account_id=principal.account_id, limit=page.limit, offset=page.offset)
    return ScopePage(
        items=[ScopeSummary(**r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
        note=SCOPES_NOTE,
    )


def _folded(key: str) -> str:
    return key.strip().strip("/").strip().casefold()


def _segments(key: str) -> set[str]:
    return {s.strip().casefold() for s in key.split("/") if s.strip()}


def nearest(conn: Conn, account_id: UUID, scope_type: str, scope_key: str) -> list[ScopeRef]:
    """Existing scope keys that equal ``scope_key`` after case folding and trimming slashes/whitespace (first),
    or share a path segment with it; the exact scope itself is never suggested."""
    folded, segments = _folded(scope_key), _segments(scope_key)
    same: list[ScopeRef] = []
    related: list[ScopeRef] = []
    for row in repo.scope_keys(conn, account_id=account_id):
        if (row["scope_type"], row["scope_key"]) == (scope_type, scope_key):
            continue
        ref = ScopeRef(scope_type=row["scope_type"], scope_key=row["scope_key"])
        if _folded(row["scope_key"]) == folded:
            same.append(ref)
        elif segments & _segments(row["scope_key"]):
            related.append(ref)
    # The same scope type first: a wrong key is likelier than a wrong type.
    ordered = sorted(same, key=lambda r: r.scope_type != scope_type) + sorted(
        related, key=lambda r: r.scope_type != scope_type
    )
    return ordered[:MAX_NEAREST]


def new_scope_warning(
    conn: Conn, account_id: UUID, scope_type: str, scope_key: str, new_scope: bool
) -> str | None:
    """For a row just written that opened a scope (``new_scope``): when the scope's key differs from an existing
    one only in case, slashes or spaces, say so, before memories of one thing are split between two keys."""
    if not new_scope:
        return None
    twins = [
        f"{r.scope_type}:{r.scope_key}"
        for r in nearest(conn, account_id, scope_type, scope_key)
        if r.scope_type == scope_type and _folded(r.scope_key) == _folded(scope_key)
    ]
    if not twins:
        return None
    return (
        f"this opened a new scope {scope_type}:{scope_key}, but {', '.join(twins)} already "
        "exists and differs only in case, slashes or spaces; scope keys are exact, so reuse that one unless "
        "this really is another scope"
    )


def nearest_if_empty(
    conn: Conn, account_id: UUID, total: int, scope_type: str | None, scope_key: str | None
) -> list[ScopeRef] | None:
    """``nearest`` for a read filtered by a scope key that found nothing; None when it does not apply."""
    if total or scope_type is None or not scope_key:
        return None
    return nearest(conn, account_id, scope_type, scope_key)
