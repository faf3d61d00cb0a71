"""SQL for the memory journal, durable entries, evidence and feedback (migrations/0012_memory.sql).

Functions take the caller's tenant connection first; RLS scopes every statement and the explicit account_id
filters keep the (account_id, …) indexes in use.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict, cast
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn, Sent
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.memory.schemas import EntryStatus, ExtractionMethod, MemoryType, ScopeType, StoredEventType

EVENT_COLUMNS = (
    "id, scope_type, scope_key, session_id, sequence_no, event_type, payload, source_type, source_id, occurred_at, "
    "idempotency_key, content_hash, skill_version_id, created_at"
)
# Appended to an insert's RETURNING: whether the scope had no event and no entry before this row (the function's
# queries do not see the row the statement inserts). No extra round trip; migration 0083 says why a function.
_NEW_SCOPE = ", memory_scope_is_new(%(a)s, %(scope_type)s, %(scope_key)s) AS new_scope"

ENTRY_COLUMNS = (
    "id, scope_type, scope_key, memory_type, title, content, summary, content_hash, confidence, importance, status, "
    "metadata, ttl_at, last_accessed_at, valid_from, valid_to, superseded_by, source_event_id, extraction_method, "
    "extractor_version, access_count, useful_count, harmful_count, status_reason, superseded_by_deleted, created_at, "
    "updated_at"
)
EVIDENCE_COLUMNS = "id, memory_id, source_type, source_id, excerpt, metadata, created_at"
FEEDBACK_COLUMNS = (
    "id, memory_id, signal, reason, session_id, skill_version_id, metadata, observed_at, created_at"
)


class EventRow(TypedDict):
    """A ``memory_events`` row (``EVENT_COLUMNS``)."""

    id: UUID
    scope_type: ScopeType
    scope_key: str
    session_id: str
    sequence_no: int | None
    event_type: StoredEventType
    payload: dict[str, Any]
    source_type: str
    source_id: str
    occurred_at: datetime
    idempotency_key: str
    content_hash: str
    skill_version_id: UUID | None
    created_at: datetime


class ScopeUsageRow(TypedDict):
    """A scope in use with its counts (``scopes``)."""

    scope_type: ScopeType
    scope_key: str
    entry_count: int
    event_count: int
    last_activity_at: datetime | None


class _CountedScopeUsageRow(ScopeUsageRow, total=False):
    _total: int  # the page's total, popped before the rows go out


class ScopeKeyRow(TypedDict):
    """A keyed scope of the account and when it was last active (``scope_keys``)."""

    scope_type: ScopeType
    scope_key: str
    last_at: datetime


class RelinkRow(TypedDict):
    """An entry the deleted one had superseded, now pointing at the deleted one's successor."""

    entry_id: UUID
    superseded_by: UUID | None


class DeletedEntry(TypedDict):
    """What deleting an entry removed (evidence and feedback counts) and relinked."""

    evidence: int
    feedback: int
    relinked: list[RelinkRow]


class EntryRow(TypedDict):
    """A ``memory_entries`` row (``ENTRY_COLUMNS``)."""

    id: UUID
    scope_type: ScopeType
    scope_key: str
    memory_type: MemoryType
    title: str
    content: str
    summary: str
    content_hash: str
    confidence: float
    importance: float
    status: EntryStatus
    metadata: dict[str, Any]
    ttl_at: datetime | None
    last_accessed_at: datetime | None
    valid_from: datetime
    valid_to: datetime | None
    superseded_by: UUID | None
    source_event_id: UUID | None
    extraction_method: ExtractionMethod
    extractor_version: str
    access_count: int
    useful_count: int
    harmful_count: int
    status_reason: str
    superseded_by_deleted: UUID | None
    created_at: datetime
    updated_at: datetime


class EvidenceRow(TypedDict):
    """A ``memory_evidence`` row (``EVIDENCE_COLUMNS``)."""

    id: UUID
    memory_id: UUID
    source_type: str
    source_id: str
    excerpt: str
    metadata: dict[str, Any]
    created_at: datetime


class AccessRow(TypedDict):
    """An entry's access counters after a retrieval counted it."""

    id: UUID
    access_count: int
    last_accessed_at: datetime


