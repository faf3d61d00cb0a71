"""Authentication settings: the JWT signing secret and lifetime, and login protection. Validated once per
execution environment (``get_auth_settings``) and passed to ``auth`` as a value.

There is no default signing secret: the local runtime generates a random one on first start and keeps it in
``.local/jwt-secret``.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, model_validator

from agentmate.core.settings import EnvironmentSettings, secret

MIN_JWT_SECRET_CHARS = 32


class AuthSettings(EnvironmentSettings):
    jwt_secret: str = ""
    jwt_secret_arn: str | None = None
    jwt_ttl_hours: int = Field(default=72, ge=1, le=24 * 30)
    # The OAuth issuer: this deployment's public base URL (https://host, no path), which is also the base of
    # its resources (``auth.audience``). Empty = OAuth is off: its routes answer 404 and OAuth tokens are refused.
    oauth_issuer_url: str = ""

    # Login protection (docs/decisions.md "Login throttling"): failed logins per (email, client address) and per
    # client address within the window, then a block that starts at the base and doubles with each further
    # failure; registrations per client address within their window.
    login_failures_per_email_address: int = Field(default=5, ge=1)
    login_failures_per_address: int = Field(default=30, ge=1)
    login_failure_window_s: int = Field(default=15 * 60, ge=1)
    login_backoff_base_s: int = Field(default=60, ge=1)
    login_backoff_max_s: int = Field(default=60 * 60, ge=1)
    registrations_per_address: int = Field(default=20, ge=1)
    registration_window_s: int = Field(default=60 * 60, ge=1)

    @model_validator(mode="after")
    def _require_signing_secret(self) -> AuthSettings:
        if not self.jwt_secret_arn and len(self.jwt_secret) < MIN_JWT_SECRET_CHARS:
            raise ValueError(
                f"JWT_SECRET (at least {MIN_JWT_SECRET_CHARS} random characters) or JWT_SECRET_ARN "
                "must be set; the local runtime (python -m infra.devserver) generates one in "
                ".local/jwt-secret"
            )
        return self

    def resolved_jwt_secret(self) -> str:
        return secret(self.jwt_secret_arn) if self.jwt_secret_arn else self.jwt_secret


@lru_cache(maxsize=1)
def get_auth_settings() -> AuthSettings:
    return AuthSettings()
