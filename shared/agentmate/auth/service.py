"""Registration, login, the caller's identity and API key management.

Request authentication lives in agentmate.auth.credentials, which every route group imports: it stays free of
the request schemas (EmailStr pulls in email-validator, ~20 ms of cold start).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple
from uuid import UUID

from agentmate.auth import repository as repo
from agentmate.auth import security, throttle
from agentmate.auth.credentials import SUSPENDED, authenticate, require_admin
from agentmate.auth.schemas import (
    AccountDeletion,
    ApiKey,
    ApiKeyCreate,
    ApiKeyCreated,
    Credentials,
    Me,
    PasswordChange,
    Registered,
    Token,
)
from agentmate.auth.settings import AuthSettings
from agentmate.core import scopes as scope_rules
from agentmate.core.db import Database
from agentmate.core.errors import (
    Conflict,
    DomainError,
    ErrorCollector,
    Forbidden,
    NotFound,
    Unauthorized,
    invalid,
)
from agentmate.core.observability import count, logger
from agentmate.core.pagination import Page, PageParams
from agentmate.core.principal import Principal


def register(db: Database, settings: AuthSettings, body: Credentials, client_address: str) -> Registered:
    bucket = throttle.registration_bucket(settings, client_address)
    throttle.check(db, [bucket], "registrations")
    throttle.hit(db, settings, [bucket])  # every attempt counts, before the expensive hash
    password_hash = security.hash_password(body.password)
    with db.transaction() as conn:  # a taken email is a Conflict (users_email_key in the repository's table)
        row = repo.register(conn, email=str(body.email), password_hash=password_hash)
    return Registered(user_id=row.user_id, account_id=row.account_id, email=str(body.email).lower())


class LoginUser(NamedTuple):
    """Who logged in (``verify_password_login``)."""

    user_id: UUID
    account_id: UUID


def login(db: Database, settings: AuthSettings, body: Credentials, client_address: str) -> Token:
    """An unknown email costs the same scrypt as a wrong password; failures count per (email, address) and per
    address, and a blocked bucket answers 429 before any password is checked."""
    row = _checked_login(db, settings, str(body.email), body.password, client_address)
    return _token(settings, row.user_id, row.account_id, row.credentials_epoch)


def verify_password_login(
    db: Database, settings: AuthSettings, email: str, password: str, client_address: str
) -> LoginUser:
    """The login route's checks and throttle without minting a JWT (the OAuth consent and device pages log the
    user in for one answer). Raises Unauthorized or RateLimited as login does."""
    row = _checked_login(db, settings, email, password, client_address)
    return LoginUser(row.user_id, row.account_id)


def _checked_login(
    db: Database, settings: AuthSettings, email: str, password: str, client_address: str
) -> repo.LoginUser:
    buckets = throttle.login_buckets(settings, email, client_address)
    throttle.check(db, buckets, "failed logins")
    with db.single_statement() as conn:
        row = repo.user_by_email(conn, email)
    stored = row.password_hash if row is not None else security.DUMMY_PASSWORD_HASH
    if not security.verify_password(password, stored) or row is None:
        throttle.hit(db, settings, buckets)
        raise Unauthorized("invalid email or password")
    throttle.clear(db, buckets[0])  # the address bucket keeps counting: it is not the user's to reset
    if row.suspended:  # told only to who knows the password
        raise Unauthorized(SUSPENDED)
    return row


def _token(settings: AuthSettings, user_id: UUID, account_id: UUID, epoch: int) -> Token:
    token, expires = security.make_jwt(
        user_id=str(user_id),
        account_id=str(account_id),
        epoch=epoch,
        secret=settings.resolved_jwt_secret(),
        ttl_hours=settings.jwt_ttl_hours,
    )
    return Token(token=token, expires_at=expires)


def _verified_user(
    db: Database, settings: AuthSettings, principal: Principal, password: str, field: str, client_address: str
) -> repo.User:
    """The caller's user row, after the re-entered password matched (throttled like a login). The caller is a
    user session (api.deps.UserSession)."""
    with db.tenant(principal.account_id) as conn:
        user = repo.get_user(conn, principal.user_id)
    if user is None:  # pragma: no cover - authenticate() found the user an instant ago
        raise Unauthorized("invalid token: its user no longer exists in its account")
    buckets = throttle.login_buckets(settings, user.email, client_address)
    throttle.check(db, buckets, "failed password checks")
    if not security.verify_password(password, user.password_hash):
        throttle.hit(db, settings, buckets)
        raise invalid(field, "does not match the account's password")
    return user


def change_password(
    db: Database, settings: AuthSettings, principal: Principal, body: PasswordChange, client_address: str
) -> Token:
    """Replace the password and move the credentials epoch on: every earlier JWT is refused from now on."""
    user = _verified_user(db, settings, principal, body.current_password, "current_password", client_address)
    new_hash = security.hash_password(body.new_password)
    with db.tenant(principal.account_id) as conn:
        epoch = repo.set_credentials(
            conn, principal.user_id, expected_hash=user.password_hash, password_hash=new_hash
        )
    if epoch is None:
        raise Conflict("the password was changed by another request meanwhile: log in again")
    return _token(settings, principal.user_id, principal.account_id, epoch)


def logout_all(db: Database, principal: Principal) -> None:
    """Refuse every JWT of the user minted so far (this one included). API keys are not affected."""
    with db.tenant(principal.account_id) as conn:
        repo.bump_epoch(conn, principal.user_id)


def delete_account(
    db: Database,
    settings: AuthSettings,
    principal: Principal,
    body: AccountDeletion,
    client_address: str,
    remove_vectors: Callable[[UUID], None],
) -> None:
    """Delete the caller's tenant: every row of the account (each tenant table references accounts ON DELETE
    CASCADE) and its vectors (``remove_vectors``: the retrieval layer's delete-by-account, passed in by the
    transport because auth does not import retrieval).

    Vectors go first, so a vector-index failure (503) leaves the account whole for a retry; they are removed
    once more after the rows, in case a request racing the deletion indexed one in between.
    """
    _verified_user(db, settings, principal, body.password, "password", client_address)
    remove_vectors(principal.account_id)
    with db.tenant(principal.account_id) as conn:
        repo.delete_account(conn, principal.account_id)
    try:
        remove_vectors(principal.account_id)
    except DomainError as exc:  # the rows are gone; a stray point can no longer be read by anyone
        logger.warning(
            "vectors indexed during account deletion were not removed", extra={"error": exc.detail}
        )
    count("AccountDeleted")


def set_account_suspended(
    db: Database, principal: Principal, account_id: UUID, *, suspend: bool
) -> dict[str, Any]:
    """An admin suspends or reactivates another account: while suspended, its JWTs and API keys are refused
    (credentials.authenticate) and its users cannot log in. Returns ``{account_id, suspended_at}``."""
    require_admin(db, principal)
    if suspend and account_id == principal.account_id:
        raise Conflict("an admin cannot suspend its own account")
    with db.tenant(principal.account_id) as conn:
        row = repo.admin_set_suspended(
            conn, admin_user_id=principal.user_id, account_id=account_id, suspend=suspend
        )
    if row is None:
        raise NotFound("account")
    count("AccountSuspended" if suspend else "AccountReactivated")
    return row


def me(db: Database, principal: Principal) -> Me:
    with db.tenant(principal.account_id) as conn:
        user = repo.get_user(conn, principal.user_id)
    if user is None:
        raise Unauthorized("user no longer exists")
    return Me(
        user_id=user.id,
        account_id=user.account_id,
        email=user.email,
        role=user.role,
        auth=principal.via,
        key_id=principal.key_id,
        scopes=list(principal.scopes),
    )


def create_api_key(db: Database, principal: Principal, body: ApiKeyCreate) -> ApiKeyCreated:
    errors = ErrorCollector()
    requested: list[str] = []
    for i, scope in enumerate(body.scopes):
        s = scope
        if s not in scope_rules.SCOPES:  # exact: the OpenAPI states the values as an enum
            errors.add(f"scopes[{i}]", f"unknown scope {scope!r}", list(scope_rules.SCOPES))
        elif s not in requested:
            requested.append(s)
    if body.expires_at is not None and body.expires_at <= datetime.now(UTC):
        errors.add("expires_at", "must be in the future")
    errors.raise_if_any()
    if principal.via == "api_key" and not scope_rules.covers(principal.scopes, requested):
        raise Forbidden(
            "a key cannot create a key with scopes it does not hold itself (an empty list means full access)"
        )
    plaintext, key_hash, prefix = security.new_api_key()
    with db.tenant(principal.account_id) as conn:
        row = repo.insert_api_key(
            conn,
            account_id=principal.account_id,
            user_id=principal.user_id,
            name=body.name.strip(),
            key_hash=key_hash,
            prefix=prefix,
            scopes=requested,
            created_by_key_id=principal.key_id,
            expires_at=body.expires_at,
        )
    return ApiKeyCreated(**row, key=plaintext)


def list_api_keys(db: Database, principal: Principal, page: PageParams) -> Page[ApiKey]:
    with db.tenant(principal.account_id) as conn:
        rows, total = repo.list_api_keys(conn, limit=page.limit, offset=page.offset)
    return Page[ApiKey](items=[ApiKey(**r) for r in rows], total=total, limit=page.limit, offset=page.offset)


def delete_api_key(db: Database, principal: Principal, key_id: UUID) -> None:
    with db.tenant(principal.account_id) as conn:
        if not repo.delete_api_key(conn, key_id):
            raise NotFound("api key")


__all__ = [
    "authenticate",
    "change_password",
    "create_api_key",
    "delete_account",
    "delete_api_key",
    "list_api_keys",
    "login",
    "logout_all",
    "me",
    "register",
    "require_admin",
    "set_account_suspended",
    "verify_password_login",
]