# -- events ------------------------------------------------------------------------------------------------------

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "memory_events_event_type_check": (
            "event_type",
            "must be one of goal, observation, action, decision, issue, "
            "attempt, outcome, correction, checkpoint, note",
        ),
        "memory_events_idempotency_key_check": ("idempotency_key", "must be 1..512 characters"),
        "memory_events_payload_check": ("payload", "must be a JSON object"),
        "memory_events_scope_key_check": ("scope_key", "required unless scope_type is global"),
        "memory_events_scope_type_check": (
            "scope_type",
            "must be one of global, project, repository, agent, session",
        ),
        "memory_events_sequence_no_check": ("sequence_no", "must be at least 0 and needs a session_id"),
        "memory_events_source_check": (
            "source_id",
            "source_type and source_id are sent together or not at all",
        ),
        "memory_events_idempotency_key": ("idempotency_key", "already used by another event"),
        "memory_events_session_sequence_key": (
            "sequence_no",
            "is already used in this session by another event",
        ),
        "memory_events_skill_version_fkey": ("skill_version_id", "unknown skill version in this account"),
        "memory_entries_confidence_check": ("confidence", "must be between 0 and 1"),
        "memory_entries_importance_check": ("importance", "must be between 0 and 1"),
        "memory_entries_content_check": ("content", "must not be empty"),
        "memory_entries_counters_check": ("access_count", "counters must be at least 0"),
        "memory_entries_extraction_method_check": (
            "extraction_method",
            "must be one of explicit, rule, llm, dream",
        ),
        "memory_entries_memory_type_check": ("memory_type", "must be one of semantic, episodic, procedural"),
        "memory_entries_metadata_check": ("metadata", "must be a JSON object"),
        "memory_entries_not_self_superseded_check": ("superseded_by", "an entry cannot supersede itself"),
        "memory_entries_scope_key_check": ("scope_key", "required unless scope_type is global"),
        "memory_entries_scope_type_check": (
            "scope_type",
            "must be one of global, project, repository, agent, session",
        ),
        "memory_entries_status_check": (
            "status",
            "must be one of pending, active, superseded, invalidated, archived, expired",
        ),
        "memory_entries_validity_check": ("valid_to", "must not be before valid_from"),
        "memory_entries_status_reason_check": ("reason", "must be at most 2000 characters"),
        # insert_entry resolves this one with ON CONFLICT (deduplication); any other write that hits it is a conflict
        "memory_entries_active_content_key": (
            "content",
            "an active memory with this memory_type, scope and content already exists",
        ),
        "memory_entries_source_event_fkey": ("source_event_id", "unknown memory event in this account"),
        "memory_entries_superseded_by_fkey": ("superseded_by", "unknown memory entry in this account"),
        "memory_evidence_memory_fkey": ("memory_id", "unknown memory entry in this account"),
        "memory_evidence_metadata_check": ("evidence.metadata", "must be a JSON object"),
        "memory_evidence_source_id_check": ("evidence.source_id", "must be 1..1000 characters"),
        "memory_evidence_source_type_check": ("evidence.source_type", "must be 1..64 characters"),
        "memory_feedback_memory_fkey": ("memory_id", "unknown memory entry in this account"),
        "memory_feedback_metadata_check": ("metadata", "must be a JSON object"),
        "memory_feedback_once_key": ("signal", "this session already gave this signal for this memory"),
        "memory_feedback_reason_check": ("reason", "must be at most 2000 characters"),
        "memory_feedback_signal_check": ("signal", "must be one of useful, harmful"),
        "memory_feedback_skill_version_fkey": ("skill_version_id", "unknown skill version in this account"),
    }
)


