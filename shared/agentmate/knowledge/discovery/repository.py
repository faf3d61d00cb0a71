"""SQL of K4 discovery: the catalog as discovery reads it, and resolution runs (migrations/0057): append-only runs
and their verified selections."""

from __future__ import annotations

from typing import Any, TypedDict, cast
from uuid import UUID

from psycopg import Cursor
from psycopg.types.json import Jsonb

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints
from agentmate.core.sql import paged
from agentmate.knowledge.catalog.repository import ManifestCard
from agentmate.knowledge.discovery.schemas import ResolutionRun, ResolutionSummary

RUN_COLUMNS = (
    "id, skill_version_id, session_id, requirement_id, contract_identity, discovery_fingerprint, discovery_status, "
    "fingerprint_current, candidates, selected, retrieved, citations, selection_reason, confidence, "
    "idempotency_key, created_at"
)
SUMMARY_COLUMNS = (
    "r.id, r.skill_version_id, r.session_id, r.requirement_id, r.discovery_fingerprint, r.discovery_status, "
    "r.fingerprint_current, jsonb_array_length(r.candidates) AS candidate_count, "
    "jsonb_array_length(r.selected) AS selected_count, jsonb_array_length(r.retrieved) AS retrieved_count, "
    "jsonb_array_length(r.citations) AS citation_count, r.confidence, r.created_at"
)

CONSTRAINTS = constraints(
    {
        "knowledge_resolution_runs_version_fkey": (
            "skill_version_id",
            "unknown skill version in this account",
        ),
        "knowledge_resolution_runs_session_id_check": ("session_id", "at most 200 characters"),
        "knowledge_resolution_runs_requirement_id_check": ("requirement_id", "must be 1..64 characters"),
        "knowledge_resolution_runs_fingerprint_check": (
            "discovery_fingerprint",
            "must be 64 lowercase hex characters",
        ),
        "knowledge_resolution_runs_status_check": ("discovery_status", "is not a discovery status"),
        "knowledge_resolution_runs_evidence_check": (
            "candidates",
            "candidates, selected, retrieved and citations are arrays of at most 256 KiB together",
        ),
        "knowledge_resolution_runs_selection_reason_check": ("selection_reason", "at most 2000 characters"),
        "knowledge_resolution_runs_confidence_check": ("confidence", "must be between 0 and 1"),
        "knowledge_resolution_runs_idempotency_key_check": ("idempotency_key", "must be 1..255 characters"),
        "knowledge_resolution_runs_content_hash_check": ("content_hash", "must be a sha256 hex digest"),
        "knowledge_resolution_runs_idempotency_key": (
            "idempotency_key",
            "was already used for another resolution run",
        ),
        "knowledge_resolution_selections_run_fkey": ("selected", "the run of this selection does not exist"),
        "knowledge_resolution_selections_source_fkey": (
            "selected.source_id",
            "unknown knowledge source in this account",
        ),
        "knowledge_resolution_selections_revision_fkey": (
            "selected.revision_id",
            "not a revision of that source in this account",
        ),
        "knowledge_resolution_selections_run_source_key": (
            "selected.source_id",
            "selected names a source twice",
        ),
        "knowledge_resolution_selections_position_check": ("selected", "position must not be negative"),
    }
)


class SourceRef(TypedDict):
    id: UUID
    name: str
    active_revision_id: UUID | None


def sources(conn: Conn, *, account_id: UUID, source_ids: list[UUID]) -> dict[UUID, SourceRef]:
    """The named sources of this account: name and active revision."""
    rows = conn.execute(
        "SELECT id, name, active_revision_id FROM knowledge_sources WHERE account_id = %(account_id)s AND id = ANY(%(source_ids)s)",
        {"account_id": account_id, "source_ids": source_ids},
    ).fetchall()
    return {r["id"]: cast(SourceRef, r) for r in rows}


def revisions_of(conn: Conn, *, account_id: UUID, pairs: list[tuple[UUID, UUID]]) -> set[tuple[UUID, UUID]]:
    """Which (source_id, revision_id) pairs name a revision of that source in this account."""
    if not pairs:
        return set()
    rows = conn.execute(
        """SELECT source_id, id FROM knowledge_source_revisions
           WHERE account_id = %(account_id)s AND (source_id, id) IN (SELECT * FROM unnest(%(source_ids)s::uuid[], %(revision_ids)s::uuid[]))""",
        {
            "account_id": account_id,
            "source_ids": [p[0] for p in pairs],
            "revision_ids": [p[1] for p in pairs],
        },
    ).fetchall()
    return {(r["source_id"], r["id"]) for r in rows}


class SelectedRow(TypedDict):
    """One verified selection of a resolution run, as stored in its ``selected`` JSON."""

    source_id: str
    source_name: str
    revision_id: str | None
    build_id: str | None


class NewRun(TypedDict):
    """The columns of a knowledge_resolution_runs row the service supplies (the evidence lists as JSON)."""

    skill_version_id: UUID
    session_id: str | None
    requirement_id: str
    contract_identity: str
    discovery_fingerprint: str
    discovery_status: str
    fingerprint_current: bool
    candidates: list[dict[str, Any]]
    selected: list[SelectedRow]
    retrieved: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    selection_reason: str
    confidence: float | None
    idempotency_key: str | None
    content_hash: str


