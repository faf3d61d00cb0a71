"""SQL of validation signals (migrations/0080) and of the recorded searches and resolutions they are judged on."""

from __future__ import annotations

from typing import Any, TypedDict, cast
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.knowledge.quality.attribution import LoggedSearch
from agentmate.knowledge.quality.schemas import Signal, SignalCount

CONSTRAINTS = constraints(
    {
        "knowledge_validation_signals_id_account_key": ("id", "already exists"),
        "knowledge_validation_signals_source_fkey": ("source_id", "no such knowledge source in this account"),
        "knowledge_validation_signals_build_fkey": ("build_id", "no such build of this source"),
        "knowledge_validation_signals_skill_version_fkey": (
            "skill_version_id",
            "no such skill version in this account",
        ),
        "knowledge_validation_signals_signal_check": ("signal", "unknown signal"),
        "knowledge_validation_signals_direction_check": ("direction", "must be positive or negative"),
        "knowledge_validation_signals_origin_check": ("origin", "must be reported or derived"),
        "knowledge_validation_signals_cause_check": ("cause", "unknown cause"),
        "knowledge_validation_signals_page_path_check": ("page_path", "must be 1..512 characters"),
        "knowledge_validation_signals_session_id_check": ("session_id", "must be at most 200 characters"),
        "knowledge_validation_signals_detail_check": ("detail", "must be at most 2000 characters"),
        "knowledge_validation_signals_idempotency_key_check": (
            "idempotency_key",
            "must be 1..255 characters",
        ),
        "knowledge_validation_signals_content_hash_check": ("content_hash", "must be a sha256 hex digest"),
        "knowledge_validation_signals_idempotency_key": ("idempotency_key", "already used by another signal"),
        "knowledge_validation_signals_derived_daily_key": ("signal", "already derived today"),
    }
)

COLUMNS = (
    "id, source_id, build_id, page_path, query_id, session_id, skill_version_id, signal, direction, origin, "
    "cause, attribution_basis, detail, idempotency_key, created_at"
)


class SourceBuild(TypedDict):
    id: UUID
    active_build_id: UUID | None


class SignalTotals(TypedDict):
    total: int
    positive: int
    negative: int
    reported: int
    derived: int
    by_page: list[SignalCount]
    by_cause: list[SignalCount]
    by_signal: list[SignalCount]


class SkillPatternRow(TypedDict):
    skill_version_id: UUID
    negative: int
    positive: int
    distinct_pages: int
    distinct_sources: int


class IdleSource(TypedDict):
    source_id: UUID
    build_id: UUID


def source(conn: Conn, *, account_id: UUID, source_id: UUID) -> SourceBuild | None:
    row = conn.execute(
        "SELECT id, active_build_id FROM knowledge_sources WHERE account_id = %(account_id)s AND id = %(source_id)s",
        {"account_id": account_id, "source_id": source_id},
    ).fetchone()
    return cast(SourceBuild | None, row)


def build_of_source(conn: Conn, *, account_id: UUID, build_id: UUID, source_id: UUID) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM knowledge_builds WHERE account_id = %(account_id)s AND id = %(build_id)s AND source_id = %(source_id)s",
            {"account_id": account_id, "build_id": build_id, "source_id": source_id},
        ).fetchone()
        is not None
    )


def page_exists(conn: Conn, *, account_id: UUID, build_id: UUID, path: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM knowledge_pages WHERE account_id = %(account_id)s AND build_id = %(build_id)s AND path = %(path)s",
            {"account_id": account_id, "build_id": build_id, "path": path},
        ).fetchone()
        is not None
    )


def skill_version_exists(conn: Conn, *, account_id: UUID, skill_version_id: UUID) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM skill_versions WHERE account_id = %(account_id)s AND id = %(skill_version_id)s",
            {"account_id": account_id, "skill_version_id": skill_version_id},
        ).fetchone()
        is not None
    )


def logged_search(conn: Conn, *, account_id: UUID, query_id: UUID) -> LoggedSearch | None:
    """The reported search (its layer and how many hits it served), when it is this account's."""
    row = conn.execute(
        "SELECT namespace, hit_count FROM retrieval_queries WHERE account_id = %(account_id)s AND id = %(query_id)s",
        {"account_id": account_id, "query_id": query_id},
    ).fetchone()
    return LoggedSearch(row["namespace"], row["hit_count"]) if row else None


