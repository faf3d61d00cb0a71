"""SQL of the per-account limits: admission (``limits_admit``, migration 0097; folded into the credential lookup
for REST requests, 0102), lease release, usage counts."""

from __future__ import annotations

from typing import Any, NamedTuple
from uuid import UUID

import psycopg
from psycopg.rows import class_row

from agentmate.core.db import Conn, Sent


class Terms(NamedTuple):
    """What one request asks of ``limits_admit``: the rate (``per_minute`` 0 = off) and, for an expensive request,
    a lease on one of ``slots`` (0 = none) held at most ``lease_s``."""

    per_minute: int
    burst: int
    slots: int
    lease_s: int


NO_LIMITS = Terms(0, 0, 0, 0)


class Admission(NamedTuple):
    retry_after: int
    wait_ms: int
    refused_by: str | None
    lease_id: UUID | None


ADMITTED = Admission(0, 0, None, None)


class UsageRow(NamedTuple):
    memories: int
    working_items: int
    package_bytes: int
    sources: int
    builds_today: int


def admit(conn: Conn, *, account_id: UUID, terms: Terms) -> Admission:
    """The request's admission (``limits_admit``), as a statement of its own: an admitted request's writes commit
    without waiting for the WAL (migration 0104), which holds only because nothing else shares its transaction."""
    with conn.cursor(row_factory=class_row(Admission)) as cur:
        row = cur.execute(
            "SELECT retry_after, wait_ms, refused_by, lease_id FROM limits_admit(%(account_id)s, %(per_minute)s, "
            "%(burst)s, %(slots)s, %(lease_s)s)",
            {"account_id": account_id, **terms._asdict()},
        ).fetchone()
    assert row is not None  # the function always answers one row
    return row


def release(conn: Conn, *, account_id: UUID, lease_id: UUID) -> None:
    conn.execute(
        "SELECT limits_release(%(account_id)s, %(lease_id)s)",
        {"account_id": account_id, "lease_id": lease_id},
    )


# Inside a tenant transaction: row-level security keeps every count to the caller's account.
_USAGE = """
SELECT (SELECT coalesce(sum(memories), 0)::bigint FROM account_usage) AS memories,
       (SELECT coalesce(sum(working_items), 0)::bigint FROM account_usage) AS working_items,
       (SELECT coalesce(sum(total_bytes), 0) FROM knowledge_source_revisions)
         + (SELECT coalesce(sum(total_bytes), 0) FROM skill_source_revisions) AS package_bytes,
       (SELECT count(*) FROM knowledge_sources) + (SELECT count(*) FROM skill_sources) AS sources,
       (SELECT count(*) FROM knowledge_builds WHERE queued_at > now() - interval '1 day') AS builds_today
"""


def usage(conn: Conn) -> UsageRow:
    with conn.cursor(row_factory=class_row(UsageRow)) as cur:
        row = cur.execute(_USAGE).fetchone()
    assert row is not None
    return row


# A row waits for its vector when it ``failed``, or is still ``pending`` this long after its write (its indexer
# was lost): retrieval's own definition (``retrieval.repository._WAITING``, STALE_PENDING_SECONDS; a unit test
# keeps the two equal: core may not import retrieval). The status terms use the partial index of migration 0095,
# so the count costs the account's waiting rows only (none, outside an outage).
STALE_PENDING_SECONDS = 300
_WAITING = """SELECT namespace, count(*) AS n FROM retrieval_documents
              WHERE account_id = %(account_id)s AND status IN ('failed', 'pending')
                AND (status = 'failed' OR updated_at < now() - make_interval(secs => %(stale)s))
              GROUP BY namespace"""


def waiting_by_namespace(conn: Conn, *, account_id: UUID) -> dict[str, int]:
    """The account's retrieval rows still waiting for their vector, per namespace (absent: none)."""
    rows = conn.execute(_WAITING, {"account_id": account_id, "stale": STALE_PENDING_SECONDS}).fetchall()
    return {r["namespace"]: int(r["n"]) for r in rows}


# Quota counts stop at the quota (``LIMIT %(cap)s``): a check costs at most the quota's rows, whatever is stored.
# The store paths' quotas read counters instead.
# Inside a tenant transaction (row-level security keeps each count to the caller's account); the account_id term
# lets the planner use each table's (account_id, ...) index.
_UP_TO = {
    "sources": """SELECT (SELECT count(*) FROM (SELECT 1 FROM knowledge_sources LIMIT %(cap)s) k)
                       + (SELECT count(*) FROM (SELECT 1 FROM skill_sources LIMIT %(cap)s) s) AS used""",
    "builds_per_day": """SELECT count(*) AS used FROM (SELECT 1 FROM knowledge_builds
                          WHERE queued_at > now() - interval '1 day' LIMIT %(cap)s) b""",
    # Kept by triggers (migration 0098: a few shard rows per account), not counted: they are checked on every
    # store, and a bounded count of 100,000 rows cost 20-30 ms (bench/quota_cost.py).
    "memories": "SELECT coalesce(sum(memories), 0) AS used FROM account_usage WHERE account_id = %(account_id)s",
    "working_items": """SELECT coalesce(sum(working_items), 0) AS used FROM account_usage
                         WHERE account_id = %(account_id)s""",
    # A sum, not a count: one row per stored package revision (a push or sync that changed something), few
    # per source; the cap is not needed to bound it.
    "package_bytes": """SELECT (SELECT coalesce(sum(total_bytes), 0) FROM knowledge_source_revisions
                                WHERE account_id = %(account_id)s)
                             + (SELECT coalesce(sum(total_bytes), 0) FROM skill_source_revisions
                                WHERE account_id = %(account_id)s) AS used""",
}


def count_up_to(conn: Conn, quota: str, cap: int, account_id: UUID | None = None) -> int:
    """The tenant's rows (package bytes) against ``quota`` (a key of ``_UP_TO``), counted up to ``cap``.
    ``account_id``: the tenant's (the quotas whose query names it; row-level security restricts them anyway)."""
    return send_count_up_to(conn, quota, cap, account_id).result()


def send_count_up_to(conn: Conn, quota: str, cap: int, account_id: UUID | None = None) -> Sent[int]:
    """``count_up_to``, sent now and read later (a pipelined writer reads it with its writes)."""
    return Sent(conn.execute(_UP_TO[quota], {"cap": cap, "account_id": account_id}), _used)


def _used(cursor: psycopg.Cursor[Any]) -> int:
    row = cursor.fetchone()
    assert row is not None
    return int(row["used"])
