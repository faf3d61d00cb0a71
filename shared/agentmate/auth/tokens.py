"""OAuth token material: opaque random values, stored only as their SHA-256 (as API keys are).

Each kind has its own prefix, so one look at a bearer value tells an OAuth access token from an ``ak_`` API key
and from a JWT (which starts ``eyJ``), and a refresh token or code sent where an access token belongs is refused
without a lookup. Kept free of other imports: ``auth.credentials`` reads it on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Literal

ACCESS_PREFIX = "oat_"
REFRESH_PREFIX = "ort_"
CODE_PREFIX = "oac_"
DEVICE_CODE_PREFIX = "odc_"
CLIENT_ID_PREFIX = "ocl_"
CLIENT_SECRET_PREFIX = "ocs_"

TokenKind = Literal["access", "refresh", "code", "device_code", "client_secret"]

_PREFIXES: dict[TokenKind, str] = {
    "access": ACCESS_PREFIX,
    "refresh": REFRESH_PREFIX,
    "code": CODE_PREFIX,
    "device_code": DEVICE_CODE_PREFIX,
    "client_secret": CLIENT_SECRET_PREFIX,
}


def new_token(kind: TokenKind) -> tuple[str, str]:
    """A fresh value of 256 random bits with its kind's prefix: (plaintext, hash). Only the hash is stored."""
    plaintext = _PREFIXES[kind] + secrets.token_urlsafe(32)
    return plaintext, hash_token(plaintext)


def hash_token(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def is_access_token(value: str) -> bool:
    return value.startswith(ACCESS_PREFIX)
