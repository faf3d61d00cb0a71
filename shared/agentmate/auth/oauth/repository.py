"""SQL for the authorization server: pending requests, codes, grants and tokens (migrations/0090_oauth.sql).

Requests are not tenant rows (no user is known when they are made); codes, grants and tokens are, and a code is
found before its tenant through ``auth_oauth_code`` (SECURITY DEFINER). A token is found before its tenant through ``auth_oauth_token`` (SECURITY DEFINER), in
``auth.repository`` beside the API-key lookup: request authentication reads it there on every request.
"""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple
from uuid import UUID

from psycopg.rows import class_row

from agentmate.core.db import Conn
from agentmate.core.dberrors import constraints

CONSTRAINTS = constraints(
    {
        "oauth_codes_scopes_check": ("scopes", "must name at least one scope"),
        "oauth_grants_scopes_check": ("scopes", "must name at least one scope"),
        "oauth_tokens_grant_fkey": ("grant_id", "the grant no longer exists: authorize again"),
        "oauth_tokens_kind_check": ("kind", "must be access or refresh"),
    }
)


class RequestRow(NamedTuple):
    id: UUID
    client_id: str
    client_name: str | None
    client_uri: str | None
    redirect_uri: str
    code_challenge: str
    state: str | None
    scopes: list[str]
    resource: str
    expires_at: datetime


class CodeRow(NamedTuple):
    code_hash: str
    account_id: UUID
    user_id: UUID
    client_id: str
    client_name: str | None
    client_uri: str | None
    redirect_uri: str
    code_challenge: str
    scopes: list[str]
    resource: str
    expires_at: datetime
    used: bool
    grant_id: UUID | None


class NewGrant(NamedTuple):
    """A grant about to be issued: who authorised which client, for what."""

    account_id: UUID
    user_id: UUID
    client_id: str
    client_name: str | None
    client_uri: str | None
    scopes: list[str]
    resource: str


class GrantRow(NamedTuple):
    id: UUID
    client_id: str
    client_name: str | None
    client_uri: str | None
    scopes: list[str]
    resource: str
    created_at: datetime
    last_used_at: datetime | None


# -- pending requests -------------------------------------------------------------------------------------------


def insert_request(
    conn: Conn,
    *,
    client_id: str,
    client_name: str | None,
    client_uri: str | None,
    redirect_uri: str,
    code_challenge: str,
    state: str | None,
    scopes: list[str],
    resource: str,
    ttl_s: int,
) -> UUID:
    row = conn.execute(
        """INSERT INTO oauth_requests (client_id, client_name, client_uri, redirect_uri, code_challenge, state,
                                       scopes, resource, expires_at)
           VALUES (%(client_id)s, %(client_name)s, %(client_uri)s, %(redirect_uri)s, %(code_challenge)s,
                   %(state)s, %(scopes)s, %(resource)s, now() + make_interval(secs => %(ttl_s)s))
           RETURNING id""",
        {
            "client_id": client_id,
            "client_name": client_name,
            "client_uri": client_uri,
            "redirect_uri": redirect_uri,
            "code_challenge": code_challenge,
            "state": state,
            "scopes": scopes,
            "resource": resource,
            "ttl_s": ttl_s,
        },
    ).fetchone()
    assert row is not None
    return UUID(str(row["id"]))


_REQUEST_COLUMNS = "id, client_id, client_name, client_uri, redirect_uri, code_challenge, state, scopes, resource, expires_at"


def pending_request(conn: Conn, request_id: UUID) -> RequestRow | None:
    """The request when it is unexpired and unused."""
    return (
        conn.cursor(row_factory=class_row(RequestRow))
        .execute(
            f"""SELECT {_REQUEST_COLUMNS} FROM oauth_requests
                WHERE id = %(id)s AND used_at IS NULL AND expires_at > now()""",
            {"id": request_id},
        )
        .fetchone()
    )


def use_request(conn: Conn, request_id: UUID) -> RequestRow | None:
    """Mark the request used, when it still was pending (one winner under concurrency); returns it."""
    return (
        conn.cursor(row_factory=class_row(RequestRow))
        .execute(
            f"""UPDATE oauth_requests SET used_at = now()
                WHERE id = %(id)s AND used_at IS NULL AND expires_at > now()
                RETURNING {_REQUEST_COLUMNS}""",
            {"id": request_id},
        )
        .fetchone()
    )