# The same question: equal query text up to case and whitespace, asked within a day of the reported search.
_SAME_QUESTION = """
    SELECT q.namespace, q.hit_count FROM retrieval_queries q
    JOIN retrieval_queries r ON r.account_id = q.account_id AND r.id = %(id)s
    WHERE q.account_id = %(a)s AND q.id <> r.id AND q.namespace = ANY(%(ns)s)
      AND q.created_at BETWEEN r.created_at - interval '1 day' AND r.created_at + interval '1 day'
      AND lower(regexp_replace(btrim(q.query), '\\s+', ' ', 'g'))
          = lower(regexp_replace(btrim(r.query), '\\s+', ' ', 'g'))"""


def same_question(
    conn: Conn, *, account_id: UUID, query_id: UUID, namespaces: list[str]
) -> list[LoggedSearch]:
    """The account's other searches of the same question in the given layers."""
    rows = conn.execute(_SAME_QUESTION, {"id": query_id, "a": account_id, "ns": namespaces}).fetchall()
    return [LoggedSearch(r["namespace"], r["hit_count"]) for r in rows]


def insert(
    conn: Conn, *, account_id: UUID, user_id: UUID | None, key_id: UUID | None, values: dict[str, Any]
) -> Signal | None:
    """Insert one signal; None when its idempotency key or its derived-daily slot is already taken."""
    row = conn.execute(
        f"""INSERT INTO knowledge_validation_signals (account_id, user_id, key_id, source_id, build_id, page_path,
                query_id, session_id, skill_version_id, signal, direction, origin, cause, attribution_basis,
                detail, idempotency_key, content_hash)
            VALUES (%(a)s, %(u)s, %(k)s, %(source_id)s, %(build_id)s, %(page_path)s, %(query_id)s, %(session_id)s,
                    %(skill_version_id)s, %(signal)s, %(direction)s, %(origin)s, %(cause)s, %(attribution_basis)s,
                    %(detail)s, %(idempotency_key)s, %(content_hash)s)
            ON CONFLICT DO NOTHING RETURNING {COLUMNS}""",
        {"a": account_id, "u": user_id, "k": key_id, **values},
    ).fetchone()
    return Signal.model_validate(row) if row else None


def by_key(conn: Conn, *, account_id: UUID, key: str) -> tuple[Signal, str] | None:
    row = conn.execute(
        f"""SELECT {COLUMNS}, content_hash FROM knowledge_validation_signals
                           WHERE account_id = %(account_id)s AND idempotency_key = %(key)s""",
        {"account_id": account_id, "key": key},
    ).fetchone()
    if row is None:
        return None
    content_hash = row.pop("content_hash")
    return Signal.model_validate(row), content_hash


def list_signals(
    conn: Conn, *, account_id: UUID, filters: dict[str, Any], limit: int, offset: int
) -> tuple[list[Signal], int]:
    where = ["account_id = %(a)s"] + [
        f"{name} = %({name})s" for name, value in filters.items() if value is not None
    ]
    rows, total = paged(
        conn,
        columns=COLUMNS,
        table="knowledge_validation_signals",
        where=where,
        params={"a": account_id, **filters},
        order_by="created_at DESC, id DESC",
        limit=limit,
        offset=offset,
    )
    return [Signal.model_validate(r) for r in rows], total


_TOTALS = """SELECT count(*) AS total, count(*) FILTER (WHERE direction = 'positive') AS positive,
                    count(*) FILTER (WHERE direction = 'negative') AS negative,
                    count(*) FILTER (WHERE origin = 'reported') AS reported,
                    count(*) FILTER (WHERE origin = 'derived') AS derived
             FROM knowledge_validation_signals
             WHERE account_id = %(a)s AND (%(s)s::uuid IS NULL OR source_id = %(s)s)"""
# Negatives first: whoever acts on the summary needs to see them without paging.
_GROUPS = {
    "page_path": """SELECT page_path AS key, count(*) FILTER (WHERE direction = 'positive') AS positive,
                           count(*) FILTER (WHERE direction = 'negative') AS negative
                    FROM knowledge_validation_signals
                    WHERE account_id = %(a)s AND (%(s)s::uuid IS NULL OR source_id = %(s)s) AND page_path IS NOT NULL
                    GROUP BY page_path ORDER BY negative DESC, page_path LIMIT 100""",
    "cause": """SELECT cause AS key, count(*) FILTER (WHERE direction = 'positive') AS positive,
                       count(*) FILTER (WHERE direction = 'negative') AS negative
                FROM knowledge_validation_signals
                WHERE account_id = %(a)s AND (%(s)s::uuid IS NULL OR source_id = %(s)s)
                GROUP BY cause ORDER BY negative DESC, cause""",
    "signal": """SELECT signal AS key, count(*) FILTER (WHERE direction = 'positive') AS positive,
                        count(*) FILTER (WHERE direction = 'negative') AS negative
                 FROM knowledge_validation_signals
                 WHERE account_id = %(a)s AND (%(s)s::uuid IS NULL OR source_id = %(s)s)
                 GROUP BY signal ORDER BY negative DESC, signal""",
}


