"""Passwords (scrypt), JWTs (HS256) and API key material."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

_SCRYPT_N, _SCRYPT_R, _SCRYPT_P = 2**14, 8, 1
API_KEY_PREFIX = "ak_"
# What a login for an unknown email is verified against, so it costs one scrypt like a registered email's and
# the answer time does not tell who is registered. The hash of a random password nobody kept; no user has it.
# Its parameters must be the ones above (tests/unit/test_security.py).
DUMMY_PASSWORD_HASH = "scrypt$16384$8$1$GLuJ99rylnmu8ZBB2pyktw==$CaeZzvjikyyQFDFAkUgCSy0pR4f62Ohqa4VOKpD21+k="


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_SCRYPT_N, r=_SCRYPT_R, p=_SCRYPT_P, dklen=32)
    b64 = base64.b64encode
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def verify_password(password: str, stored: str) -> bool:
    try:
        algo, n, r, p, salt, digest = stored.split("$")
        if algo != "scrypt":
            return False
        expected = base64.b64decode(digest)
        actual = hashlib.scrypt(
            password.encode(), salt=base64.b64decode(salt), n=int(n), r=int(r), p=int(p), dklen=len(expected)
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


# The claim carrying the user's credentials epoch (users.credentials_epoch) at the time the token was minted.
EPOCH_CLAIM = "epoch"


def make_jwt(
    *, user_id: str, account_id: str, epoch: int, secret: str, ttl_hours: int
) -> tuple[str, datetime]:
    import jwt  # lazily: PyJWT pulls in cryptography, ~40 ms of every cold start

    expires = datetime.now(UTC) + timedelta(hours=ttl_hours)
    claims = {
        "sub": user_id,
        "account_id": account_id,
        EPOCH_CLAIM: epoch,
        "exp": expires,
        "iat": datetime.now(UTC),
    }
    return jwt.encode(claims, secret, algorithm="HS256"), expires


def decode_jwt(token: str, secret: str) -> dict[str, Any]:
    """Raises jwt.PyJWTError when the token is invalid or expired."""
    import jwt

    return jwt.decode(
        token, secret, algorithms=["HS256"], options={"require": ["sub", "account_id", EPOCH_CLAIM, "exp"]}
    )


def new_api_key() -> tuple[str, str, str]:
    """Returns (plaintext, sha256 hash, display prefix). Only the hash is stored."""
    plaintext = API_KEY_PREFIX + secrets.token_hex(32)
    return plaintext, hash_api_key(plaintext), plaintext[:10]


def hash_api_key(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()