def insert_run(
    conn: Conn, *, account_id: UUID, user_id: UUID | None, key_id: UUID | None, data: NewRun
) -> ResolutionRun:
    row = conn.execute(
        f"""INSERT INTO knowledge_resolution_runs (account_id, user_id, key_id, skill_version_id, session_id,
                   requirement_id, contract_identity, discovery_fingerprint, discovery_status, fingerprint_current,
                   candidates, selected, retrieved, citations, selection_reason, confidence, idempotency_key,
                   content_hash)
            VALUES (%(a)s, %(u)s, %(k)s, %(skill_version_id)s, %(session_id)s, %(requirement_id)s,
                    %(contract_identity)s, %(discovery_fingerprint)s, %(discovery_status)s, %(fingerprint_current)s,
                    %(candidates)s, %(selected)s, %(retrieved)s, %(citations)s, %(selection_reason)s,
                    %(confidence)s, %(idempotency_key)s, %(content_hash)s)
            RETURNING {RUN_COLUMNS}""",
        {
            **data,
            "a": account_id,
            "u": user_id,
            "k": key_id,
            **{k: Jsonb(data[k]) for k in ("candidates", "selected", "retrieved", "citations")},
        },
    ).fetchone()
    assert row is not None
    selected = data["selected"]
    if selected:
        conn.execute(
            """INSERT INTO knowledge_resolution_selections (run_id, account_id, position, source_id, revision_id)
               SELECT %(run_id)s, %(account_id)s, p - 1, s, r FROM unnest(%(source_ids)s::uuid[], %(revision_ids)s::uuid[]) WITH ORDINALITY AS t (s, r, p)""",
            {
                "run_id": row["id"],
                "account_id": account_id,
                "source_ids": [s["source_id"] for s in selected],
                "revision_ids": [s["revision_id"] for s in selected],
            },
        )
    return ResolutionRun.model_validate(row)


def get_run(conn: Conn, *, account_id: UUID, run_id: UUID) -> ResolutionRun | None:
    row = conn.execute(
        f"SELECT {RUN_COLUMNS} FROM knowledge_resolution_runs WHERE account_id = %(account_id)s AND id = %(run_id)s",
        {"account_id": account_id, "run_id": run_id},
    ).fetchone()
    return ResolutionRun.model_validate(row) if row is not None else None


def list_runs(
    conn: Conn,
    *,
    account_id: UUID,
    skill_version_id: UUID | None,
    session_id: str | None,
    source_id: UUID | None,
    limit: int,
    offset: int,
) -> tuple[list[ResolutionSummary], int]:
    where = ["r.account_id = %(a)s"]
    params: dict[str, Any] = {"a": account_id}
    if skill_version_id is not None:
        where.append("r.skill_version_id = %(skill_version_id)s")
        params["skill_version_id"] = skill_version_id
    if session_id is not None:
        where.append("r.session_id = %(session_id)s")
        params["session_id"] = session_id
    if source_id is not None:
        where.append(
            "EXISTS (SELECT 1 FROM knowledge_resolution_selections s WHERE s.account_id = r.account_id "
            "AND s.run_id = r.id AND s.source_id = %(source_id)s)"
        )
        params["source_id"] = source_id
    rows, total = paged(
        conn,
        columns=SUMMARY_COLUMNS,
        table="knowledge_resolution_runs r",
        where=where,
        params=params,
        order_by="r.created_at DESC, r.id DESC",
        limit=limit,
        offset=offset,
    )
    return [ResolutionSummary.model_validate(r) for r in rows], total


# What discovery reads of every card, in no order (scoring sorts; the fingerprint sorts its own list): the
# manifest whole (one JSON decode per card was cheaper than extracting its fields: 3.9 vs 4.5 ms at 200 cards, and
# unnesting its arrays into text[] cost the server more), and the active revision by its primary key per source (LATERAL ... LIMIT 1 is never flattened into a join: without statistics,
# e.g. for a freshly grown account, the planner's nested loop over every revision of the account cost 32 ms at
# 200 cards instead of 0.5 ms; bench/knowledge_discover_bench.py).
_DISCOVERY_CARDS = """
    SELECT s.id AS source_id, s.name AS source_name, s.domain, r.id AS revision_id, r.package_hash, r.manifest
    FROM knowledge_sources s
    CROSS JOIN LATERAL (SELECT x.id, x.package_hash, x.manifest FROM knowledge_source_revisions x
                        WHERE x.id = s.active_revision_id AND x.account_id = s.account_id LIMIT 1) r
    WHERE s.account_id = %(account_id)s AND s.active_revision_id IS NOT NULL"""


def discovery_cards(conn: Conn, *, account_id: UUID) -> Cursor[dict[str, Any]]:
    """Every card of the account as discovery matches it (see _DISCOVERY_CARDS). Returns the cursor: in pipeline
    mode the statement is sent now and its rows are read with ``card_rows`` later, after other statements."""
    return conn.execute(_DISCOVERY_CARDS, {"account_id": account_id})


def card_rows(cursor: Cursor[dict[str, Any]]) -> list[ManifestCard]:
    """The rows of a ``discovery_cards`` cursor."""
    return cast(list[ManifestCard], cursor.fetchall())
