"""SQL for users and API keys. Pre-authentication lookups go through SECURITY DEFINER functions."""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from psycopg.rows import class_row

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints(
    {
        "users_email_key": ("email", "email already registered"),
        "users_email_lower_check": ("email", "must be lowercase"),
        "users_role_check": ("role", "must be one of user, admin"),
        "api_keys_name_check": ("name", "must be 1..200 characters"),
        "api_keys_key_hash_key": ("key", "collides with an existing key; create it again"),
    }
)


# Rows the service reads (frozen, built by ``class_row``); API-key rows go straight into the response models.


class NewUser(NamedTuple):
    user_id: UUID
    account_id: UUID


class LoginUser(NamedTuple):
    user_id: UUID
    account_id: UUID
    password_hash: str
    role: str
    credentials_epoch: int
    suspended: bool


class KeyCaller(NamedTuple):
    """An API key's caller; ``stale``: its last_used_at is older than a minute."""

    key_id: UUID
    account_id: UUID
    user_id: UUID
    scopes: list[str]
    role: str
    expired: bool
    stale: bool
    suspended: bool


class JwtUser(NamedTuple):
    role: str
    credentials_epoch: int
    suspended: bool


class OAuthTokenRow(NamedTuple):
    """An access or refresh token with its grant, and every reason it may be refused (one statement)."""

    kind: str
    grant_id: UUID
    account_id: UUID
    user_id: UUID
    client_id: str
    scopes: list[str]
    resource: str
    role: str
    expires_at: datetime
    expired: bool
    used: bool
    revoked: bool
    epoch_moved: bool
    suspended: bool
    stale: bool


class User(NamedTuple):
    id: UUID
    account_id: UUID
    email: str
    role: str
    password_hash: str
    credentials_epoch: int
    created_at: datetime


def register(conn: Conn, *, email: str, password_hash: str) -> NewUser:
    row = (
        conn.cursor(row_factory=class_row(NewUser))
        .execute(
            "SELECT user_id, account_id FROM auth_register(%(email)s, %(password_hash)s)",
            {"email": email, "password_hash": password_hash},
        )
        .fetchone()
    )
    assert row is not None
    return row


def user_by_email(conn: Conn, email: str) -> LoginUser | None:
    return (
        conn.cursor(row_factory=class_row(LoginUser))
        .execute(
            "SELECT user_id, account_id, password_hash, role, credentials_epoch, suspended FROM auth_user_by_email(%(email)s)",
            {"email": email},
        )
        .fetchone()
    )


def api_key_by_hash(conn: Conn, key_hash: str) -> KeyCaller | None:
    """The key's caller, whether it expired, whether its last_used_at is older than a minute (stale), and whether
    its account is suspended."""
    return (
        conn.cursor(row_factory=class_row(KeyCaller))
        .execute(
            "SELECT key_id, account_id, user_id, scopes, role, expired, stale, suspended FROM auth_api_key(%(key_hash)s)",
            {"key_hash": key_hash},
        )
        .fetchone()
    )


def touch_api_key(conn: Conn, key_id: UUID) -> None:
    """Stamp last_used_at unless another request did within the minute."""
    conn.execute("SELECT auth_touch_api_key(%(key_id)s)", {"key_id": key_id})


def jwt_user(conn: Conn, *, user_id: UUID, account_id: UUID) -> JwtUser | None:
    return (
        conn.cursor(row_factory=class_row(JwtUser))
        .execute(
            "SELECT role, credentials_epoch, suspended FROM auth_jwt_user(%(user_id)s, %(account_id)s)",
            {"user_id": user_id, "account_id": account_id},
        )
        .fetchone()
    )


def get_user(conn: Conn, user_id: UUID) -> User | None:
    return (
        conn.cursor(row_factory=class_row(User))
        .execute(
            "SELECT id, account_id, email, role, password_hash, credentials_epoch, created_at FROM users WHERE id = %(user_id)s",
            {"user_id": user_id},
        )
        .fetchone()
    )


def set_credentials(conn: Conn, user_id: UUID, *, expected_hash: str, password_hash: str) -> int | None:
    """Replace the password and bump the epoch, unless the password changed meanwhile; returns the new epoch."""
    row = conn.execute(
        """UPDATE users SET password_hash = %(password_hash)s, credentials_epoch = credentials_epoch + 1
           WHERE id = %(user_id)s AND password_hash = %(expected_hash)s RETURNING credentials_epoch""",
        {"password_hash": password_hash, "user_id": user_id, "expected_hash": expected_hash},
    ).fetchone()
    return row["credentials_epoch"] if row else None


def bump_epoch(conn: Conn, user_id: UUID) -> None:
    conn.execute(
        "UPDATE users SET credentials_epoch = credentials_epoch + 1 WHERE id = %(user_id)s",
        {"user_id": user_id},
    )


def delete_account(conn: Conn, account_id: UUID) -> bool:
    """Every tenant table references accounts ON DELETE CASCADE, so this removes every row of the account."""
    return (
        conn.execute("DELETE FROM accounts WHERE id = %(account_id)s", {"account_id": account_id}).rowcount
        > 0
    )


