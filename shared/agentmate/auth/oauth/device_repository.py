"""SQL for the device authorization grant (``oauth_device_codes``, migrations/0092_oauth_device.sql).

A pending device code belongs to no account yet, so every statement is a SECURITY DEFINER function keyed by the
device code's hash or the user code; each runs as one statement (``Database.single_statement``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from psycopg.rows import class_row

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

# Constraint name → the request field it guards. The service checks each before the SQL runs; these name the
# field should one ever be reached.
CONSTRAINTS = constraints(
    {
        "oauth_device_codes_status_check": ("status", "must be one of pending, approved, denied, consumed"),
        "oauth_device_codes_scopes_check": ("scope", "must name at least one scope"),
        "oauth_device_codes_interval_check": ("interval", "must be a positive number of seconds"),
        "oauth_device_codes_approval_check": ("scopes", "an approval grants at least one scope"),
        "oauth_device_codes_user_code_key": ("user_code", "collides with a pending request's; ask again"),
        "oauth_device_codes_account_fkey": ("account_id", "the approving user's account no longer exists"),
    }
)


class PendingRow(NamedTuple):
    client_id: str
    client_name: str | None
    client_uri: str | None
    scopes: list[str]
    resource: str
    expires_at: datetime


class PollRow(NamedTuple):
    outcome: str
    account_id: UUID | None
    user_id: UUID | None
    client_name: str | None
    client_uri: str | None
    scopes: list[str] | None
    resource: str | None
    interval_s: int | None


def start(
    conn: Conn,
    *,
    device_code_hash: str,
    user_code: str,
    client_id: str,
    client_name: str | None,
    client_uri: str | None,
    scopes: Sequence[str],
    resource: str,
    ttl_s: int,
    interval_s: int,
) -> bool:
    """Store a new request; False when the user code is taken by a live pending request."""
    row = conn.execute(
        """SELECT oauth_device_start(%(device_code_hash)s, %(user_code)s, %(client_id)s, %(client_name)s,
                  %(client_uri)s, %(scopes)s, %(resource)s, %(ttl_s)s, %(interval_s)s) AS stored""",
        {
            "device_code_hash": device_code_hash,
            "user_code": user_code,
            "client_id": client_id,
            "client_name": client_name,
            "client_uri": client_uri,
            "scopes": list(scopes),
            "resource": resource,
            "ttl_s": ttl_s,
            "interval_s": interval_s,
        },
    ).fetchone()
    return bool(row and row["stored"])


def pending(conn: Conn, user_code: str) -> PendingRow | None:
    return (
        conn.cursor(row_factory=class_row(PendingRow))
        .execute(
            """SELECT client_id, client_name, client_uri, scopes, resource, expires_at
               FROM oauth_device_pending(%(user_code)s)""",
            {"user_code": user_code},
        )
        .fetchone()
    )


def decide(
    conn: Conn,
    user_code: str,
    *,
    approve: bool,
    account_id: UUID | None = None,
    user_id: UUID | None = None,
    scopes: Sequence[str] | None = None,
) -> bool:
    """Approve or deny a pending request; False when it is no longer pending (or the scopes exceed the ask)."""
    row = conn.execute(
        """SELECT oauth_device_decide(%(user_code)s, %(approve)s, %(account_id)s, %(user_id)s, %(scopes)s)
                  AS decided""",
        {
            "user_code": user_code,
            "approve": approve,
            "account_id": account_id,
            "user_id": user_id,
            "scopes": list(scopes) if scopes is not None else None,
        },
    ).fetchone()
    return bool(row and row["decided"])


def poll(conn: Conn, *, device_code_hash: str, client_id: str, slow_down_s: int) -> PollRow:
    row = (
        conn.cursor(row_factory=class_row(PollRow))
        .execute(
            """SELECT outcome, account_id, user_id, client_name, client_uri, scopes, resource, interval_s
               FROM oauth_device_poll(%(device_code_hash)s, %(client_id)s, %(slow_down_s)s)""",
            {"device_code_hash": device_code_hash, "client_id": client_id, "slow_down_s": slow_down_s},
        )
        .fetchone()
    )
    assert row is not None  # the function always returns one row
    return row
