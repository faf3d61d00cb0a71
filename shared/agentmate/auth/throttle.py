"""Login and registration throttling, with its state in Postgres so it holds across Lambda environments.

Failed logins count in two buckets: (email, client address) and the client address alone — never the email
alone, which would let anyone lock a known user out from their own address. Registrations count per client
address, and so do dynamic OAuth client registrations and wrong user codes of the OAuth device grant. Buckets
are hashed before they are stored (``auth_throttle`` holds no email or address in clear) and are not tenant rows:
nobody is authenticated yet when they are read.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

from agentmate.auth import repository as repo
from agentmate.auth.settings import AuthSettings
from agentmate.core.db import Database
from agentmate.core.errors import RateLimited

_CLEANUP_CHANCE = 0.01  # roughly one failure in a hundred also deletes long-expired buckets


@dataclass(frozen=True)
class Bucket:
    key: str
    limit: int
    window_s: int


def _bucket(kind: str, *parts: str) -> str:
    return f"{kind}:" + hashlib.sha256("\0".join(parts).encode()).hexdigest()


def login_buckets(settings: AuthSettings, email: str, address: str) -> list[Bucket]:
    window = settings.login_failure_window_s
    return [
        Bucket(
            _bucket("login-email-address", email.strip().lower(), address),
            settings.login_failures_per_email_address,
            window,
        ),
        Bucket(_bucket("login-address", address), settings.login_failures_per_address, window),
    ]


def registration_bucket(settings: AuthSettings, address: str) -> Bucket:
    return Bucket(
        _bucket("register-address", address),
        settings.registrations_per_address,
        settings.registration_window_s,
    )


def oauth_registration_bucket(address: str, limit: int, window_s: int) -> Bucket:
    """Dynamic OAuth client registrations (RFC 7591) per client address (``auth.oauth.clients``)."""
    return Bucket(_bucket("oauth-register-address", address), limit, window_s)


def user_code_bucket(address: str, *, limit: int, window_s: int) -> Bucket:
    """Wrong user codes of the OAuth device grant (RFC 8628 §5.1) per client address; the limit and window are
    the OAuth settings', which the device grant passes in."""
    return Bucket(_bucket("user-code-address", address), limit, window_s)


def check(db: Database, buckets: list[Bucket], what: str) -> None:
    """Raise ``RateLimited`` (429 + Retry-After) while any bucket is blocked."""
    with db.single_statement() as conn:
        retry_after = repo.throttle_retry_after(conn, [b.key for b in buckets])
    if retry_after is not None:
        raise RateLimited(
            f"too many {what} from this client address: retry in {retry_after} s", retry_after=retry_after
        )


def hit(db: Database, settings: AuthSettings, buckets: list[Bucket]) -> None:
    """Count one failure (or registration attempt) in every bucket, in one statement."""
    with db.single_statement() as conn:
        repo.throttle_hit(
            conn,
            [(b.key, b.limit, b.window_s) for b in buckets],
            base_s=settings.login_backoff_base_s,
            max_s=settings.login_backoff_max_s,
        )
        if random.random() < _CLEANUP_CHANCE:
            repo.throttle_cleanup(
                conn, older_than_s=max(b.window_s for b in buckets) + settings.login_backoff_max_s
            )


def clear(db: Database, bucket: Bucket) -> None:
    with db.single_statement() as conn:
        repo.throttle_clear(conn, bucket.key)
