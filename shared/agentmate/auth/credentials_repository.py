"""SQL of a request's credential check with its admission by the account's limits, in one statement each
(migration 0102: ``auth_api_key_admit``, ``auth_jwt_user_admit``, ``auth_oauth_token_admit``). Each answers the
credential's row as its lookup alone does (``auth.repository``'s row types) and the admission as
``limits_admit`` does; a credential the row refuses is never admitted nor stamped. An admitted request's writes
commit without waiting for the WAL (``limits_admit``, migration 0104): each runs alone in autocommit mode."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from psycopg.rows import tuple_row

from agentmate.auth.repository import JwtUser, KeyCaller, OAuthTokenRow
from agentmate.core.db import Conn
from agentmate.core.limits.repository import Admission, Terms

_ADMISSION = "retry_after, wait_ms, refused_by, lease_id"
_TERMS = "%(per_minute)s, %(burst)s, %(slots)s, %(lease_s)s"

_KEY = (
    f"SELECT key_id, account_id, user_id, scopes, role, expired, stale, suspended, {_ADMISSION} "
    f"FROM auth_api_key_admit(%(key_hash)s, {_TERMS})"
)
_JWT = (
    f"SELECT role, credentials_epoch, suspended, {_ADMISSION} "
    f"FROM auth_jwt_user_admit(%(user_id)s, %(account_id)s, %(epoch)s, {_TERMS})"
)
_TOKEN = (
    "SELECT kind, grant_id, account_id, user_id, client_id, scopes, resource, role, expires_at, expired, used,"
    f" revoked, epoch_moved, suspended, stale, {_ADMISSION} FROM auth_oauth_token_admit(%(token_hash)s,"
    f" %(resource)s, {_TERMS})"
)


def _row(conn: Conn, sql: str, params: dict[str, Any]) -> tuple[Any, ...] | None:
    with conn.cursor(row_factory=tuple_row) as cur:
        found: tuple[Any, ...] | None = cur.execute(sql, params).fetchone()
    return found


def _admission(row: tuple[Any, ...]) -> Admission:
    return Admission(*row[-4:])


def api_key(conn: Conn, key_hash: str, terms: Terms) -> tuple[KeyCaller, Admission] | None:
    row = _row(conn, _KEY, {"key_hash": key_hash, **terms._asdict()})
    return None if row is None else (KeyCaller(*row[:-4]), _admission(row))


def jwt_user(
    conn: Conn, *, user_id: UUID, account_id: UUID, epoch: int, terms: Terms
) -> tuple[JwtUser, Admission] | None:
    params = {"user_id": user_id, "account_id": account_id, "epoch": epoch, **terms._asdict()}
    row = _row(conn, _JWT, params)
    return None if row is None else (JwtUser(*row[:-4]), _admission(row))


def oauth_token(
    conn: Conn, token_hash: str, resource: str | None, terms: Terms
) -> tuple[OAuthTokenRow, Admission] | None:
    """``resource``: the request's canonical resource (None: no access token is accepted here)."""
    row = _row(conn, _TOKEN, {"token_hash": token_hash, "resource": resource, **terms._asdict()})
    return None if row is None else (OAuthTokenRow(*row[:-4]), _admission(row))
