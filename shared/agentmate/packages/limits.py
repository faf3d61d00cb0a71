"""Limits of the package ingest, and why each default is what it is.

Snapshot pushes arrive in one HTTP request: Lambda refuses request payloads over 6 MB (6,291,456 bytes), and a
JSON-encoded snapshot carries bytes as base64 (4/3 of their size) and text with JSON escapes. A 3 MiB package is
4.2 MB as base64, which leaves room for the JSON structure, paths and the API Gateway event envelope. Larger
packages come through git sync, whose limits bound memory and time instead: the download (compressed), the bytes
and members of the archive read through (an archive bomb stops at the first of them), the package kept, and a
time budget well under API Gateway's 30 s request timeout (the work runs inline in the request).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class PackageLimits:
    """What one package may contain (checked before anything is written)."""

    max_files: int = 1000
    max_file_bytes: int = 1 * MiB
    max_package_bytes: int = 3 * MiB
    max_path_length: int = 512
    max_path_depth: int = 32


SNAPSHOT_LIMITS = PackageLimits()
GIT_LIMITS = PackageLimits(max_files=2000, max_file_bytes=2 * MiB, max_package_bytes=16 * MiB)


@dataclass(frozen=True, slots=True)
class SyncLimits:
    """What one git sync may read from the network and how long it may take."""

    max_download_bytes: int = 64 * MiB
    max_archive_bytes: int = 256 * MiB
    max_archive_members: int = 50_000
    budget_s: float = 20.0


_SYNC = SyncLimits()


class PackageSettings(BaseSettings):
    """Deployment settings of git sync (environment variables prefixed ``PACKAGES_``).

    ``PACKAGES_ALLOWED_HOSTS`` is a comma-separated allow-list: ``host`` (default port of the scheme only),
    ``host:port`` or ``host:*``. ``PACKAGES_ALLOWED_SCHEMES`` defaults to https only.
    ``PACKAGES_ALLOWED_PRIVATE_NETWORKS`` (comma-separated CIDRs) lets a self-hosted operator reach private
    addresses in those networks; link-local and cloud-metadata addresses stay refused whatever it says.
    ``PACKAGES_ARCHIVE_PROVIDERS`` maps a host to the archive API it speaks (``github`` or ``gitlab``); any other
    host is fetched with the git smart-HTTP protocol. ``PACKAGES_GIT_TOKENS`` maps a host to an access token for
    rate-limited or private repositories (sent only to that host, never across a redirect).
    """

    model_config = SettingsConfigDict(
        env_prefix="PACKAGES_", env_file=None, extra="ignore", case_sensitive=False
    )

    allowed_hosts: str = "github.com,codeload.github.com,gitlab.com"
    allowed_schemes: str = "https"
    allowed_private_networks: str = ""
    archive_providers: dict[str, str] = Field(
        default_factory=lambda: {"github.com": "github", "gitlab.com": "gitlab"}
    )
    git_tokens: dict[str, str] = Field(default_factory=dict)
    max_download_bytes: int = Field(default=_SYNC.max_download_bytes, ge=1)
    max_archive_bytes: int = Field(default=_SYNC.max_archive_bytes, ge=1)
    max_archive_members: int = Field(default=_SYNC.max_archive_members, ge=1)
    sync_budget_s: float = Field(default=_SYNC.budget_s, gt=0, le=25)

    def sync_limits(self) -> SyncLimits:
        return SyncLimits(
            self.max_download_bytes, self.max_archive_bytes, self.max_archive_members, self.sync_budget_s
        )


@lru_cache(maxsize=1)
def get_package_settings() -> PackageSettings:
    """The execution environment's package settings, read once."""
    return PackageSettings()
