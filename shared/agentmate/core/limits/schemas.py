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


class IndexingWaiting(BaseModel):
    """What the account stored that still waits for its vector, by search index."""

    memory: int = Field(description="Memory entries")
    knowledge: int = Field(description="Chunks of knowledge sources")
    wiki: int = Field(description="Chunks of compiled wiki pages")
    skills: int = Field(description="Skill cards")


class Usage(BaseModel):
    memories: Quota
    working_items: Quota
    package_bytes: Quota
    sources: Quota
    builds_per_day: Quota
    rate: RateLimits
    indexing: IndexingWaiting = Field(
        description="Items stored but still waiting for their vector, because the embedding endpoint or the vector "
        "index failed when they were written: search finds them meanwhile through its lexical leg (and says it is "
        "degraded), and heal jobs re-embed them with backoff, without an operator, once the dependency is back. "
        "All zero when nothing waits"
    )