def insert_event(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, data: dict[str, Any]
) -> tuple[EventRow, bool] | None:
    """Append an event: (the row, whether it opened a new scope: ``_NEW_SCOPE``); None when the idempotency key
    is already taken (the caller then compares hashes).

    A concurrent insert of the same key waits on the unique index and then sees the committed row.
    """
    row = conn.execute(
        f"""INSERT INTO memory_events (account_id, user_id, key_id, scope_type, scope_key, session_id, sequence_no,
                                       event_type, payload, source_type, source_id, occurred_at, idempotency_key,
                                       content_hash, skill_version_id)
            VALUES (%(a)s, %(u)s, %(k)s, %(scope_type)s, %(scope_key)s, %(session_id)s, %(sequence_no)s,
                    %(event_type)s, %(payload)s, %(source_type)s, %(source_id)s, coalesce(%(occurred_at)s, now()),
                    %(idempotency_key)s, %(content_hash)s, %(skill_version_id)s)
            ON CONFLICT (account_id, idempotency_key) DO NOTHING
            RETURNING {EVENT_COLUMNS}{_NEW_SCOPE}""",
        {**data, "payload": Jsonb(data["payload"]), "a": account_id, "u": user_id, "k": key_id},
    ).fetchone()
    if row is None:
        return None
    new_scope = bool(row.pop("new_scope"))
    return cast(EventRow, row), new_scope  # EVENT_COLUMNS once new_scope is popped


def event_by_key(conn: Conn, *, account_id: UUID, idempotency_key: str) -> EventRow | None:
    return (
        conn.cursor(row_factory=class_row(EventRow))
        .execute(
            f"""SELECT {EVENT_COLUMNS} FROM memory_events
                WHERE account_id = %(a)s AND idempotency_key = %(idempotency_key)s""",
            {"a": account_id, "idempotency_key": idempotency_key},
        )
        .fetchone()
    )


def get_event(conn: Conn, *, account_id: UUID, event_id: UUID) -> EventRow | None:
    return (
        conn.cursor(row_factory=class_row(EventRow))
        .execute(
            f"SELECT {EVENT_COLUMNS} FROM memory_events WHERE account_id = %(a)s AND id = %(event_id)s",
            {"a": account_id, "event_id": event_id},
        )
        .fetchone()
    )


