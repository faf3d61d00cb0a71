"""Memory use cases: journal events, durable entries, hybrid search, supersede, feedback, checkpoints, resume,
timeline and attribution.

Callable without HTTP (MCP tools use the same functions): each takes the database, the caller and typed values.
Postgres is the source of truth. The retrieval projection (embedding + vector index) is written after the entry's
transaction commits, so an embedding or vector-index failure never loses a memory: the entry is stored and
reported with ``indexing.status = "failed"``, and search still finds it through the lexical leg.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import psycopg

from agentmate.core import idempotency
from agentmate.core.db import Conn, Database
from agentmate.core.errors import Conflict, ErrorCollector, NotFound, invalid
from agentmate.core.idempotency import Outcome
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal
from agentmate.memory import repository as repo
from agentmate.memory.schemas import (
    CHECKPOINT_FIELDS,
    CHECKPOINT_LIST_FIELDS,
    CHECKPOINT_STRING_FIELDS,
    MAX_CHECKPOINT_ITEM_CHARS,
    MAX_CHECKPOINT_ITEMS,
    MAX_METADATA_BYTES,
    MAX_PAYLOAD_BYTES,
    Attribution,
    Checkpoint,
    CheckpointCreate,
    CheckpointSaved,
    Degraded,
    Entry,
    EntryCreate,
    EntryDetail,
    Event,
    EventCreate,
    EventDetail,
    EventRecorded,
    Evidence,
    Feedback,
    FeedbackCreate,
    FeedbackRecorded,
    Indexing,
    Resume,
    ScopePage,
    ScopeSummary,
    SearchItem,
    SearchRequest,
    SearchResponse,
    SupersedeRequest,
    SupersedeResult,
    Timeline,
    TimelineItem,
)
from agentmate.retrieval import service as retrieval
from agentmate.skills import repository as skills_repo
from agentmate.skills.service import resolve_version

NAMESPACE = "memory"
SOURCE_TYPE = "memory_entry"
CHUNK_KEY = "current"
FEEDBACK_WEIGHT = 0.15
FEEDBACK_PRIOR = 3
TIMELINE_DEFAULT_LIMIT = 200
TIMELINE_MAX_LIMIT = 500
RESUME_LIMIT = 200
JOURNAL_ONLY_LIMIT = 50
ATTRIBUTION_TIMELINE_LIMIT = 50
SCOPES_NOTE = (
    "Reuse an existing scope before inventing a new key, so every agent's memories of one thing meet. "
    "Conventions: repository → owner/repo, project → its name, agent → agent id, session → session id; "
    "global only for facts that hold everywhere."
)
EMPTY_PAYLOAD_WARNING = (
    "payload is empty: this event carries no content. An event's content goes inside payload "
    "(top-level fields such as content are rejected)."
)


# -- helpers -----------------------------------------------------------------------------------------------------


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _canonical(value[k]) for k in sorted(value, key=str)}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def event_content_hash(data: dict[str, Any]) -> str:
    """sha256 over the normalised event (prior-art §4.4): fixed top-level order, payload keys sorted,
    occurred_at only when the caller supplied it, skill_version_id only when set."""
    doc: dict[str, Any] = {
        "scope_type": data["scope_type"],
        "scope_key": data["scope_key"],
        "session_id": data["session_id"],
        "sequence_no": data["sequence_no"],
        "event_type": data["event_type"],
        "payload": _canonical(data["payload"]),
        "source_type": data["source_type"],
        "source_id": data["source_id"],
    }
    if data.get("occurred_at") is not None:
        doc["occurred_at"] = _utc(data["occurred_at"]).isoformat().replace("+00:00", "Z")
    if data.get("skill_version_id") is not None:
        doc["skill_version_id"] = str(data["skill_version_id"])
    return _sha256(_json(doc))


def _check_scope(errors: ErrorCollector, scope_type: str, scope_key: str, prefix: str = "") -> None:
    if scope_type != "global" and not scope_key:
        errors.add(prefix + "scope_key", f"required when scope_type is {scope_type!r}")
    if scope_type == "global" and scope_key:
        errors.add(
            prefix + "scope_key",
            "must be empty when scope_type is 'global' (pick a scope_type for it)",
            ["project", "repository", "agent", "session"],
        )


def _check_size(errors: ErrorCollector, field: str, value: Any, limit: int) -> None:
    if len(_json(value).encode("utf-8")) > limit:
        errors.add(field, f"at most {limit // 1024} KiB of JSON")


def checkpoint_payload_errors(
    payload: dict[str, Any], errors: ErrorCollector, prefix: str = "payload."
) -> None:
    """A checkpoint payload is exactly: goal (required), label, notes (strings); done, next, open (string lists)."""
    for key in payload:
        if key not in CHECKPOINT_FIELDS:
            errors.add(prefix + key, "unknown checkpoint field", list(CHECKPOINT_FIELDS))
    goal = payload.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        errors.add(prefix + "goal", "required: a non-empty string")
    for key in ("label", "notes"):
        if key in payload and not isinstance(payload[key], str):
            errors.add(prefix + key, "must be a string")
    for key in CHECKPOINT_LIST_FIELDS:
        if key not in payload:
            continue
        value = payload[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            errors.add(prefix + key, "must be an array of strings")
        elif len(value) > MAX_CHECKPOINT_ITEMS or any(len(v) > MAX_CHECKPOINT_ITEM_CHARS for v in value):
            errors.add(
                prefix + key,
                f"at most {MAX_CHECKPOINT_ITEMS} items of {MAX_CHECKPOINT_ITEM_CHARS} characters",
            )


def _event_data(body: EventCreate) -> dict[str, Any]:
    errors = ErrorCollector()
    _check_scope(errors, body.scope_type, body.scope_key)
    if body.sequence_no is not None and not body.session_id:
        errors.add("sequence_no", "requires session_id")
    if bool(body.source_type) != bool(body.source_id):
        errors.add(
            "source_id" if body.source_type else "source_type", "source_type and source_id go together"
        )
    _check_size(errors, "payload", body.payload, MAX_PAYLOAD_BYTES)
    if body.event_type == "checkpoint":
        if not body.session_id:
            errors.add("session_id", "required for checkpoint events (resume works per session)")
        checkpoint_payload_errors(body.payload, errors)
    errors.raise_if_any()
    data = body.model_dump()
    if data["occurred_at"] is not None:
        data["occurred_at"] = _utc(data["occurred_at"])
    data["content_hash"] = event_content_hash(data)
    return data


def _recorded(row: dict[str, Any], created: bool) -> dict[str, Any]:
    warning = EMPTY_PAYLOAD_WARNING if not row["payload"] else None
    return EventRecorded(**row, created=created, warning=warning).model_dump(mode="json")


def _record_in(conn: Conn, principal: Principal, data: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Append (or replay) one event inside the caller's transaction: (row, created)."""
    if data["skill_version_id"] is not None:
        resolve_version(conn, account_id=principal.account_id, version_id=data["skill_version_id"])
    try:  # no savepoint: on an error the whole transaction is abandoned anyway
        row = repo.insert_event(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            data=data,
        )
    except psycopg.errors.UniqueViolation as exc:
        if exc.diag.constraint_name == "memory_events_session_sequence_key":
            raise Conflict(
                f"sequence_no {data['sequence_no']} is already used in session {data['session_id']!r} "
                "by another event"
            ) from None
        raise
    except psycopg.errors.ForeignKeyViolation:
        raise invalid("skill_version_id", "unknown skill version in this account") from None
    if row is not None:
        return row, True
    existing = repo.event_by_key(
        conn, account_id=principal.account_id, idempotency_key=data["idempotency_key"]
    )
    if existing is None:  # pragma: no cover - the conflicting row is committed before ON CONFLICT resolves
        raise Conflict("an event with this idempotency_key is still being written; retry")
    if existing["content_hash"] != data["content_hash"]:
        raise Conflict(
            "idempotency_key was already used with different event content (attribution included); "
            "retries must resend the same event, a new event needs a new key",
            extra={"existing_event_id": str(existing["id"])},
        )
    return existing, False


