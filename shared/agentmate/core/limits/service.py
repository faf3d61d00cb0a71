"""Admission of one authenticated request against its account's limits, and the usage report.

``admit`` runs one statement (``limits_admit``): the rate limiter, and for an expensive request (``expensive``)
also a lease on one of the account's concurrent slots, released by ``release`` when the request ends (a lease
whose process died expires by itself after ``LIMIT_EXPENSIVE_LEASE_S``). A REST request pays no statement of its
own for it: its credential lookup admits it in the same statement (``terms`` in, ``settle`` on the answer;
``auth.credentials.authenticate_admitted``, migration 0102). A refusal is ``RateLimited`` (429 with
``Retry-After`` over REST, a tool error over MCP) whose body names the limit (``limit``, ``limit_value``,
``retry_after``).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, NoReturn
from uuid import UUID

import anyio

from agentmate.core.db import Conn, Database, TenantTransactions
from agentmate.core.errors import Conflict, RateLimited
from agentmate.core.limits import repository as repo
from agentmate.core.limits.settings import LimitSettings

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.core.limits.schemas import Quota, Usage

EXPENSIVE_SEGMENTS = frozenset({"search", "pack", "sync"})
"""The last path segment of an expensive REST route (``/api/memory/search``, ``/api/context/pack``,
``/api/knowledge/sources/{id}/sync``)."""


def is_expensive_path(path: str) -> bool:
    return path.rstrip("/").rsplit("/", 1)[-1] in EXPENSIVE_SEGMENTS


def is_expensive_tool(name: str) -> bool:
    """The MCP twins of the expensive routes: ``*_search``, ``*_sync``, ``context_pack``."""
    return name.endswith(("_search", "_sync")) or name == "context_pack"


def _refusal(settings: LimitSettings, refused_by: str, retry_after: int) -> RateLimited:
    if refused_by == "concurrent_expensive_requests":
        value = settings.concurrent_expensive
        what = f"{value} expensive requests (search, pack, sync) at once per account"
    else:
        value = settings.requests_per_minute
        what = f"{value} requests per minute per account (burst {settings.request_burst})"
    exc = RateLimited(
        f"rate limit {refused_by} reached: {what}; retry in {retry_after} s", retry_after=retry_after
    )
    exc.extra = {"limit": refused_by, "limit_value": value, "retry_after": exc.retry_after}
    return exc


def terms(settings: LimitSettings, *, expensive: bool = False) -> repo.Terms:
    """What a request asks of the limits (``repo.NO_LIMITS`` when none applies to it)."""
    slots = settings.concurrent_expensive if expensive else 0
    if settings.requests_per_minute == 0 and slots == 0:
        return repo.NO_LIMITS
    return repo.Terms(settings.requests_per_minute, settings.request_burst, slots, settings.expensive_lease_s)


def admit(
    db: Database,
    settings: LimitSettings,
    account_id: UUID,
    *,
    expensive: bool = False,
    credential: str | None = None,
) -> UUID | None:
    """Count one request of the account; raise ``RateLimited`` when a limit refuses it. Returns the lease to
    ``release`` for an expensive request (None otherwise, or when that limit is off). ``credential``: the raw
    credential the request authenticated with; a rate refusal remembers it (``known_refusal``)."""
    asked = terms(settings, expensive=expensive)
    if asked == repo.NO_LIMITS:
        return None
    known = _blocked_for(account_id)
    if known is not None:  # this process saw the shared state refuse the account until then: no statement
        raise _refusal(settings, "requests_per_minute", known)
    with db.single_statement() as conn:
        row = repo.admit(conn, account_id=account_id, terms=asked)
    return settle(settings, account_id, row, credential)


def settle(
    settings: LimitSettings, account_id: UUID, row: repo.Admission, credential: str | None
) -> UUID | None:
    """The answer of ``limits_admit`` (alone, or inside a credential lookup): raise ``RateLimited`` naming the
    limit that refused, remembering a rate refusal for ``known_refusal``; else the lease, if one was taken."""
    if row.refused_by is not None:
        if row.refused_by == "requests_per_minute":
            _remember_blocked(account_id, row.wait_ms, credential)
        raise _refusal(settings, row.refused_by, row.retry_after)
    return row.lease_id


# Accounts this process saw refused by the rate, until when (monotonic). The shared state only moves an account's
# next admission later, never earlier, so until then every request of it is refused without asking Postgres: a
# client that ignores Retry-After costs the database nothing more. Bounded: cleared whole past _BLOCKED_MAX.
_blocked: dict[UUID, float] = {}
_BLOCKED_MAX = 10_000


def _blocked_for(account_id: UUID) -> int | None:
    until = _blocked.get(account_id)
    if until is None:
        return None
    left = until - time.monotonic()
    if left <= 0:
        _blocked.pop(account_id, None)
        return None
    return math.ceil(left)


def _remember_blocked(account_id: UUID, wait_ms: int, credential: str | None) -> None:
    """``wait_ms``: the shared state's exact wait (rounded down), so this process never refuses past it."""
    if len(_blocked) >= _BLOCKED_MAX or len(_blocked_credentials) >= _BLOCKED_MAX:
        _blocked.clear()
        _blocked_credentials.clear()
    if wait_ms > 0:
        until = time.monotonic() + wait_ms / 1000
        _blocked[account_id] = until
        if credential:
            _blocked_credentials[_fingerprint(credential)] = until


# The credentials of those accounts (by their SHA-256), so a transport can refuse a request of theirs before
# authenticating it again: a client that ignores Retry-After then costs neither statement nor framework work.
_blocked_credentials: dict[str, float] = {}


def _fingerprint(credential: str) -> str:
    return hashlib.sha256(credential.encode()).hexdigest()


