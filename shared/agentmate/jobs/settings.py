"""Queue settings: spec/001's WIKI_WORKER_* variables (they govern every job kind, the wiki compile first) plus
the deployment's wiring (queue URL, function timeout). Validated once per execution environment."""

from __future__ import annotations

from functools import lru_cache

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# SQS refuses a DelaySeconds above 900: a retry due later than that is left to the sweep.
MAX_WAKE_DELAY_S = 900


class JobSettings(BaseSettings):
    model_config = SettingsConfigDict(env_file=None, extra="ignore", case_sensitive=False)

    # Jobs run at once per process locally (threads of the poller); in Lambda the event source mapping's
    # MaximumConcurrency plays this part (template.yaml), and each invocation runs one job.
    wiki_worker_concurrency: int = Field(default=2, ge=1, le=64)
    # Local poller: how often it looks for due jobs when nobody pokes it.
    wiki_worker_poll_seconds: float = Field(default=5, gt=0, le=300)
    wiki_worker_heartbeat_seconds: float = Field(default=15, gt=0, le=300)
    wiki_worker_retry_backoff_seconds: float = Field(default=30, ge=0, le=3600)
    wiki_worker_max_retry_backoff_seconds: float = Field(default=600, ge=0, le=86400)

    # The wake-up queue (Lambda); empty = no SQS (the local poller, or tests).
    jobs_queue_url: str = ""
    # The worker function's Timeout (template.yaml passes the same parameter to both); unset outside Lambda.
    jobs_function_timeout_seconds: float | None = Field(default=None, gt=0, le=900)
    # Room a job's runner must leave inside the invocation for the claim, the outcome transaction and the
    # wake-ups: a runner whose timeout plus this does not fit the function timeout is refused at start.
    jobs_finish_margin_seconds: float = Field(default=60, ge=0, le=600)
    # A lease is twice the kind's own timeout, never shorter than this.
    jobs_min_lease_seconds: float = Field(default=120, gt=0, le=86400)
    # The sweep re-sends a claimable job no wake-up reached within this many seconds.
    jobs_sweep_grace_seconds: int = Field(default=180, ge=1, le=86400)
    jobs_sweep_batch: int = Field(default=100, ge=1, le=1000)
    # A job of a kind no worker in this deployment runs is failed once it has waited this long (enough for a
    # rolling deploy to bring the kind's worker), instead of waiting, and being re-sent, forever.
    jobs_unregistered_after_seconds: int = Field(default=900, ge=1, le=7 * 86400)

    @model_validator(mode="after")
    def _heartbeat_under_lease(self) -> JobSettings:
        # A heartbeat must come several times per lease, or a brief database hiccup costs a live worker its lease.
        if self.wiki_worker_heartbeat_seconds * 4 > self.jobs_min_lease_seconds:
            raise ValueError(
                f"WIKI_WORKER_HEARTBEAT_SECONDS={self.wiki_worker_heartbeat_seconds:g} must be at most "
                f"a quarter of the shortest lease (JOBS_MIN_LEASE_SECONDS="
                f"{self.jobs_min_lease_seconds:g})"
            )
        return self

    def backoff_seconds(self, attempt: int) -> float:
        """30 s x 2^(attempt-1), capped at 600 s (the defaults): ``attempt`` is the attempt that just failed."""
        exp = min(max(attempt, 1) - 1, 30)
        return float(
            min(self.wiki_worker_retry_backoff_seconds * 2**exp, self.wiki_worker_max_retry_backoff_seconds)
        )

    def lease_seconds(self, timeout_seconds: float) -> float:
        """Derived from the work's own timeout, never configured apart from it: a lease shorter than the work
        guarantees a healthy worker loses its job mid-run and two workers write the same result."""
        return max(self.jobs_min_lease_seconds, 2 * timeout_seconds)


@lru_cache(maxsize=1)
def get_job_settings() -> JobSettings:
    return JobSettings()
