"""Idempotency-Key support for creates: a replay returns the original response, a changed body is a 409.

The key is reserved with an INSERT in the same transaction as the create, so two concurrent requests with one
key serialise on that row: the second waits for the first to commit and then replays its stored response.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar
from uuid import UUID

from psycopg.rows import class_row
from psycopg.types.json import Jsonb
from pydantic import BaseModel

from agentmate.core.db import Conn
from agentmate.core.errors import Conflict, invalid
from agentmate.core.results import Created

M = TypeVar("M", bound=BaseModel)

MAX_KEY_LENGTH = 255
# 1..255 printable ASCII characters, at least one of them visible (the OpenAPI states the same pattern).
KEY_PATTERN = r"^[ -~]*[!-~][ -~]*$"
_KEY = re.compile(KEY_PATTERN)


class _Stored(NamedTuple):
    """A reserved key's row: the request it was used with and the response (None while that request runs)."""

    request_hash: str
    response: Any


def canonical_hash(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


def check_key(key: str | None) -> str | None:
    if key is None:
        return None
    if len(key) > MAX_KEY_LENGTH or not _KEY.match(key):
        raise invalid("Idempotency-Key", f"must be 1..{MAX_KEY_LENGTH} printable ASCII characters")
    return key.strip()


def once(
    conn: Conn,
    *,
    account_id: UUID,
    route: str,
    key: str | None,
    request: Any,
    model: type[M],
    create: Callable[[], M],
) -> Created[M]:
    """Run ``create`` at most once per (account, route, key). The store keeps the serialised response; a replay
    hands back the same model, re-validated from it."""
    if key is None:
        return Created(create())
    request_hash = canonical_hash(request)
    reserved = conn.execute(
        """INSERT INTO idempotency_keys (account_id, route, key, request_hash)
           VALUES (%(a)s, %(r)s, %(k)s, %(h)s) ON CONFLICT DO NOTHING RETURNING key""",
        {"a": account_id, "r": route, "k": key, "h": request_hash},
    ).fetchone()
    if reserved is None:
        row = (
            conn.cursor(row_factory=class_row(_Stored))
            .execute(
                """SELECT request_hash, response FROM idempotency_keys
               WHERE account_id = %(a)s AND route = %(r)s AND key = %(k)s""",
                {"a": account_id, "r": route, "k": key},
            )
            .fetchone()
        )
        if row is None or row.response is None:
            raise Conflict("a request with this Idempotency-Key is still in progress")
        if row.request_hash != request_hash:
            # Worded for both transports: REST's Idempotency-Key header and MCP's idempotency_key argument.
            created = row.response.get("id") if isinstance(row.response, dict) else None
            raise Conflict(
                "this idempotency key was already used with a different request body"
                + (f" (that request created {created})" if created else "")
                + ": a retry must resend the same body, a new request needs a new key",
                extra={"existing_id": str(created)} if created else None,
            )
        return Created(model.model_validate(row.response), replay=True)
    value = create()
    conn.execute(
        """UPDATE idempotency_keys SET response = %(b)s
           WHERE account_id = %(a)s AND route = %(r)s AND key = %(k)s""",
        {"b": Jsonb(value.model_dump(mode="json")), "a": account_id, "r": route, "k": key},
    )
    return Created(value)
