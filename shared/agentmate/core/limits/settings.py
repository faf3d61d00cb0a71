"""The ``LIMIT_*`` settings group: per-account request rate, concurrent expensive requests, running jobs and
stored-volume quotas. Defaults are generous for one agent's real use; every one is configurable, and 0 turns a
rate, concurrency or quota limit off."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class LimitSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_file=None, extra="ignore", case_sensitive=False, env_prefix="LIMIT_"
    )

    # Requests per account per minute (every authenticated REST route and MCP tool call), with a burst of this
    # many requests on top of the steady rate (GCRA).
    requests_per_minute: int = Field(default=1200, ge=0, le=1_000_000)
    request_burst: int = Field(default=120, ge=1, le=100_000)
    # Expensive requests (searches, the context pack, source syncs) running at once per account, and the most a
    # lease is held when the process holding it dies before releasing it.
    concurrent_expensive: int = Field(default=4, ge=0, le=1000)
    expensive_lease_s: int = Field(default=120, ge=1, le=3600)
    # Jobs of one account the worker runs at once; the rest wait in the queue (never refused at enqueue).
    running_jobs: int = Field(default=2, ge=0, le=1000)
    # A long-lived process (the local runtime, a self-hosted server) holds a 429 this long at most (never past its
    # Retry-After) before answering it: a client that retries at once instead of reading Retry-After then sends a
    # few requests a second instead of thousands, and costs its neighbours next to nothing. The template sets 0:
    # in Lambda a held request is billed, and API Gateway's throttling stops a flood before it (docs/deploy.md).
    # Requests of one credential running at once in one long-lived process (core/limits/gate.py); the rest wait
    # their turn there, so a burst of one tenant never queues another behind it. 0 turns the gate off.
    concurrent_per_credential: int = Field(default=2, ge=0, le=1000)
    refusal_hold_ms: int = Field(default=500, ge=0, le=10_000)
    # Stored volume per account.
    max_memories: int = Field(default=100_000, ge=0)
    max_working_items: int = Field(default=200_000, ge=0)
    max_package_bytes: int = Field(default=2 * 1024**3, ge=0)
    max_sources: int = Field(default=500, ge=0)
    max_builds_per_day: int = Field(default=200, ge=0)


@lru_cache(maxsize=1)
def get_limit_settings() -> LimitSettings:
    return LimitSettings()