def list_events(
    conn: Conn, *, account_id: UUID, filters: dict[str, Any], limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    params: dict[str, Any] = {"a": account_id}
    where = ["account_id = %(a)s"]
    for column in ("session_id", "scope_type", "scope_key", "event_type"):
        value = filters.get(column)
        if value is not None:
            where.append(f"{column} = %({column})s")
            params[column] = value
    return paged(
        conn,
        columns=EVENT_COLUMNS,
        table="memory_events",
        where=where,
        params=params,
        order_by="occurred_at DESC, created_at DESC, id",
        limit=limit,
        offset=offset,
    )


def latest_checkpoint(conn: Conn, *, account_id: UUID, session_id: str) -> EventRow | None:
    return (
        conn.cursor(row_factory=class_row(EventRow))
        .execute(
            f"""SELECT {EVENT_COLUMNS} FROM memory_events
                WHERE account_id = %(a)s AND session_id = %(session_id)s AND event_type = 'checkpoint'
                ORDER BY occurred_at DESC, sequence_no DESC NULLS LAST, created_at DESC, id DESC
                LIMIT 1""",
            {"a": account_id, "session_id": session_id},
        )
        .fetchone()
    )


def scopes(conn: Conn, *, account_id: UUID, limit: int, offset: int) -> tuple[list[ScopeUsageRow], int]:
    """Every (scope_type, scope_key) in use, with entry and event counts, most recently active first."""
    rows = (
        conn.cursor(row_factory=class_row(_CountedScopeUsageRow))
        .execute(
            """WITH e AS (
               SELECT scope_type, scope_key, count(*) AS n, max(occurred_at) AS last_at
               FROM memory_events WHERE account_id = %(a)s GROUP BY scope_type, scope_key
           ), m AS (
               SELECT scope_type, scope_key, count(*) AS n, max(updated_at) AS last_at
               FROM memory_entries WHERE account_id = %(a)s GROUP BY scope_type, scope_key
           )
           SELECT coalesce(m.scope_type, e.scope_type) AS scope_type, coalesce(m.scope_key, e.scope_key) AS scope_key,
                  coalesce(m.n, 0) AS entry_count, coalesce(e.n, 0) AS event_count,
                  greatest(m.last_at, e.last_at) AS last_activity_at, count(*) OVER () AS _total
           FROM m FULL OUTER JOIN e ON e.scope_type = m.scope_type AND e.scope_key = m.scope_key
           ORDER BY last_activity_at DESC NULLS LAST, scope_type, scope_key
           LIMIT %(limit)s OFFSET %(offset)s""",
            {"a": account_id, "limit": limit, "offset": offset},
        )
        .fetchall()
    )
    if rows:
        total = rows[0].get("_total", 0)
    elif offset == 0:
        total = 0
    else:
        found = conn.execute(
            """SELECT count(*) AS n FROM (
                   SELECT scope_type, scope_key FROM memory_events WHERE account_id = %(a)s
                   UNION SELECT scope_type, scope_key FROM memory_entries WHERE account_id = %(a)s) s""",
            {"a": account_id},
        ).fetchone()
        total = found["n"] if found else 0
    for r in rows:
        r.pop("_total", None)
    items: list[ScopeUsageRow] = list(rows)
    return items, total


def journal_sessions(
    conn: Conn, *, account_id: UUID, scope: tuple[str, str] | None, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    """Sessions of the journal, newest activity first; with ``scope``, activity = the session's events in it.
    The latest checkpoint is the session's (any scope): the one resume returns."""
    params: dict[str, Any] = {"a": account_id, "limit": limit, "offset": offset}
    where = "account_id = %(a)s AND session_id <> ''"
    if scope is not None:
        where += " AND scope_type = %(st)s AND scope_key = %(sk)s"
        params["st"], params["sk"] = scope
    rows = conn.execute(
        f"""WITH s AS (
                SELECT session_id, min(occurred_at) AS first_activity_at, max(occurred_at) AS last_activity_at,
                       max(created_at) AS last_recorded_at, count(*) AS event_count
                FROM memory_events WHERE {where} GROUP BY session_id
            )
            SELECT s.session_id, s.first_activity_at, s.last_activity_at, s.event_count,
                   cp.payload ->> 'label' AS latest_checkpoint_label, cp.payload ->> 'goal' AS latest_checkpoint_goal,
                   cp.occurred_at AS latest_checkpoint_at, count(*) OVER () AS _total
            FROM s LEFT JOIN LATERAL (
                SELECT payload, occurred_at FROM memory_events c
                WHERE c.account_id = %(a)s AND c.session_id = s.session_id AND c.event_type = 'checkpoint'
                ORDER BY c.occurred_at DESC, c.sequence_no DESC NULLS LAST, c.created_at DESC, c.id DESC LIMIT 1
            ) cp ON TRUE
            ORDER BY s.last_activity_at DESC, s.last_recorded_at DESC, s.session_id
            LIMIT %(limit)s OFFSET %(offset)s""",
        params,
    ).fetchall()
    if rows:
        total = rows[0].get("_total", 0)
    elif offset == 0:
        total = 0
    else:
        found = conn.execute(
            f"SELECT count(DISTINCT session_id) AS n FROM memory_events WHERE {where}", params
        ).fetchone()
        total = found["n"] if found else 0
    for r in rows:
        r.pop("_total", None)
        for key in ("latest_checkpoint_label", "latest_checkpoint_goal"):
            if r["latest_checkpoint_at"] is not None and r[key] is None:
                r[key] = ""
    return rows, total


def latest_session_in_scope(conn: Conn, *, account_id: UUID, scope_type: str, scope_key: str) -> str | None:
    """The session whose latest event in this scope is newest."""
    row = conn.execute(
        """SELECT session_id FROM memory_events
           WHERE account_id = %(a)s AND scope_type = %(scope_type)s AND scope_key = %(scope_key)s
             AND session_id <> ''
           ORDER BY occurred_at DESC, created_at DESC, id DESC LIMIT 1""",
        {"a": account_id, "scope_type": scope_type, "scope_key": scope_key},
    ).fetchone()
    return row["session_id"] if row else None


def scope_keys(conn: Conn, *, account_id: UUID) -> list[ScopeKeyRow]:
    """Every (scope_type, scope_key) of the account with a key, most recently active first."""
    return (
        conn.cursor(row_factory=class_row(ScopeKeyRow))
        .execute(
            """SELECT scope_type, scope_key, max(at) AS last_at FROM (
               SELECT scope_type, scope_key, occurred_at AS at FROM memory_events
               WHERE account_id = %(a)s AND scope_key <> ''
               UNION ALL
               SELECT scope_type, scope_key, updated_at FROM memory_entries WHERE account_id = %(a)s AND scope_key <> ''
           ) s GROUP BY scope_type, scope_key ORDER BY last_at DESC, scope_type, scope_key LIMIT 5000""",
            {"a": account_id},
        )
        .fetchall()
    )


# -- entries -----------------------------------------------------------------------------------------------------


def insert_entry(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, entry_id: UUID, data: dict[str, Any]
) -> Sent[dict[str, Any] | None]:
    """Insert an entry with the id the caller chose (so its evidence can be sent before this result is read);
    None when an active entry with the same type, scope and normalised content exists
    (memory_entries_active_content_key: a concurrent identical insert waits for the first and then lands here).
    The row carries ``new_scope`` (see ``_NEW_SCOPE``)."""
    cursor = conn.execute(
        f"""INSERT INTO memory_entries (id, account_id, user_id, key_id, scope_type, scope_key, memory_type, title,
                                        content, summary, content_hash, confidence, importance, status, metadata,
                                        ttl_at, valid_from, valid_to, source_event_id, extraction_method,
                                        extractor_version)
            VALUES (%(id)s, %(a)s, %(u)s, %(k)s, %(scope_type)s, %(scope_key)s, %(memory_type)s, %(title)s,
                    %(content)s, %(summary)s, %(content_hash)s, %(confidence)s, %(importance)s, %(status)s,
                    %(metadata)s, %(ttl_at)s, coalesce(%(valid_from)s, now()), %(valid_to)s, %(source_event_id)s,
                    %(extraction_method)s, %(extractor_version)s)
            ON CONFLICT (account_id, memory_type, scope_type, scope_key, content_key) WHERE status = 'active'
            DO NOTHING
            RETURNING {ENTRY_COLUMNS}{_NEW_SCOPE}""",
        {
            **data,
            "metadata": Jsonb(data["metadata"]),
            "id": entry_id,
            "a": account_id,
            "u": user_id,
            "k": key_id,
        },
    )
    return Sent(cursor, lambda c: c.fetchone())


def active_duplicate(conn: Conn, *, account_id: UUID, data: dict[str, Any]) -> EntryRow | None:
    """The active entry an insert of ``data`` collided with (same type, scope and normalised content), locked."""
    return (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
            WHERE account_id = %(a)s AND memory_type = %(memory_type)s AND scope_type = %(scope_type)s
              AND scope_key = %(scope_key)s AND content_key = memory_content_key(%(content)s) AND status = 'active'
            FOR UPDATE""",
            {**data, "a": account_id},
        )
        .fetchone()
    )


def touch_entry(conn: Conn, *, account_id: UUID, entry_id: UUID) -> EntryRow:
    row = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""UPDATE memory_entries SET updated_at = now() WHERE account_id = %(a)s AND id = %(entry_id)s
            RETURNING {ENTRY_COLUMNS}""",
            {"a": account_id, "entry_id": entry_id},
        )
        .fetchone()
    )
    assert row is not None
    return row


def insert_evidence(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID,
    key_id: UUID | None,
    memory_id: UUID,
    items: list[dict[str, Any]],
) -> Sent[list[EvidenceRow]]:
    """Evidence items of one entry, sent now and read with ``result()``; nothing is inserted when the entry does not
    exist, so it may follow an ``insert_entry`` whose result is not read yet (a deduplicated store inserts no
    entry)."""
    if not items:
        return Sent.done([])
    cursor = conn.cursor(row_factory=class_row(EvidenceRow)).execute(
        f"""INSERT INTO memory_evidence (account_id, user_id, key_id, memory_id, source_type, source_id, excerpt,
                                         metadata, created_at)
            SELECT %(a)s, %(u)s, %(k)s, %(m)s, t.source_type, t.source_id, t.excerpt, t.metadata,
                   clock_timestamp()
            FROM unnest(%(st)s::text[], %(sid)s::text[], %(ex)s::text[], %(md)s::jsonb[], %(ord)s::int[])
                 AS t (source_type, source_id, excerpt, metadata, ord)
            WHERE EXISTS (SELECT 1 FROM memory_entries WHERE account_id = %(a)s AND id = %(m)s)
            ORDER BY t.ord
            RETURNING {EVIDENCE_COLUMNS}""",
        {
            "a": account_id,
            "u": user_id,
            "k": key_id,
            "m": memory_id,
            "st": [i["source_type"] for i in items],
            "sid": [i["source_id"] for i in items],
            "ex": [i["excerpt"] for i in items],
            "md": [Jsonb(i["metadata"]) for i in items],
            "ord": list(range(len(items))),
        },
    )
    return Sent(cursor, lambda c: c.fetchall())


def get_entry(conn: Conn, *, account_id: UUID, entry_id: UUID, lock: bool = False) -> EntryRow | None:
    return (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
            WHERE account_id = %(a)s AND id = %(entry_id)s{" FOR UPDATE" if lock else ""}""",
            {"a": account_id, "entry_id": entry_id},
        )
        .fetchone()
    )


def entries_by_ids(conn: Conn, *, account_id: UUID, ids: list[UUID]) -> dict[UUID, EntryRow]:
    if not ids:
        return {}
    rows = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE account_id = %(a)s AND id = ANY(%(ids)s)",
            {"a": account_id, "ids": ids},
        )
        .fetchall()
    )
    return {r["id"]: r for r in rows}


def lock_entries(conn: Conn, *, account_id: UUID, ids: list[UUID]) -> dict[UUID, EntryRow]:
    """Lock rows in id order (a fixed order, so two supersedes of the same pair cannot deadlock)."""
    rows = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE account_id = %(a)s AND id = ANY(%(ids)s)
            ORDER BY id FOR UPDATE""",
            {"a": account_id, "ids": sorted(ids)},
        )
        .fetchall()
    )
    return {r["id"]: r for r in rows}