_KEY_COLUMNS = "id, name, prefix, scopes, created_by_key_id, created_at, expires_at, last_used_at"


def insert_api_key(
    conn: Conn,
    *,
    account_id: UUID,
    user_id: UUID,
    name: str,
    key_hash: str,
    prefix: str,
    scopes: list[str],
    created_by_key_id: UUID | None,
    expires_at: datetime | None,
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO api_keys (account_id, user_id, name, key_hash, prefix, scopes, created_by_key_id, expires_at)
            VALUES (%(a)s, %(u)s, %(n)s, %(h)s, %(p)s, %(s)s, %(c)s, %(e)s) RETURNING {_KEY_COLUMNS}""",
        {
            "a": account_id,
            "u": user_id,
            "n": name,
            "h": key_hash,
            "p": prefix,
            "s": scopes,
            "c": created_by_key_id,
            "e": expires_at,
        },
    ).fetchone()
    assert row is not None
    return row


def list_api_keys(conn: Conn, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    rows = conn.execute(
        f"SELECT {_KEY_COLUMNS}, count(*) OVER () AS total FROM api_keys ORDER BY created_at DESC, id LIMIT %(limit)s OFFSET %(offset)s",
        {"limit": limit, "offset": offset},
    ).fetchall()
    total = rows[0]["total"] if rows else conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]  # type: ignore[index]
    return rows, total


def delete_api_key(conn: Conn, key_id: UUID) -> bool:
    return conn.execute("DELETE FROM api_keys WHERE id = %(key_id)s", {"key_id": key_id}).rowcount > 0


def admin_set_suspended(
    conn: Conn, *, admin_user_id: UUID, account_id: UUID, suspend: bool
) -> dict[str, Any] | None:
    """Suspend or reactivate another account (the database checks that the caller is an admin); None when no
    such account exists."""
    return conn.execute(
        "SELECT account_id, suspended_at FROM admin_set_account_suspended(%(admin_user_id)s, %(account_id)s, %(suspend)s)",
        {"admin_user_id": admin_user_id, "account_id": account_id, "suspend": suspend},
    ).fetchone()


def user_role(conn: Conn, user_id: UUID) -> str | None:
    row = conn.execute("SELECT role FROM users WHERE id = %(user_id)s", {"user_id": user_id}).fetchone()
    return row["role"] if row else None


# -- OAuth tokens (migrations/0090_oauth.sql) ---------------------------------------------------------------------------

_TOKEN_COLUMNS = (
    "kind, grant_id, account_id, user_id, client_id, scopes, resource, role, expires_at, expired, used, revoked,"
    " epoch_moved, suspended, stale"
)


def oauth_token_by_hash(conn: Conn, token_hash: str) -> OAuthTokenRow | None:
    return (
        conn.cursor(row_factory=class_row(OAuthTokenRow))
        .execute(f"SELECT {_TOKEN_COLUMNS} FROM auth_oauth_token(%(token_hash)s)", {"token_hash": token_hash})
        .fetchone()
    )


def touch_oauth_grant(conn: Conn, grant_id: UUID) -> None:
    conn.execute("SELECT auth_oauth_touch_grant(%(grant_id)s)", {"grant_id": grant_id})


# -- throttling (auth_throttle: not tenant rows, see migrations/0030_credentials.sql) ---------------------------


def throttle_retry_after(conn: Conn, buckets: list[str]) -> int | None:
    """Whole seconds until every one of ``buckets`` is unblocked; None when none is blocked."""
    row = conn.execute(
        """SELECT ceil(extract(epoch FROM max(blocked_until) - now()))::integer AS retry_after
           FROM auth_throttle WHERE bucket = ANY(%(buckets)s) AND blocked_until > now()""",
        {"buckets": buckets},
    ).fetchone()
    return row["retry_after"] if row else None


def throttle_hit(conn: Conn, buckets: list[tuple[str, int, int]], *, base_s: int, max_s: int) -> None:
    """``buckets``: (bucket, limit, window seconds) each; one statement for all of them."""
    calls = ", ".join(
        f"auth_throttle_hit(%(bucket_{i})s, %(limit_{i})s, %(window_{i})s, %(base_s)s, %(max_s)s)"
        for i in range(len(buckets))
    )
    params: dict[str, Any] = {"base_s": base_s, "max_s": max_s}
    for i, (bucket, limit, window) in enumerate(buckets):
        params |= {f"bucket_{i}": bucket, f"limit_{i}": limit, f"window_{i}": window}
    conn.execute(f"SELECT {calls}", params)  # calls holds only placeholders


def throttle_clear(conn: Conn, bucket: str) -> None:
    conn.execute("DELETE FROM auth_throttle WHERE bucket = %(bucket)s", {"bucket": bucket})


def throttle_cleanup(conn: Conn, *, older_than_s: int) -> None:
    conn.execute(
        """DELETE FROM auth_throttle WHERE window_start < now() - make_interval(secs => %(older_than_s)s)
           AND (blocked_until IS NULL OR blocked_until < now())""",
        {"older_than_s": older_than_s},
    )