def summary(conn: Conn, *, account_id: UUID, source_id: UUID | None) -> SignalTotals:
    params = {"a": account_id, "s": source_id}
    totals = conn.execute(_TOTALS, params).fetchone()
    assert totals is not None
    groups = {
        name: [SignalCount.model_validate(r) for r in conn.execute(sql, params).fetchall()]
        for name, sql in _GROUPS.items()
    }
    return {
        "total": totals["total"],
        "positive": totals["positive"],
        "negative": totals["negative"],
        "reported": totals["reported"],
        "derived": totals["derived"],
        "by_page": groups["page_path"],
        "by_cause": groups["cause"],
        "by_signal": groups["signal"],
    }


def skill_patterns(
    conn: Conn, *, account_id: UUID, limit: int, offset: int
) -> tuple[list[SkillPatternRow], int]:
    rows = conn.execute(
        """SELECT skill_version_id, count(*) FILTER (WHERE direction = 'negative') AS negative,
                  count(*) FILTER (WHERE direction = 'positive') AS positive,
                  count(DISTINCT page_path) FILTER (WHERE direction = 'negative') AS distinct_pages,
                  count(DISTINCT source_id) FILTER (WHERE direction = 'negative') AS distinct_sources,
                  count(*) OVER () AS _total
           FROM knowledge_validation_signals
           WHERE account_id = %(a)s AND skill_version_id IS NOT NULL
           GROUP BY skill_version_id
           HAVING count(*) FILTER (WHERE direction = 'negative') > 0
           ORDER BY distinct_sources DESC, negative DESC, skill_version_id
           LIMIT %(limit)s OFFSET %(offset)s""",
        {"a": account_id, "limit": limit, "offset": offset},
    ).fetchall()
    total = rows[0]["_total"] if rows else _pattern_count(conn, account_id) if offset else 0
    return cast(list[SkillPatternRow], rows), total


def _pattern_count(conn: Conn, account_id: UUID) -> int:
    row = conn.execute(
        """SELECT count(*) AS n FROM (SELECT skill_version_id FROM knowledge_validation_signals
              WHERE account_id = %(account_id)s AND skill_version_id IS NOT NULL GROUP BY skill_version_id
              HAVING count(*) FILTER (WHERE direction = 'negative') > 0) g""",
        {"account_id": account_id},
    ).fetchone()
    return row["n"] if row else 0


def idle_sources(conn: Conn, *, account_id: UUID, idle_days: int) -> list[IdleSource]:
    """Sources whose active wiki has served for ``idle_days`` with no recorded search result from the source
    (raw or wiki) and no recorded resolution selecting it within that window."""
    rows = conn.execute(
        """SELECT s.id AS source_id, s.active_build_id AS build_id
           FROM knowledge_sources s
           JOIN knowledge_builds b ON b.id = s.active_build_id AND b.account_id = s.account_id
           WHERE s.account_id = %(a)s
             AND b.finished_at <= now() - make_interval(days => %(d)s)
             AND NOT EXISTS (SELECT 1 FROM retrieval_queries q
                             WHERE q.account_id = s.account_id
                               AND q.created_at > now() - make_interval(days => %(d)s)
                               AND q.hits @> jsonb_build_array(jsonb_build_object('source_id', s.id::text)))
             AND NOT EXISTS (SELECT 1 FROM knowledge_resolution_selections sel
                             JOIN knowledge_resolution_runs run
                               ON run.id = sel.run_id AND run.account_id = sel.account_id
                             WHERE sel.account_id = s.account_id AND sel.source_id = s.id
                               AND run.created_at > now() - make_interval(days => %(d)s))
           ORDER BY s.id""",
        {"a": account_id, "d": idle_days},
    ).fetchall()
    return cast(list[IdleSource], rows)