_EVIDENCE_OF = f"""SELECT {EVIDENCE_COLUMNS} FROM memory_evidence WHERE account_id = %(a)s AND memory_id = ANY(%(ids)s)
                   ORDER BY created_at, id"""


def _by_memory(memory_ids: list[UUID], rows: list[EvidenceRow]) -> dict[UUID, list[EvidenceRow]]:
    out: dict[UUID, list[EvidenceRow]] = {m: [] for m in memory_ids}
    for r in rows:
        out.setdefault(r["memory_id"], []).append(r)
    return out


def evidence_for(conn: Conn, *, account_id: UUID, memory_ids: list[UUID]) -> dict[UUID, list[EvidenceRow]]:
    if not memory_ids:
        return {}
    evidence = conn.cursor(row_factory=class_row(EvidenceRow))
    return _by_memory(
        memory_ids, evidence.execute(_EVIDENCE_OF, {"a": account_id, "ids": memory_ids}).fetchall()
    )


def list_entries(
    conn: Conn, *, account_id: UUID, filters: dict[str, Any], limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    params: dict[str, Any] = {"a": account_id}
    where = ["account_id = %(a)s"]
    for column in ("scope_type", "scope_key", "memory_type", "status"):
        value = filters.get(column)
        if value is not None:
            where.append(f"{column} = %({column})s")
            params[column] = value
    return paged(
        conn,
        columns=ENTRY_COLUMNS,
        table="memory_entries",
        where=where,
        params=params,
        order_by="importance DESC, updated_at DESC, id",
        limit=limit,
        offset=offset,
    )


def chain_reaches(conn: Conn, *, account_id: UUID, start: UUID, target: UUID) -> bool:
    """Does following ``superseded_by`` from ``start`` (inclusive) reach ``target``? (cycle detection)"""
    row = conn.execute(
        """WITH RECURSIVE chain (id, depth) AS (
               SELECT id, 0 FROM memory_entries WHERE account_id = %(a)s AND id = %(s)s
               UNION ALL
               SELECT e.superseded_by, c.depth + 1
               FROM chain c JOIN memory_entries e ON e.account_id = %(a)s AND e.id = c.id
               WHERE e.superseded_by IS NOT NULL AND c.depth < 10000
           ) CYCLE id SET is_cycle USING path
           SELECT EXISTS (SELECT 1 FROM chain WHERE id = %(t)s) AS reaches""",
        {"a": account_id, "s": start, "t": target},
    ).fetchone()
    return bool(row and row["reaches"])


def mark_superseded(conn: Conn, *, account_id: UUID, entry_id: UUID, superseded_by: UUID) -> EntryRow:
    """Status superseded, pointer set, validity window closed at now (never before valid_from)."""
    row = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""UPDATE memory_entries
            SET superseded_by = %(by)s, status = 'superseded', updated_at = now(),
                valid_to = greatest(valid_from, least(coalesce(valid_to, now()), now()))
            WHERE account_id = %(a)s AND id = %(id)s
            RETURNING {ENTRY_COLUMNS}""",
            {"a": account_id, "id": entry_id, "by": superseded_by},
        )
        .fetchone()
    )
    assert row is not None
    return row


def bump_access_with_evidence(
    conn: Conn, *, account_id: UUID, ids: list[UUID]
) -> tuple[dict[UUID, AccessRow], dict[UUID, list[EvidenceRow]]]:
    """Count a retrieval of each entry and read the entries' evidence: the new access_count / last_accessed_at
    per id, and the evidence per id (as ``evidence_for``). Both statements are sent before either result is read,
    so in pipeline mode (memory search's transaction) they cost one round trip."""
    if not ids:
        return {}, {}
    # The rows are locked in id order, as every other multi-row lock of memory_entries takes them
    # (entries_in_scope): an UPDATE alone locks in its plan's order (heap order), which deadlocked with a scope
    # forget (bench/soak.py found it; tests/integration/test_memory_lock_order.py).
    bumped = conn.cursor(row_factory=class_row(AccessRow)).execute(
        """UPDATE memory_entries e SET access_count = e.access_count + 1, last_accessed_at = now()
           FROM (SELECT id FROM memory_entries WHERE account_id = %(a)s AND id = ANY(%(ids)s)
                 ORDER BY id FOR UPDATE) AS locked
           WHERE e.id = locked.id
           RETURNING e.id, e.access_count, e.last_accessed_at""",
        {"a": account_id, "ids": ids},
    )
    evidence = conn.cursor(row_factory=class_row(EvidenceRow)).execute(
        _EVIDENCE_OF, {"a": account_id, "ids": ids}
    )
    access = {r["id"]: r for r in bumped.fetchall()}
    return access, _by_memory(ids, evidence.fetchall())


def retire_entry(conn: Conn, *, account_id: UUID, entry_id: UUID, status: str, reason: str) -> EntryRow:
    """Archive or invalidate: status and reason set, validity window closed at now (never before valid_from)."""
    row = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""UPDATE memory_entries
            SET status = %(s)s, status_reason = %(r)s, updated_at = now(),
                valid_to = greatest(valid_from, least(coalesce(valid_to, now()), now()))
            WHERE account_id = %(a)s AND id = %(id)s
            RETURNING {ENTRY_COLUMNS}""",
            {"a": account_id, "id": entry_id, "s": status, "r": reason},
        )
        .fetchone()
    )
    assert row is not None
    return row


def delete_entry(conn: Conn, *, account_id: UUID, entry: EntryRow) -> DeletedEntry:
    """Delete an entry for good (evidence and feedback cascade). Entries it superseded now point at its own
    successor (or nothing) and remember the deleted link in superseded_by_deleted. Returns counts and links."""
    counts = conn.execute(
        """SELECT (SELECT count(*) FROM memory_evidence WHERE account_id = %(a)s AND memory_id = %(id)s) AS evidence,
                  (SELECT count(*) FROM memory_feedback WHERE account_id = %(a)s AND memory_id = %(id)s) AS feedback""",
        {"a": account_id, "id": entry["id"]},
    ).fetchone()
    assert counts is not None
    relinked = (
        conn.cursor(row_factory=class_row(RelinkRow))
        .execute(
            """UPDATE memory_entries SET superseded_by = %(next)s, superseded_by_deleted = %(id)s, updated_at = now()
           WHERE account_id = %(a)s AND superseded_by = %(id)s
           RETURNING id AS entry_id, superseded_by""",
            {"a": account_id, "id": entry["id"], "next": entry["superseded_by"]},
        )
        .fetchall()
    )
    conn.execute(
        "DELETE FROM memory_entries WHERE account_id = %(a)s AND id = %(id)s",
        {"a": account_id, "id": entry["id"]},
    )
    return DeletedEntry(evidence=counts["evidence"], feedback=counts["feedback"], relinked=relinked)


def entries_in_scope(conn: Conn, *, account_id: UUID, scope_type: str, scope_key: str) -> list[EntryRow]:
    """Every entry of one scope, locked in id order (a fixed order, so two bulk forgets cannot deadlock)."""
    return (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
            WHERE account_id = %(a)s AND scope_type = %(scope_type)s AND scope_key = %(scope_key)s
            ORDER BY id FOR UPDATE""",
            {"a": account_id, "scope_type": scope_type, "scope_key": scope_key},
        )
        .fetchall()
    )


