"""Working memory use cases. Each runs in one tenant transaction and is shared by REST and MCP.

seq is assigned here, never by the caller: an append locks the session row FOR UPDATE, numbers its new items
from ``last_seq + 1`` and stores the new ``last_seq`` on the session in the same transaction, so concurrent
appends to one session serialise and seq has no duplicates or gaps at write time. Deleting items leaves gaps
but never lowers ``last_seq``, so a seq is never reused.

Idempotency is per session and per item: ``idempotency_key`` names an item; a retry with identical content
replays the stored item (``created=false``, original seq), the same key with different content is a 409 and
the whole batch is rolled back.
"""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

from agentmate.core import idempotency
from agentmate.core.db import TenantTransactions
from agentmate.core.errors import Conflict, ErrorCollector, FieldError, NotFound, invalid
from agentmate.core.idempotency import canonical_hash
from agentmate.core.limits import service as limits
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import counted, new_only
from agentmate.core.pagination import MAX_LIMIT, Page, PageParams
from agentmate.core.principal import Principal
from agentmate.core.results import Created
from agentmate.core.text import blank_to_none
from agentmate.working import repository as repo
from agentmate.working.schemas import DEFAULT_ITEM_LIMIT as DEFAULT_ITEM_LIMIT
from agentmate.working.schemas import (
    MAX_BATCH_BYTES,
    MAX_CONTENT_BYTES,
    MAX_ITEM_METADATA_BYTES,
    MAX_SESSION_METADATA_BYTES,
    ROLES,
    SESSION_STATUSES,
    AppendedItem,
    AppendResult,
    ItemIn,
    ItemPage,
    ItemsAppend,
    RecentItem,
    RecentItems,
    SessionCreate,
    SessionDeleted,
    SessionUpdate,
    WorkingItem,
    WorkingSession,
)
from agentmate.working.schemas import MAX_SEQ as MAX_SEQ

MAX_PAGE_BYTES = 4 * 1024 * 1024  # content + metadata per replay page (a Lambda response is at most 6 MB)
RECENT_PAGE = 32


# --- validation helpers ---------------------------------------------------------------------------------------


def _text_problem(value: str) -> str | None:
    """Why Postgres could not store this text verbatim, or None."""
    if "\x00" in value:
        return "must not contain NUL (\\u0000) characters"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "must be valid Unicode (no unpaired surrogates)"
    return None


