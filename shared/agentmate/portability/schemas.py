"""What the account export and import routes answer."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, Field

TransferStatus = Literal["awaiting_upload", "queued", "running", "succeeded", "failed", "cancelled"]


class AccountExport(BaseModel):
    id: UUID
    status: TransferStatus = Field(description="queued, running, succeeded, failed or cancelled (the job's)")
    job_id: UUID | None
    format_version: int | None = Field(description="The archive format's version (docs/account-archive.md)")
    counts: dict[str, int] = Field(description="Rows written per table")
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    download_url: str | None = Field(
        default=None, description="When succeeded: a short-lived GET link to the archive (a zip)"
    )
    url_expires_in: int | None = Field(default=None, description="Seconds the link stays valid")


class AccountImport(BaseModel):
    id: UUID
    status: TransferStatus = Field(
        description="awaiting_upload until started; then queued, running, succeeded, failed or cancelled"
    )
    job_id: UUID | None
    format_version: int | None
    counts: dict[str, int] = Field(description="Rows loaded per table")
    error: str | None
    created_at: datetime
    finished_at: datetime | None
    upload_url: str | None = Field(
        default=None, description="While awaiting_upload: a short-lived PUT target for the archive"
    )
    url_expires_in: int | None = Field(default=None, description="Seconds the link stays valid")