# -- codes ------------------------------------------------------------------------------------------------------


def insert_code(
    conn: Conn,
    *,
    code_hash: str,
    request: RequestRow,
    account_id: UUID,
    user_id: UUID,
    scopes: list[str],
    ttl_s: int,
) -> None:
    conn.execute(
        """INSERT INTO oauth_codes (code_hash, request_id, account_id, user_id, client_id, client_name, client_uri,
                                    redirect_uri, code_challenge, scopes, resource, expires_at)
           VALUES (%(code_hash)s, %(request_id)s, %(account_id)s, %(user_id)s, %(client_id)s, %(client_name)s,
                   %(client_uri)s, %(redirect_uri)s, %(code_challenge)s, %(scopes)s, %(resource)s,
                   now() + make_interval(secs => %(ttl_s)s))""",
        {
            "code_hash": code_hash,
            "request_id": request.id,
            "account_id": account_id,
            "user_id": user_id,
            "client_id": request.client_id,
            "client_name": request.client_name,
            "client_uri": request.client_uri,
            "redirect_uri": request.redirect_uri,
            "code_challenge": request.code_challenge,
            "scopes": scopes,
            "resource": request.resource,
            "ttl_s": ttl_s,
        },
    )


_CODE_COLUMNS = (
    "code_hash, account_id, user_id, client_id, client_name, client_uri, redirect_uri, code_challenge, scopes,"
    " resource, expires_at, used_at IS NOT NULL AS used, grant_id"
)


def code_by_hash(conn: Conn, code_hash: str) -> CodeRow | None:
    """The code, before its tenant is known."""
    return (
        conn.cursor(row_factory=class_row(CodeRow))
        .execute(f"SELECT {', '.join(CodeRow._fields)} FROM auth_oauth_code(%(h)s)", {"h": code_hash})
        .fetchone()
    )


def lock_code(conn: Conn, code_hash: str) -> CodeRow | None:
    """The code, locked for the exchange: a concurrent second exchange waits and then sees it used."""
    return (
        conn.cursor(row_factory=class_row(CodeRow))
        .execute(
            f"SELECT {_CODE_COLUMNS} FROM oauth_codes WHERE code_hash = %(h)s FOR UPDATE", {"h": code_hash}
        )
        .fetchone()
    )


def mark_code_used(conn: Conn, code_hash: str, grant_id: UUID) -> None:
    conn.execute(
        "UPDATE oauth_codes SET used_at = now(), grant_id = %(grant_id)s WHERE code_hash = %(h)s",
        {"h": code_hash, "grant_id": grant_id},
    )


# -- grants and tokens (tenant transactions) ------------------------------------------------------------------------


def user_epoch(conn: Conn, user_id: UUID) -> int | None:
    """The user's credentials epoch, when the user exists and its account is not suspended."""
    row = conn.execute(
        """SELECT u.credentials_epoch FROM users u JOIN accounts a ON a.id = u.account_id
           WHERE u.id = %(user_id)s AND a.suspended_at IS NULL""",
        {"user_id": user_id},
    ).fetchone()
    return row["credentials_epoch"] if row else None


def insert_grant(conn: Conn, grant: NewGrant, *, credentials_epoch: int) -> UUID:
    row = conn.execute(
        """INSERT INTO oauth_grants (account_id, user_id, client_id, client_name, client_uri, scopes, resource,
                                     credentials_epoch)
           VALUES (%(account_id)s, %(user_id)s, %(client_id)s, %(client_name)s, %(client_uri)s, %(scopes)s,
                   %(resource)s, %(credentials_epoch)s)
           RETURNING id""",
        {**grant._asdict(), "credentials_epoch": credentials_epoch},
    ).fetchone()
    assert row is not None
    return UUID(str(row["id"]))


def insert_token(
    conn: Conn, *, token_hash: str, grant_id: UUID, account_id: UUID, kind: str, ttl_s: int
) -> None:
    conn.execute(
        """INSERT INTO oauth_tokens (token_hash, grant_id, account_id, kind, expires_at)
           VALUES (%(token_hash)s, %(grant_id)s, %(account_id)s, %(kind)s, now() + make_interval(secs => %(ttl_s)s))""",
        {
            "token_hash": token_hash,
            "grant_id": grant_id,
            "account_id": account_id,
            "kind": kind,
            "ttl_s": ttl_s,
        },
    )


