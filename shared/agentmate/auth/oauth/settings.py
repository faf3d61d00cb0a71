"""OAuth settings: token lifetimes, the device grant's pacing, and what the client-metadata fetcher may reach.
The issuer itself is ``AuthSettings.oauth_issuer_url`` (request authentication needs it on every route)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field

from agentmate.core.settings import EnvironmentSettings


class OAuthSettings(EnvironmentSettings):
    # Lifetimes. Access tokens are short: every request checks them against the database anyway, and a refresh
    # (which rotates) is one request.
    oauth_access_token_ttl_s: int = Field(default=3600, ge=60, le=24 * 3600)
    oauth_refresh_token_ttl_s: int = Field(default=30 * 24 * 3600, ge=3600, le=365 * 24 * 3600)
    oauth_code_ttl_s: int = Field(default=120, ge=10, le=600)
    # How long a login-and-consent page stays valid after /authorize sent the user there.
    oauth_request_ttl_s: int = Field(default=900, ge=60, le=3600)

    # The device grant (RFC 8628): how long a device code lives, the polling interval it asks for, and the
    # user-code guesses one client address may get wrong within the window before 429.
    oauth_device_code_ttl_s: int = Field(default=900, ge=60, le=3600)
    oauth_device_interval_s: int = Field(default=5, ge=1, le=60)
    oauth_user_code_failures_per_address: int = Field(default=10, ge=1)
    oauth_user_code_window_s: int = Field(default=15 * 60, ge=1)

    # Dynamic client registration (RFC 7591), throttled per client address.
    oauth_registrations_per_address: int = Field(default=20, ge=1)
    oauth_registration_window_s: int = Field(default=3600, ge=1)

    # Client ID metadata documents: fetched over https from public addresses only. An operator may open private
    # networks (comma-separated CIDRs, as PACKAGES_ALLOWED_PRIVATE_NETWORKS does for git) and trust an extra CA
    # bundle (a PEM file; the tests' trustme CA).
    oauth_cimd_allowed_private_networks: str = ""
    oauth_cimd_ca_bundle: str = ""
    oauth_cimd_max_bytes: int = Field(default=5 * 1024, ge=512, le=64 * 1024)
    oauth_cimd_timeout_s: float = Field(default=5.0, gt=0, le=30)
    oauth_cimd_cache_s: int = Field(default=300, ge=0, le=24 * 3600)


@lru_cache(maxsize=1)
def get_oauth_settings() -> OAuthSettings:
    return OAuthSettings()
