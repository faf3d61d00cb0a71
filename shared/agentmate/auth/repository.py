"""SQL for users and API keys. Pre-authentication lookups go through SECURITY DEFINER functions."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

# Constraint name → the request field it guards (core.dberrors reports violations by it).
CONSTRAINTS = constraints({
    "users_email_key": ("email", "email already registered"),
    "users_email_lower_check": ("email", "must be lowercase"),
    "users_role_check": ("role", "must be one of user, admin"),
    "api_keys_name_check": ("name", "must be 1..200 characters"),
    "api_keys_key_hash_key": ("key", "collides with an existing key; create it again"),
})


def register(conn: Conn, *, email: str, password_hash: str) -> dict[str, Any]:
    row = conn.execute("SELECT user_id, account_id FROM auth_register(%s, %s)", (email, password_hash)).fetchone()
    assert row is not None
    return row


def user_by_email(conn: Conn, email: str) -> dict[str, Any] | None:
    return conn.execute(
        "SELECT user_id, account_id, password_hash, role FROM auth_user_by_email(%s)", (email,)
    ).fetchone()


def api_key_by_hash(conn: Conn, key_hash: str) -> dict[str, Any] | None:
    return conn.execute(
        "SELECT key_id, account_id, user_id, scopes, role FROM auth_api_key(%s)", (key_hash,)
    ).fetchone()


def get_user(conn: Conn, user_id: UUID) -> dict[str, Any] | None:
    return conn.execute(
        "SELECT id, account_id, email, role, created_at FROM users WHERE id = %s", (user_id,)
    ).fetchone()


_KEY_COLUMNS = "id, name, prefix, scopes, created_by_key_id, created_at"


def insert_api_key(
    conn: Conn, *, account_id: UUID, user_id: UUID, name: str, key_hash: str, prefix: str,
    scopes: list[str], created_by_key_id: UUID | None,
) -> dict[str, Any]:
    row = conn.execute(
        f"""INSERT INTO api_keys (account_id, user_id, name, key_hash, prefix, scopes, created_by_key_id)
            VALUES (%(a)s, %(u)s, %(n)s, %(h)s, %(p)s, %(s)s, %(c)s) RETURNING {_KEY_COLUMNS}""",
        {"a": account_id, "u": user_id, "n": name, "h": key_hash, "p": prefix, "s": scopes, "c": created_by_key_id},
    ).fetchone()
    assert row is not None
    return row


def list_api_keys(conn: Conn, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    rows = conn.execute(
        f"SELECT {_KEY_COLUMNS}, count(*) OVER () AS total FROM api_keys ORDER BY created_at DESC, id LIMIT %s OFFSET %s",
        (limit, offset),
    ).fetchall()
    total = rows[0]["total"] if rows else conn.execute("SELECT count(*) AS n FROM api_keys").fetchone()["n"]  # type: ignore[index]
    return rows, total


def delete_api_key(conn: Conn, key_id: UUID) -> bool:
    return conn.execute("DELETE FROM api_keys WHERE id = %s", (key_id,)).rowcount > 0


def user_role(conn: Conn, user_id: UUID) -> str | None:
    row = conn.execute("SELECT role FROM users WHERE id = %s", (user_id,)).fetchone()
    return row["role"] if row else None
