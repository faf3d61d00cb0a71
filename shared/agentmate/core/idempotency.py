"""Idempotency-Key support for creates: a replay returns the original response, a changed body is a 409.

The key is reserved with an INSERT in the same transaction as the create, so two concurrent requests with one
key serialise on that row: the second waits for the first to commit and then replays its stored response.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.errors import Conflict, invalid

MAX_KEY_LENGTH = 255


@dataclass(frozen=True)
class Outcome:
    status: int
    body: dict[str, Any]
    replay: bool


def canonical_hash(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode()).hexdigest()


def check_key(key: str | None) -> str | None:
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise invalid("Idempotency-Key", f"must be 1..{MAX_KEY_LENGTH} printable characters")
    return key


def run_once(
    conn: Conn,
    *,
    account_id: UUID,
    route: str,
    key: str | None,
    request: Any,
    create: Callable[[], dict[str, Any]],
    status: int = 201,
) -> Outcome:
    """Run ``create`` at most once per (account, route, key)."""
    if key is None:
        return Outcome(status, create(), False)
    request_hash = canonical_hash(request)
    reserved = conn.execute(
        """INSERT INTO idempotency_keys (account_id, route, key, request_hash)
           VALUES (%(a)s, %(r)s, %(k)s, %(h)s) ON CONFLICT DO NOTHING RETURNING key""",
        {"a": account_id, "r": route, "k": key, "h": request_hash},
    ).fetchone()
    if reserved is None:
        row = conn.execute(
            """SELECT request_hash, status_code, response FROM idempotency_keys
               WHERE account_id = %(a)s AND route = %(r)s AND key = %(k)s""",
            {"a": account_id, "r": route, "k": key},
        ).fetchone()
        if row is None or row["status_code"] is None:
            raise Conflict("a request with this Idempotency-Key is still in progress")
        if row["request_hash"] != request_hash:
            raise Conflict("Idempotency-Key was already used with a different request body")
        return Outcome(row["status_code"], row["response"], True)
    body = create()
    from psycopg.types.json import Jsonb

    conn.execute(
        """UPDATE idempotency_keys SET status_code = %(s)s, response = %(b)s
           WHERE account_id = %(a)s AND route = %(r)s AND key = %(k)s""",
        {"s": status, "b": Jsonb(body), "a": account_id, "r": route, "k": key},
    )
    return Outcome(status, body, False)