def export_page(
    conn: Conn, *, account_id: UUID, scope_type: str, scope_key: str, after: UUID | None, limit: int
) -> list[EntryRow]:
    """One keyset page of a scope's entries in id order (for the NDJSON export)."""
    return (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""SELECT {ENTRY_COLUMNS} FROM memory_entries
            WHERE account_id = %(a)s AND scope_type = %(st)s AND scope_key = %(sk)s
              AND (%(after)s::uuid IS NULL OR id > %(after)s::uuid)
            ORDER BY id LIMIT %(limit)s""",
            {"a": account_id, "st": scope_type, "sk": scope_key, "after": after, "limit": limit},
        )
        .fetchall()
    )


# -- feedback ----------------------------------------------------------------------------------------------------


def insert_feedback(
    conn: Conn, *, account_id: UUID, user_id: UUID, key_id: UUID | None, memory_id: UUID, data: dict[str, Any]
) -> dict[str, Any] | None:
    """Record a signal once per (memory, session, signal); None when it already exists."""
    return conn.execute(
        f"""INSERT INTO memory_feedback (account_id, user_id, key_id, memory_id, signal, reason, session_id,
                                         skill_version_id, metadata)
            VALUES (%(a)s, %(u)s, %(k)s, %(m)s, %(signal)s, %(reason)s, %(session_id)s, %(skill_version_id)s,
                    %(metadata)s)
            ON CONFLICT ON CONSTRAINT memory_feedback_once_key DO NOTHING
            RETURNING {FEEDBACK_COLUMNS}""",
        {
            **data,
            "metadata": Jsonb(data["metadata"]),
            "a": account_id,
            "u": user_id,
            "k": key_id,
            "m": memory_id,
        },
    ).fetchone()


def existing_feedback(
    conn: Conn, *, account_id: UUID, memory_id: UUID, session_id: str, signal: str
) -> dict[str, Any] | None:
    return conn.execute(
        f"""SELECT {FEEDBACK_COLUMNS} FROM memory_feedback
            WHERE account_id = %(a)s AND memory_id = %(memory_id)s AND session_id = %(session_id)s
              AND signal = %(signal)s""",
        {"a": account_id, "memory_id": memory_id, "session_id": session_id, "signal": signal},
    ).fetchone()


def count_feedback(conn: Conn, *, account_id: UUID, entry_id: UUID, signal: str) -> EntryRow:
    """Move the entry's counter projection by one (same transaction as the signal)."""
    column = "useful_count" if signal == "useful" else "harmful_count"
    row = (
        conn.cursor(row_factory=class_row(EntryRow))
        .execute(
            f"""UPDATE memory_entries SET {column} = {column} + 1
            WHERE account_id = %(a)s AND id = %(entry_id)s RETURNING {ENTRY_COLUMNS}""",
            {"a": account_id, "entry_id": entry_id},
        )
        .fetchone()
    )
    assert row is not None
    return row


def list_feedback(
    conn: Conn, *, account_id: UUID, memory_id: UUID, limit: int, offset: int
) -> tuple[list[dict[str, Any]], int]:
    return paged(
        conn,
        columns=FEEDBACK_COLUMNS,
        table="memory_feedback",
        where=["account_id = %(a)s", "memory_id = %(m)s"],
        params={"a": account_id, "m": memory_id},
        order_by="created_at DESC, id DESC",
        limit=limit,
        offset=offset,
    )