def known_refusal(settings: LimitSettings, credential: str | None) -> RateLimited | None:
    """The refusal this process already knows for a request with ``credential`` (one that authenticated before
    and whose account the rate refused until later), else None."""
    if not _blocked_credentials or not credential:
        return None
    key = _fingerprint(credential)
    until = _blocked_credentials.get(key)
    if until is None:
        return None
    left = until - time.monotonic()
    if left <= 0:
        _blocked_credentials.pop(key, None)
        return None
    return _refusal(settings, "requests_per_minute", math.ceil(left))


# Refusals being held right now (one event loop per process): past _HOLD_MAX a refusal is answered at once, so
# holding costs a bounded number of parked requests, never a queue that grows with the flood.
_held = 0
_HOLD_MAX = 512


async def hold_refusal(settings: LimitSettings, retry_after: float) -> None:
    """Wait ``min(LIMIT_REFUSAL_HOLD_MS, retry_after)`` before a 429 is sent (no CPU, no connection to Postgres,
    no worker thread: a parked coroutine)."""
    global _held
    hold = min(settings.refusal_hold_ms / 1000, retry_after)
    if hold <= 0 or _held >= _HOLD_MAX:
        return
    _held += 1
    try:
        await anyio.sleep(hold)
    finally:
        _held -= 1


def held_refusals() -> int:
    return _held


def release(db: Database, account_id: UUID, lease_id: UUID) -> None:
    with db.single_statement() as conn:
        repo.release(conn, account_id=account_id, lease_id=lease_id)


QuotaName = Literal["sources", "builds_per_day", "memories", "working_items", "package_bytes"]
"""A stored-volume quota: ``LIMIT_MAX_<QUOTA>``, reported at ``GET /api/auth/usage`` under the same name."""

_QUOTA_WHAT: dict[str, str] = {
    "sources": "sources (knowledge and skill sources together)",
    "builds_per_day": "wiki builds a day",
    "memories": "memory entries (any status: only deleting one frees room)",
    "working_items": "working-memory items (all sessions together)",
    "package_bytes": "bytes of stored packages (every revision of knowledge and skill sources together)",
}


def require_room(
    conn: Conn,
    quota: QuotaName,
    limit: int,
    *,
    adding: int = 1,
    account_id: UUID | None = None,
) -> None:
    """Inside the creating use case's tenant transaction, before the insert and only when it would add (so a
    replay, an upsert of an existing row or anything else that inserts nothing is never refused): 409 naming the
    quota when the account's usage plus ``adding`` (rows; bytes for ``package_bytes``) would pass ``limit``
    (0 = no quota). A batch that would cross it is refused whole. ``account_id``: the tenant's (the count then uses
    the table's account index). A writer that learns only from its insert whether it added anything (a memory
    deduplicated onto an existing one) uses ``room_check`` instead."""
    if limit <= 0 or adding <= 0:
        return
    used = repo.count_up_to(conn, quota, limit, account_id)
    if used + adding <= limit:
        return
    _refuse(quota, limit, used, adding)


def room_check(
    conn: Conn, quota: QuotaName, limit: int, *, account_id: UUID | None = None
) -> Callable[[int], None]:
    """``require_room`` for a pipelined writer: the count is sent now, ahead of the writes that follow it in the
    same round trip, and the check it returns reads it once the writes have added ``adding`` (call it only when they
    added something: what adds nothing is never refused). A refusal raised after the writes rolls them back with
    the transaction, so nothing of the request is stored, as with ``require_room``."""
    if limit <= 0:
        return lambda adding: None
    sent = repo.send_count_up_to(conn, quota, limit, account_id)

    def check(adding: int) -> None:
        used = sent.result()
        if used + adding > limit:
            _refuse(quota, limit, used, adding)

    return check


def _refuse(quota: QuotaName, limit: int, used: int, adding: int) -> NoReturn:
    if adding == 1 and quota != "package_bytes":
        why = f"the account holds {used}"
    else:
        why = f"the account holds {used} and this request would add {adding} new; nothing of it was stored"
    raise Conflict(
        f"quota max_{quota} reached: {limit} {_QUOTA_WHAT[quota]} per account (LIMIT_MAX_{quota.upper()}); "
        f"{why}; see GET /api/auth/usage",
        extra={"limit": f"max_{quota}", "limit_value": limit, "used": used},
    )


def _quota(used: int, limit: int) -> Quota:
    from agentmate.core.limits.schemas import Quota

    return Quota(used=used, limit=limit or None)


def usage(db: TenantTransactions, settings: LimitSettings, account_id: UUID) -> Usage:
    """What the account stores against its quotas, and its request limits. (The report's models load here, on
    first use: every request imports this module, few ask for the report.)"""
    from agentmate.core.limits.schemas import IndexingWaiting, RateLimits, Usage

    with db.tenant(account_id) as conn:
        row = repo.usage(conn)
        waiting = repo.waiting_by_namespace(conn, account_id=account_id)
    return Usage(
        memories=_quota(row.memories, settings.max_memories),
        working_items=_quota(row.working_items, settings.max_working_items),
        package_bytes=_quota(row.package_bytes, settings.max_package_bytes),
        sources=_quota(row.sources, settings.max_sources),
        builds_per_day=_quota(row.builds_today, settings.max_builds_per_day),
        rate=RateLimits(
            requests_per_minute=settings.requests_per_minute or None,
            request_burst=settings.request_burst,
            concurrent_expensive=settings.concurrent_expensive or None,
            running_jobs=settings.running_jobs or None,
        ),
        indexing=IndexingWaiting(
            memory=waiting.get("memory", 0),
            knowledge=waiting.get("knowledge", 0),
            wiki=waiting.get("knowledge_wiki", 0),
            skills=waiting.get("skills", 0),
        ),
    )