def _json_problem(value: Any) -> str | None:
    """Why a JSON value could not be stored as jsonb, or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            problem = _text_problem(v)
            if problem:
                return "strings " + problem
        elif isinstance(v, dict):
            for k, child in v.items():
                problem = _text_problem(str(k))
                if problem:
                    return "keys " + problem
                stack.append(child)
        elif isinstance(v, list):
            stack.extend(v)
    return None


def _metadata_json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _check_metadata(errors: ErrorCollector, field: str, value: dict[str, Any], max_bytes: int) -> int:
    """Validate a metadata object; returns its serialized size in bytes (0 when invalid)."""
    problem = _json_problem(value)
    if problem:
        errors.add(field, problem)
        return 0
    size = len(_metadata_json(value).encode("utf-8"))
    if size > max_bytes:
        errors.add(field, f"at most {max_bytes} bytes of JSON, got {size}")
    return size


def _check_session_text(errors: ErrorCollector, fields: dict[str, str | None]) -> None:
    for name, value in fields.items():
        if value is not None:
            problem = _text_problem(value)
            if problem:
                errors.add(name, problem)


# --- sessions -------------------------------------------------------------------------------------------------


@counted("WorkingSessionCreated", new_only)
def create_session(
    db: TenantTransactions,
    principal: Principal,
    body: SessionCreate | None = None,
    idempotency_key: str | None = None,
) -> Created[WorkingSession]:
    """Create a session (every field optional). Honours the ``Idempotency-Key`` convention of creates."""
    body = body or SessionCreate()
    errors = ErrorCollector()
    _check_session_text(errors, {"title": body.title, "agent": body.agent})
    _check_metadata(errors, "metadata", body.metadata, MAX_SESSION_METADATA_BYTES)
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:

        def insert() -> WorkingSession:
            row = repo.insert_session(
                conn,
                account_id=principal.account_id,
                title=body.title,
                agent=body.agent,
                metadata=body.metadata,
            )
            return WorkingSession(**row)

        return idempotency.once(
            conn,
            account_id=principal.account_id,
            route="memory.working.sessions.create",
            key=idempotency_key,
            request=body.model_dump(mode="json"),
            model=WorkingSession,
            create=insert,
        )


def get_session(db: TenantTransactions, principal: Principal, session_id: UUID) -> WorkingSession:
    with db.tenant(principal.account_id) as conn:
        row = repo.get_session(conn, account_id=principal.account_id, session_id=session_id)
    if row is None:
        raise NotFound("working session")
    return WorkingSession(**row)


def list_sessions(
    db: TenantTransactions,
    principal: Principal,
    page: PageParams,
    *,
    status: str | None = None,
    agent: str | None = None,
) -> Page[WorkingSession]:
    """Sessions, most recently updated first, optionally filtered by status and exact agent."""
    if status is not None and status not in SESSION_STATUSES:
        raise invalid("status", "unknown status", list(SESSION_STATUSES))
    agent = blank_to_none(agent)
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.search_sessions(
            conn,
            account_id=principal.account_id,
            status=status,
            agent=agent,
            limit=page.limit,
            offset=page.offset,
        )
    return Page[WorkingSession](
        items=[WorkingSession(**r) for r in rows], total=total, limit=page.limit, offset=page.offset
    )


def update_session(
    db: TenantTransactions, principal: Principal, session_id: UUID, body: SessionUpdate
) -> WorkingSession:
    """Change the fields sent (title, status, metadata); null and empty-PATCH rules: agentmate.core.patch."""
    changes = body.changes()
    errors = ErrorCollector()
    if "metadata" in changes:
        _check_metadata(errors, "metadata", changes["metadata"], MAX_SESSION_METADATA_BYTES)
    _check_session_text(errors, {"title": changes.get("title")})
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        row = repo.update_session(
            conn, account_id=principal.account_id, session_id=session_id, changes=changes
        )
    if row is None:
        raise NotFound("working session")
    return WorkingSession(**row)


def delete_session(db: TenantTransactions, principal: Principal, session_id: UUID) -> SessionDeleted:
    """Delete a session and every item in it; reports how many items went with it."""
    with db.tenant(principal.account_id) as conn:
        items_deleted = repo.delete_session(conn, account_id=principal.account_id, session_id=session_id)
    if items_deleted is None:
        raise NotFound("working session")
    return SessionDeleted(id=session_id, items_deleted=items_deleted)


# --- items ----------------------------------------------------------------------------------------------------


def content_hash(item: ItemIn) -> str:
    """What a retry under the same idempotency_key must match: type, role, content and metadata."""
    return canonical_hash(
        {
            "item_type": item.item_type,
            "role": item.role,
            "content": item.content,
            "metadata": item.metadata or {},
        }
    )


def _prepare(items: list[ItemIn]) -> list[dict[str, Any]]:
    """Check every rule a schema cannot express (all errors at once); the rows to insert, in request order."""
    errors = ErrorCollector()
    prepared: list[dict[str, Any]] = []
    first_index: dict[str, int] = {}
    total_bytes = 0
    for i, item in enumerate(items):
        at = f"items[{i}]"
        if item.item_type == "message" and item.role is None:
            errors.add(f"{at}.role", "required when item_type is message", list(ROLES))
            errors.add(f"{at}.item_type", "message items need a role")
        elif item.item_type != "message" and item.role is not None:
            errors.add(
                f"{at}.role",
                f"only messages have a role; omit it (or send null) for item_type {item.item_type}",
                [None],
            )
            errors.add(f"{at}.item_type", f"{item.item_type} items take no role")
        problem = _text_problem(item.content)
        content_bytes = 0
        if problem:
            errors.add(f"{at}.content", problem)
        else:
            content_bytes = len(item.content.encode("utf-8"))
            if content_bytes > MAX_CONTENT_BYTES:
                errors.add(f"{at}.content", f"at most {MAX_CONTENT_BYTES} bytes (UTF-8), got {content_bytes}")
        metadata = item.metadata or {}
        metadata_bytes = _check_metadata(errors, f"{at}.metadata", metadata, MAX_ITEM_METADATA_BYTES)
        key = item.idempotency_key
        if _text_problem(key) or not key.isprintable():
            errors.add(f"{at}.idempotency_key", "must be printable characters only")
        elif key in first_index:
            errors.add(
                f"{at}.idempotency_key",
                f"duplicates items[{first_index[key]}].idempotency_key; keys must be unique in a batch",
            )
        else:
            first_index[key] = i
        total_bytes += content_bytes + metadata_bytes
        prepared.append(
            {
                "item_type": item.item_type,
                "role": item.role,
                "content": item.content,
                "metadata_json": _metadata_json(metadata),
                "idempotency_key": key,
                "size_bytes": content_bytes + metadata_bytes,
            }
        )
    if total_bytes > MAX_BATCH_BYTES:
        errors.add(
            "items",
            f"a batch carries at most {MAX_BATCH_BYTES} bytes of content and metadata, "
            f"got {total_bytes}; split it into several batches",
        )
    errors.raise_if_any()
    for item, row in zip(items, prepared, strict=True):
        row["content_hash"] = content_hash(item)
    return prepared


@counted("WorkingItemsAppended", lambda result: result.created_count)
def append_items(
    db: TenantTransactions, principal: Principal, session_id: UUID, body: ItemsAppend
) -> AppendResult:
    """Append a batch all-or-nothing. ``result.replay`` is true when every item was already stored."""
    prepared = _prepare(body.items)
    account_id = principal.account_id
    with db.tenant(account_id) as conn:
        session = repo.get_session(conn, account_id=account_id, session_id=session_id, for_update=True)
        if session is None:
            raise NotFound("working session")
        existing = repo.items_by_keys(
            conn, account_id=account_id, session_id=session_id, keys=[p["idempotency_key"] for p in prepared]
        )
        conflicts = [
            FieldError(
                f"items[{i}].idempotency_key",
                f"already used in this session for different content (seq {existing[p['idempotency_key']]['seq']})",
            )
            for i, p in enumerate(prepared)
            if p["idempotency_key"] in existing
            and existing[p["idempotency_key"]]["content_hash"] != p["content_hash"]
        ]
        if conflicts:
            raise Conflict(
                "idempotency_key reused with different content; nothing from this batch was stored",
                errors=conflicts,
            )
        last_seq: int = session["last_seq"]
        new = [p for p in prepared if p["idempotency_key"] not in existing]
        limits.require_room(
            conn,
            "working_items",
            get_limit_settings().max_working_items,
            adding=len(new),
            account_id=account_id,
        )
        for p in new:
            last_seq += 1
            p["seq"] = last_seq
        inserted = {
            r["seq"]: r["created_at"]
            for r in repo.insert_items(conn, account_id=account_id, session_id=session_id, items=new)
        }
        if new:
            repo.advance_session(conn, account_id=account_id, session_id=session_id, last_seq=last_seq)
    receipts: list[AppendedItem] = []
    for p in prepared:
        stored = existing.get(p["idempotency_key"])
        if stored is not None:
            receipts.append(
                AppendedItem(
                    seq=stored["seq"],
                    idempotency_key=p["idempotency_key"],
                    item_type=stored["item_type"],
                    role=stored["role"],
                    content_hash=stored["content_hash"],
                    created=False,
                    created_at=stored["created_at"],
                )
            )
        else:
            receipts.append(
                AppendedItem(
                    seq=p["seq"],
                    idempotency_key=p["idempotency_key"],
                    item_type=p["item_type"],
                    role=p["role"],
                    content_hash=p["content_hash"],
                    created=True,
                    created_at=inserted[p["seq"]],
                )
            )
    return AppendResult(
        session_id=session_id,
        items=receipts,
        created_count=len(new),
        replayed_count=len(prepared) - len(new),
        last_seq=last_seq,
    )


def list_items(
    db: TenantTransactions,
    principal: Principal,
    session_id: UUID,
    *,
    after_seq: int = 0,
    limit: int = DEFAULT_ITEM_LIMIT,
) -> ItemPage:
    """Items with seq > after_seq in seq order; ``has_more`` is exact even across gaps left by deletions."""
    errors = ErrorCollector()
    if not 0 <= after_seq <= MAX_SEQ:
        errors.add("after_seq", f"must be between 0 and {MAX_SEQ}")
    if not 1 <= limit <= MAX_LIMIT:
        errors.add("limit", f"must be between 1 and {MAX_LIMIT}")
    errors.raise_if_any()
    with db.tenant(principal.account_id) as conn:
        rows, has_more, size_limited = repo.page_items(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
            after_seq=after_seq,
            limit=limit,
            max_bytes=MAX_PAGE_BYTES,
        )
        # Read after the items so last_seq is never below a seq on the page.
        session = repo.get_session(conn, account_id=principal.account_id, session_id=session_id)
    if session is None:
        raise NotFound("working session")
    items = [WorkingItem(**r) for r in rows]
    return ItemPage(
        session_id=session_id,
        items=items,
        after_seq=after_seq,
        limit=limit,
        has_more=has_more,
        next_after_seq=items[-1].seq if items else after_seq,
        last_seq=session["last_seq"],
        size_limited=size_limited,
    )


def delete_item(db: TenantTransactions, principal: Principal, session_id: UUID, seq: int) -> None:
    """Delete one item. The session keeps its counter, so the seq is never handed out again."""
    if not 1 <= seq <= MAX_SEQ:
        raise invalid("seq", f"must be between 1 and {MAX_SEQ}")
    with db.tenant(principal.account_id) as conn:
        if repo.get_session(conn, account_id=principal.account_id, session_id=session_id) is None:
            raise NotFound("working session")
        if not repo.delete_item(conn, account_id=principal.account_id, session_id=session_id, seq=seq):
            raise NotFound("working item")
        repo.touch_session(conn, account_id=principal.account_id, session_id=session_id)


def recent_items(
    db: TenantTransactions, principal: Principal, session_id: UUID, *, max_chars: int
) -> RecentItems:
    """The session's newest items, newest first, until their content reaches ``max_chars`` characters (the item
    that crosses it included, with only its first ``max_chars + 1`` characters): what a character budget can
    hold, read without loading the rest of a long session."""
    # Pipeline mode: the session check, the count and the first page travel together (one round trip); a budget
    # that 32 items do not fill reads on, a page at a time.
    with db.tenant(principal.account_id, pipeline=True) as conn:
        found, total, rows = repo.recent_window(
            conn,
            account_id=principal.account_id,
            session_id=session_id,
            before_seq=MAX_SEQ,
            limit=RECENT_PAGE,
            max_chars=max_chars + 1,
        )
        if not found:
            raise NotFound("working session")
        items: list[RecentItem] = []
        chars = 0
        while chars < max_chars:
            for row in rows:
                items.append(RecentItem(**row))
                chars += row["content_chars"]
                if chars >= max_chars:
                    break
            if chars >= max_chars or len(rows) < RECENT_PAGE:
                break
            rows = repo.recent_items(
                conn,
                account_id=principal.account_id,
                session_id=session_id,
                before_seq=rows[-1]["seq"],
                limit=RECENT_PAGE,
                max_chars=max_chars + 1,
            )
    return RecentItems(session_id=session_id, items=items, total=total)