# -- events ------------------------------------------------------------------------------------------------------


def record_event(db: Database, principal: Principal, body: EventCreate) -> Outcome:
    """201 new event; 200 replay (same key, same content); 409 same key with different content."""
    data = _event_data(body)
    with db.tenant(principal.account_id) as conn:
        row, created = _record_in(conn, principal, data)
    return Outcome(201 if created else 200, _recorded(row, created), not created)


def get_event(db: Database, principal: Principal, event_id: UUID) -> EventDetail:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_event(conn, account_id=principal.account_id, event_id=event_id)
    if row is None:
        raise NotFound("memory event")
    return EventDetail(**row, warning=EMPTY_PAYLOAD_WARNING if not row["payload"] else None)


def list_events(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    session_id: str | None = None,
    scope_type: str | None = None,
    scope_key: str | None = None,
    event_type: str | None = None,
) -> Page[Event]:
    filters = {
        "session_id": session_id,
        "scope_type": scope_type,
        "scope_key": scope_key,
        "event_type": event_type,
    }
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_events(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[Event](items=[Event(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)


def list_scopes(db: Database, principal: Principal, page: PageParams) -> ScopePage:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.scopes(conn, account_id=principal.account_id, limit=page.limit, offset=page.offset)
    return ScopePage(
        items=[ScopeSummary(**r) for r in rows],
        total=total,
        limit=page.limit,
        offset=page.offset,
        note=SCOPES_NOTE,
    )


# -- entries -----------------------------------------------------------------------------------------------------


def _entry_document(entry: dict[str, Any]) -> retrieval.DocumentIn:
    """The retrieval projection of an entry (prior-art §4.3)."""
    metadata: dict[str, Any] = {
        "memory_id": str(entry["id"]),
        "scope_type": entry["scope_type"],
        "scope_key": entry["scope_key"],
        "memory_type": entry["memory_type"],
        "status": entry["status"],
        "confidence": entry["confidence"],
        "importance": entry["importance"],
        "valid_from": _utc(entry["valid_from"]).isoformat(),
        "extraction_method": entry["extraction_method"],
        "attributes": entry["metadata"],
    }
    for key in ("valid_to", "ttl_at"):
        if entry.get(key) is not None:
            metadata[key] = _utc(entry[key]).isoformat()
    if entry.get("source_event_id") is not None:
        metadata["source_event_id"] = str(entry["source_event_id"])
    parts = [p for p in (entry["title"], entry["summary"], entry["content"]) if p and p.strip()]
    return retrieval.DocumentIn(
        namespace=NAMESPACE,
        source_type=SOURCE_TYPE,
        source_id=str(entry["id"]),
        chunk_key=CHUNK_KEY,
        title=entry["title"],
        content="\n\n".join(parts),
        metadata=metadata,
    )


def index_entry(db: Database, account_id: UUID, entry: dict[str, Any]) -> Indexing:
    """(Re)build an entry's retrieval projection; never raises for embedding/vector failures."""
    result = retrieval.index_document(db, account_id, _entry_document(entry))
    return Indexing(status=result.status, document_id=result.document_id, error=result.error)


def index_entries(db: Database, account_id: UUID, entries: list[dict[str, Any]]) -> list[Indexing]:
    """Batch form of ``index_entry`` (one embedding call per batch): used by backfills and the benchmark."""
    results = retrieval.index_documents(db, account_id, [_entry_document(e) for e in entries])
    return [Indexing(status=r.status, document_id=r.document_id, error=r.error) for r in results]


def _indexing_state(conn: Conn, account_id: UUID, entry_ids: list[UUID]) -> dict[UUID, Indexing]:
    states = retrieval.indexing_state(
        conn, account_id, namespace=NAMESPACE, source_type=SOURCE_TYPE, source_ids=[str(i) for i in entry_ids]
    )
    out: dict[UUID, Indexing] = {}
    for entry_id in entry_ids:
        state = states.get(str(entry_id))
        out[entry_id] = (
            Indexing(status=state["status"], document_id=state["id"], error=state["error"])
            if state
            else Indexing(status="missing")
        )
    return out


def create_entry(
    db: Database, principal: Principal, body: EntryCreate, idempotency_key: str | None = None
) -> Outcome:
    """Store a durable memory with its evidence, then index it (indexing failures are reported, not raised)."""
    errors = ErrorCollector()
    _check_scope(errors, body.scope_type, body.scope_key)
    if body.source_event_id is None and not body.evidence:
        errors.add(
            "evidence",
            "a durable memory needs provenance: source_event_id or at least one evidence item "
            "({source_type, source_id, excerpt})",
        )
    if not body.content.strip():
        errors.add("content", "must not be blank")
    valid_from = _utc(body.valid_from) if body.valid_from else None
    if body.valid_to is not None and _utc(body.valid_to) < (valid_from or datetime.now(UTC)):
        errors.add("valid_to", "must not be before valid_from (which defaults to now)")
    _check_size(errors, "metadata", body.metadata, MAX_METADATA_BYTES)
    errors.raise_if_any()
    data = body.model_dump(exclude={"evidence"})
    data["content_hash"] = _sha256(body.content)
    evidence = [e.model_dump() for e in body.evidence]
    with db.tenant(principal.account_id) as conn:

        def insert() -> dict[str, Any]:
            if (
                body.source_event_id is not None
                and repo.get_event(conn, account_id=principal.account_id, event_id=body.source_event_id)
                is None
            ):
                raise invalid("source_event_id", "unknown memory event in this account")
            row = repo.insert_entry(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                data=data,
            )
            ev = repo.insert_evidence(
                conn,
                account_id=principal.account_id,
                user_id=principal.user_id,
                key_id=principal.key_id,
                memory_id=row["id"],
                items=evidence,
            )
            return EntryDetail(**row, evidence=[Evidence(**e) for e in ev]).model_dump(
                mode="json", exclude={"indexing"}
            )

        outcome = idempotency.run_once(
            conn,
            account_id=principal.account_id,
            route="memory.entries.create",
            key=idempotency_key,
            request=body.model_dump(mode="json"),
            create=insert,
        )
        entry_id = UUID(outcome.body["id"])
        row = (
            repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
            if outcome.replay
            else None
        )
    if outcome.replay:
        with db.tenant(principal.account_id) as conn:
            indexing = _indexing_state(conn, principal.account_id, [entry_id])[entry_id]
        if indexing.status == "missing" and row is not None and row["status"] in ("active", "pending"):
            indexing = index_entry(db, principal.account_id, row)  # a crash between commit and indexing
    else:
        created = Entry.model_validate(outcome.body).model_dump()
        indexing = index_entry(db, principal.account_id, created)
    body_out = {**outcome.body, "indexing": indexing.model_dump(mode="json", exclude_none=True)}
    return Outcome(outcome.status, body_out, outcome.replay)


def get_entry(db: Database, principal: Principal, entry_id: UUID) -> EntryDetail:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if row is None:
            raise NotFound("memory entry")
        evidence = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=[entry_id])[entry_id]
        indexing = _indexing_state(conn, principal.account_id, [entry_id])[entry_id]
    return EntryDetail(**row, evidence=[Evidence(**e) for e in evidence], indexing=indexing)


def list_entries(
    db: Database,
    principal: Principal,
    page: PageParams,
    *,
    scope_type: str | None = None,
    scope_key: str | None = None,
    memory_type: str | None = None,
    status: str | None = None,
) -> Page[Entry]:
    filters = {"scope_type": scope_type, "scope_key": scope_key, "memory_type": memory_type, "status": status}
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_entries(
            conn, account_id=principal.account_id, filters=filters, limit=page.limit, offset=page.offset
        )
    return Page[Entry](items=[Entry(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)


# -- search ------------------------------------------------------------------------------------------------------


def feedback_adjustment(useful: int, harmful: int) -> float:
    """0.15 * (u - h) / (u + h + 3): bounded to ±0.15 and weighted by how much evidence exists (§4.3)."""
    return FEEDBACK_WEIGHT * (useful - harmful) / (useful + harmful + FEEDBACK_PRIOR)


def _currently_valid(entry: dict[str, Any], now: datetime) -> bool:
    if entry["valid_from"] > now:
        return False
    if entry["valid_to"] is not None and entry["valid_to"] <= now:
        return False
    return not (entry["ttl_at"] is not None and entry["ttl_at"] <= now)


def search(db: Database, principal: Principal, body: SearchRequest) -> SearchResponse:
    """Hybrid (lexical + vector) search over durable memories, nudged by recorded usefulness."""
    if body.scope_key is not None and body.scope_type is None:
        raise invalid("scope_key", "requires scope_type")
    metadata: dict[str, Any] = {"status": body.status}
    if body.scope_type is not None:
        metadata["scope_type"] = body.scope_type
    if body.scope_key is not None:
        metadata["scope_key"] = body.scope_key
    if body.memory_type is not None:
        metadata["memory_type"] = body.memory_type
    query = retrieval.Query(
        namespace=NAMESPACE,
        text=body.query,
        top_k=min(body.top_k * 3, 50),
        source_type=SOURCE_TYPE,
        metadata=metadata,
    )

    def finish(conn: Conn, result: retrieval.SearchResult) -> SearchResponse:
        hits = [(h, UUID(h.document["source_id"])) for h in result.hits]
        entries = repo.entries_by_ids(conn, account_id=principal.account_id, ids=[i for _, i in hits])
        now = datetime.now(UTC)
        scored: list[tuple[float, int, dict[str, Any], retrieval.Hit, float]] = []
        for position, (hit, entry_id) in enumerate(hits):
            entry = entries.get(entry_id)
            if entry is None or entry["status"] != body.status or not _currently_valid(entry, now):
                continue
            if any(entry[k] != v for k, v in metadata.items() if k != "status"):
                continue
            adjustment = feedback_adjustment(entry["useful_count"], entry["harmful_count"])
            score = min(1.0, max(0.0, hit.score + adjustment))
            scored.append((score, position, entry, hit, adjustment))
        scored.sort(key=lambda s: (-s[0], s[1]))
        scored = scored[: body.top_k]
        ids = [s[2]["id"] for s in scored]
        access = repo.bump_access(conn, account_id=principal.account_id, ids=ids)
        evidence = repo.evidence_for(conn, account_id=principal.account_id, memory_ids=ids)
        items: list[SearchItem] = []
        for rank, (score, _, entry, hit, adjustment) in enumerate(scored, start=1):
            entry = {**entry, **access.get(entry["id"], {})}
            reason = "+".join(hit.channels) + " match"
            if entry["scope_type"] != "global":
                reason += f" in {entry['scope_type']}:{entry['scope_key']}"
            items.append(
                SearchItem(
                    entry=EntryDetail(
                        **entry,
                        evidence=[Evidence(**e) for e in evidence[entry["id"]]],
                        # The hit is the entry's retrieval projection, so its indexing state is at hand.
                        indexing=Indexing(status=hit.document["status"], document_id=hit.document["id"],
                                          error=hit.document.get("error")),
                    ),
                    rank=rank,
                    score=round(score, 6),
                    retrieval_score=round(hit.score, 6),
                    feedback_adjustment=round(adjustment, 6),
                    channels=list(hit.channels),
                    hit_reason=reason,
                    lexical_score=hit.lexical_score,
                    vector_score=hit.vector_score,
                )
            )
        return SearchResponse(
            items=items,
            total=len(items),
            degraded=[Degraded(leg=d.leg, reason=d.reason) for d in result.degraded],
        )

    return retrieval.search(db, principal.account_id, query, then=finish)


# -- supersede ---------------------------------------------------------------------------------------------------


def supersede(db: Database, principal: Principal, entry_id: UUID, body: SupersedeRequest) -> SupersedeResult:
    """``entry_id`` replaces ``body.superseded_id``: a chain, never a cycle; replays are idempotent."""
    old_id = body.superseded_id
    if old_id == entry_id:
        raise invalid("superseded_id", "an entry cannot supersede itself")
    with db.tenant(principal.account_id) as conn:
        rows = repo.lock_entries(conn, account_id=principal.account_id, ids=[entry_id, old_id])
        if entry_id not in rows:
            raise NotFound("memory entry", f"memory entry {entry_id} not found")
        if old_id not in rows:
            raise NotFound("memory entry", f"superseded entry {old_id} not found")
        old = rows[old_id]
        created = True
        if old["superseded_by"] == entry_id:
            created = False
        elif old["superseded_by"] is not None:
            raise Conflict(
                f"entry {old_id} is already superseded by {old['superseded_by']}; supersede that entry "
                "instead (supersedes form a chain)",
                extra={"superseded_by": str(old["superseded_by"])},
            )
        elif repo.chain_reaches(conn, account_id=principal.account_id, start=entry_id, target=old_id):
            raise Conflict(
                f"entry {entry_id} is itself (directly or through a chain) superseded by {old_id}: "
                "this supersede would make a cycle"
            )
        if created:
            old = repo.mark_superseded(
                conn, account_id=principal.account_id, entry_id=old_id, superseded_by=entry_id
            )
        point_ids = retrieval.remove_source(
            conn, principal.account_id, namespace=NAMESPACE, source_type=SOURCE_TYPE, source_id=str(old_id)
        )
        new = rows[entry_id]
    warning = retrieval.remove_points(principal.account_id, point_ids)
    if warning:
        warning = f"superseded, but removing stale vectors failed ({warning}); they are never served"
    return SupersedeResult(
        superseding=Entry(**new),
        superseded=Entry(**old),
        projection_removed=len(point_ids),
        created=created,
        warning=warning,
    )


# -- feedback ----------------------------------------------------------------------------------------------------


def add_feedback(db: Database, principal: Principal, entry_id: UUID, body: FeedbackCreate) -> Outcome:
    """201 + created:true for a new signal (counter moved in the same transaction); 200 + the existing record
    when this memory already has this signal from this session."""
    errors = ErrorCollector()
    _check_size(errors, "metadata", body.metadata, MAX_METADATA_BYTES)
    errors.raise_if_any()
    data = body.model_dump()
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if entry is None:
            raise NotFound("memory entry")
        if body.skill_version_id is not None:
            resolve_version(conn, account_id=principal.account_id, version_id=body.skill_version_id)
        row = repo.insert_feedback(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            key_id=principal.key_id,
            memory_id=entry_id,
            data=data,
        )
        created = row is not None
        if row is not None:
            entry = repo.count_feedback(
                conn, account_id=principal.account_id, entry_id=entry_id, signal=body.signal
            )
        else:
            row = repo.existing_feedback(
                conn,
                account_id=principal.account_id,
                memory_id=entry_id,
                session_id=body.session_id,
                signal=body.signal,
            )
            assert row is not None
    out = FeedbackRecorded(feedback=Feedback(**row), created=created, entry=Entry(**entry))
    return Outcome(201 if created else 200, out.model_dump(mode="json"), not created)


def list_feedback(db: Database, principal: Principal, entry_id: UUID, page: PageParams) -> Page[Feedback]:
    with db.tenant(principal.account_id) as conn:
        if repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id) is None:
            raise NotFound("memory entry")
        rows, total = repo.list_feedback(
            conn, account_id=principal.account_id, memory_id=entry_id, limit=page.limit, offset=page.offset
        )
    return Page[Feedback](
        items=[Feedback(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


# -- timeline / attribution --------------------------------------------------------------------------------------


def _timeline_items(rows: list[dict[str, Any]]) -> list[TimelineItem]:
    out = []
    for r in rows:
        r = dict(r)
        r.pop("recorded_at", None)
        out.append(TimelineItem(**r, attributed=r["skill_version_id"] is not None))
    return out


def timeline(
    db: Database,
    principal: Principal,
    *,
    session_id: str | None = None,
    skill_version_id: UUID | None = None,
    limit: int = TIMELINE_DEFAULT_LIMIT,
) -> Timeline:
    """Skill executions and journal events of one session and/or skill version, in time order."""
    session_id = (session_id or "").strip() or None
    if session_id is None and skill_version_id is None:
        raise invalid(
            "session_id",
            "session_id or skill_version_id is required: an unfiltered account-wide "
            "timeline is a data dump, not attribution",
        )
    if not 1 <= limit <= TIMELINE_MAX_LIMIT:
        raise invalid("limit", f"must be 1..{TIMELINE_MAX_LIMIT}")
    with db.tenant(principal.account_id) as conn:
        if (
            skill_version_id is not None
            and skills_repo.version_ref(conn, account_id=principal.account_id, version_id=skill_version_id)
            is None
        ):
            raise NotFound("skill version")
        rows = repo.timeline(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
            skill_version_id=skill_version_id,
            limit=limit + 1,
        )
    truncated = len(rows) > limit
    items = _timeline_items(rows[:limit])
    return Timeline(
        session_id=session_id,
        skill_version_id=skill_version_id,
        items=items,
        total=len(items),
        skill_log_count=sum(1 for i in items if i.kind == "skill_log"),
        memory_event_count=sum(1 for i in items if i.kind == "memory_event"),
        unattributed_count=sum(1 for i in items if not i.attributed),
        truncated=truncated,
        limit=limit,
    )


def attribution(db: Database, principal: Principal, entry_id: UUID) -> Attribution:
    """Entry → source event → skill version, and how far that chain resolved."""
    with db.tenant(principal.account_id) as conn:
        entry = repo.get_entry(conn, account_id=principal.account_id, entry_id=entry_id)
        if entry is None:
            raise NotFound("memory entry")
        event = None
        if entry["source_event_id"] is not None:
            event = repo.event_with_version(
                conn, account_id=principal.account_id, event_id=entry["source_event_id"]
            )
        if event is None:
            return Attribution(entry_id=entry_id, resolution="none")
        session_id = event["session_id"] or None
        if event["skill_version_id"] is not None:
            resolution = "skill_version"
        elif session_id:
            resolution = "session_only"
        else:
            resolution = "event_only"
        rows = None
        if session_id:
            rows = repo.timeline(
                conn,
                account_id=principal.account_id,
                session_id=session_id,
                skill_version_id=None,
                limit=ATTRIBUTION_TIMELINE_LIMIT + 1,
            )
    return Attribution(
        entry_id=entry_id,
        resolution=resolution,
        source_event_id=event["id"],
        session_id=session_id,
        skill_version_id=event["skill_version_id"],
        skill_name=event["skill_name"],
        skill_version=event["skill_version"],
        session_timeline=_timeline_items(rows[:ATTRIBUTION_TIMELINE_LIMIT]) if rows is not None else None,
        session_timeline_truncated=(len(rows) > ATTRIBUTION_TIMELINE_LIMIT) if rows is not None else None,
    )


# -- checkpoints / resume ----------------------------------------------------------------------------------------


def checkpoint_payload(body: CheckpointCreate) -> dict[str, Any]:
    """The stored payload: goal plus the non-empty optional fields (list items trimmed, blanks dropped)."""
    payload: dict[str, Any] = {"goal": body.goal}
    if body.label:
        payload["label"] = body.label
    for key in CHECKPOINT_LIST_FIELDS:
        items = [s.strip() for s in getattr(body, key) if s.strip()]
        if items:
            payload[key] = items
    if body.notes.strip():
        payload["notes"] = body.notes.strip()
    return payload


def default_checkpoint_key(session_id: str, payload: dict[str, Any]) -> str:
    return f"checkpoint:{session_id}:{_sha256(_json(_canonical(payload)))}"


def _decode_checkpoint(row: dict[str, Any]) -> Checkpoint:
    """Read a checkpoint event field by field; wrong types degrade with a warning instead of failing."""
    payload = row["payload"] if isinstance(row["payload"], dict) else {}
    problems: list[str] = []
    values: dict[str, Any] = {}
    for key in CHECKPOINT_STRING_FIELDS:
        value = payload.get(key, "")
        if not isinstance(value, str):
            problems.append(f"{key} is not a string")
            value = "" if value is None else _json(value)
        values[key] = value
    for key in CHECKPOINT_LIST_FIELDS:
        value = payload.get(key, [])
        if isinstance(value, str):
            problems.append(f"{key} was a string, read as a one-item list")
            value = [value] if value.strip() else []
        elif not isinstance(value, list):
            problems.append(f"{key} is not a list")
            value = []
        values[key] = [v if isinstance(v, str) else _json(v) for v in value]
    unknown = sorted(k for k in payload if k not in CHECKPOINT_FIELDS)
    if unknown:
        problems.append("ignored unknown keys: " + ", ".join(unknown))
    return Checkpoint(
        event_id=row["id"],
        session_id=row["session_id"],
        scope_type=row["scope_type"],
        scope_key=row["scope_key"],
        skill_version_id=row["skill_version_id"],
        idempotency_key=row["idempotency_key"],
        occurred_at=row["occurred_at"],
        warning="; ".join(problems) or None,
        **values,
    )


def save_checkpoint(db: Database, principal: Principal, body: CheckpointCreate) -> Outcome:
    """Store the snapshot as a ``checkpoint`` journal event; unchanged state under the default key is a no-op."""
    payload = checkpoint_payload(body)
    key = body.idempotency_key or default_checkpoint_key(body.session_id, payload)
    event = EventCreate(
        event_type="checkpoint",
        idempotency_key=key,
        payload=payload,
        scope_type=body.scope_type,
        scope_key=body.scope_key,
        session_id=body.session_id,
        skill_version_id=body.skill_version_id,
    )
    data = _event_data(event)
    warning = None
    with db.tenant(principal.account_id) as conn:
        row, created = _record_in(conn, principal, data)
        if not created:
            latest = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=body.session_id)
            if latest is not None and latest["id"] != row["id"]:
                warning = (
                    "identical to an earlier checkpoint, but a different checkpoint was saved after it, so "
                    "resume returns that later one; send an explicit idempotency_key to record this state "
                    "again as the latest"
                )
    out = CheckpointSaved(checkpoint=_decode_checkpoint(row), created=created, warning=warning)
    return Outcome(201 if created else 200, out.model_dump(mode="json"), not created)


def resume(db: Database, principal: Principal, session_id: str) -> Resume:
    """The latest checkpoint plus everything recorded after it (or the journal tail when there is none)."""
    session_id = session_id.strip()
    if not session_id:
        raise invalid("session_id", "required")
    with db.tenant(principal.account_id) as conn:
        cp = repo.latest_checkpoint(conn, account_id=principal.account_id, session_id=session_id)
        limit = RESUME_LIMIT if cp is not None else JOURNAL_ONLY_LIMIT
        after = (cp["occurred_at"], cp["created_at"], cp["id"]) if cp is not None else None
        rows = repo.timeline(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
            skill_version_id=None,
            limit=limit + 1,
            after=after,
            tail=True,
        )
    truncated = len(rows) > limit
    items = _timeline_items(rows[-limit:] if truncated else rows)
    if cp is not None:
        resolution = "checkpoint"
    else:
        resolution = "journal_only" if items else "empty"
    return Resume(
        session_id=session_id,
        resolution=resolution,
        checkpoint=_decode_checkpoint(cp) if cp is not None else None,
        since_checkpoint=items,
        truncated=truncated,
    )