def delete_expired_tokens(conn: Conn, grant_id: UUID) -> None:
    """A grant's tokens past their expiry (a spent refresh token is kept until then, for replay detection)."""
    conn.execute(
        "DELETE FROM oauth_tokens WHERE grant_id = %(grant_id)s AND expires_at < now()",
        {"grant_id": grant_id},
    )


def delete_expired_requests(conn: Conn, *, older_than_s: int) -> None:
    """Pending authorizations that expired over ``older_than_s`` ago (used or not)."""
    conn.execute(
        "DELETE FROM oauth_requests WHERE expires_at < now() - make_interval(secs => %(s)s)",
        {"s": older_than_s},
    )


def use_refresh_token(conn: Conn, token_hash: str) -> bool:
    """Mark a refresh token used; False when it already was (a replay) or is not a live refresh token."""
    return (
        conn.execute(
            """UPDATE oauth_tokens SET used_at = now()
               WHERE token_hash = %(h)s AND kind = 'refresh' AND used_at IS NULL AND expires_at > now()""",
            {"h": token_hash},
        ).rowcount
        > 0
    )


def retire_access_tokens(conn: Conn, grant_id: UUID) -> None:
    """A refresh rotated the grant's tokens: the access tokens it replaces expire now (refused from the next
    request on), so a copy of an old access token does not outlive the rotation."""
    conn.execute(
        """UPDATE oauth_tokens SET expires_at = now()
           WHERE grant_id = %(grant_id)s AND kind = 'access' AND expires_at > now()""",
        {"grant_id": grant_id},
    )


def narrow_grant(conn: Conn, grant_id: UUID, scopes: list[str]) -> None:
    """A refresh asked for fewer scopes: the grant keeps only those (a later refresh cannot widen it again)."""
    conn.execute(
        "UPDATE oauth_grants SET scopes = %(scopes)s WHERE id = %(grant_id)s AND scopes @> %(scopes)s",
        {"grant_id": grant_id, "scopes": scopes},
    )


def revoke_grant(conn: Conn, grant_id: UUID) -> bool:
    """Revoke a live grant of the tenant: every token of it is refused from now on. False when none was live."""
    return (
        conn.execute(
            "UPDATE oauth_grants SET revoked_at = now() WHERE id = %(grant_id)s AND revoked_at IS NULL",
            {"grant_id": grant_id},
        ).rowcount
        > 0
    )


def revoke_token(conn: Conn, token_hash: str) -> None:
    """RFC 7009 for a single token: it is removed (its grant is revoked by the caller)."""
    conn.execute("DELETE FROM oauth_tokens WHERE token_hash = %(h)s", {"h": token_hash})


_GRANT_COLUMNS = "id, client_id, client_name, client_uri, scopes, resource, created_at, last_used_at"


def list_grants(conn: Conn, user_id: UUID, *, limit: int, offset: int) -> tuple[list[GrantRow], int]:
    """The user's live grants, newest first."""
    rows = conn.execute(
        f"""SELECT {_GRANT_COLUMNS}, count(*) OVER () AS total FROM oauth_grants
            WHERE user_id = %(user_id)s AND revoked_at IS NULL
            ORDER BY created_at DESC, id LIMIT %(limit)s OFFSET %(offset)s""",
        {"user_id": user_id, "limit": limit, "offset": offset},
    ).fetchall()
    if rows:
        total = int(rows[0]["total"])
    else:
        row = conn.execute(
            "SELECT count(*) AS n FROM oauth_grants WHERE user_id = %(user_id)s AND revoked_at IS NULL",
            {"user_id": user_id},
        ).fetchone()
        total = int(row["n"]) if row else 0
    return [GrantRow(*(r[c] for c in GrantRow._fields)) for r in rows], total


def revoke_user_grant(conn: Conn, user_id: UUID, grant_id: UUID) -> bool:
    return (
        conn.execute(
            """UPDATE oauth_grants SET revoked_at = now()
               WHERE id = %(grant_id)s AND user_id = %(user_id)s AND revoked_at IS NULL""",
            {"grant_id": grant_id, "user_id": user_id},
        ).rowcount
        > 0
    )
