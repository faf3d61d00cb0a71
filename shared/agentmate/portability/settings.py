"""Portability settings: where archives are kept, how long their links live, and the bounds an archive (client
input on import) must keep. Validated once per execution environment (``get_portability_settings``)."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class PortabilitySettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # The S3 bucket of export and import archives (template.yaml: AccountArchiveBucket); empty = a local folder.
    account_archive_bucket: str = ""
    # The local runtime's folder (when no bucket is set).
    account_archive_dir: str = ".local/account-archives"
    # How long a download_url / upload_url is valid.
    account_archive_url_ttl_s: int = Field(default=900, ge=30, le=7 * 86400)
    # Bounds of an archive: its size, its members, one member's uncompressed size, one NDJSON line.
    account_archive_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1024)
    account_archive_max_members: int = Field(default=64, ge=2, le=10_000)
    account_archive_max_member_bytes: int = Field(default=1024 * 1024 * 1024, ge=1024)
    account_archive_max_line_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)


@lru_cache(maxsize=1)
def get_portability_settings() -> PortabilitySettings:
    return PortabilitySettings()
