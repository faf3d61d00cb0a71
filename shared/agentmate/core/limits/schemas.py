"""The usage report (``GET /api/auth/usage``)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Quota(BaseModel):
    used: int = Field(description="What the account holds now (builds: started in the last 24 hours)")
    limit: int | None = Field(description="The quota; null when this quota is off")


class RateLimits(BaseModel):
    requests_per_minute: int | None = Field(description="Requests per minute per account; null when off")
    request_burst: int = Field(description="Requests allowed at once above the steady rate")
    concurrent_expensive: int | None = Field(
        description="Searches, context packs and source syncs running at once per account; null when off"
    )
    running_jobs: int | None = Field(description="Jobs of the account the worker runs at once; null when off")


class Usage(BaseModel):
    memories: Quota
    working_items: Quota
    package_bytes: Quota
    sources: Quota
    builds_per_day: Quota
    rate: RateLimits
