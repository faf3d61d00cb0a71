"""The job row and the queue statistics, as services hand them out."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict

JobStatus = Literal["queued", "running", "succeeded", "failed", "cancelled"]
JOB_STATUSES: tuple[JobStatus, ...] = ("queued", "running", "succeeded", "failed", "cancelled")
UNFINISHED: tuple[JobStatus, ...] = ("queued", "running")


class Job(BaseModel):
    """One row of ``jobs`` (migrations/0070). ``lease_owner`` is the worker holding it while it runs."""

    model_config = ConfigDict(frozen=True)

    id: UUID
    account_id: UUID
    kind: str
    subject_id: UUID | None
    payload: dict[str, Any]
    status: JobStatus
    attempts: int
    max_attempts: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    next_attempt_at: datetime
    woken_at: datetime
    last_error: str | None
    result: dict[str, Any] | None
    input_tokens: int
    output_tokens: int
    cost_micros: int
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED


class KindStats(BaseModel):
    """The unfinished jobs of one kind: waiting (due, unleased), running (leased), backing_off (a retry not due
    yet), stalled (running but its lease expired: the worker died and the sweep has not re-sent it yet)."""

    kind: str
    waiting: int
    running: int
    backing_off: int
    stalled: int
    oldest_waiting_age_seconds: float | None


class QueueStats(BaseModel):
    """Totals over every kind plus one entry per kind with unfinished jobs."""

    waiting: int
    running: int
    backing_off: int
    stalled: int
    oldest_waiting_age_seconds: float | None
    kinds: list[KindStats]


class JobUsage(BaseModel):
    """What every attempt together spent (a job that failed twice before succeeding cost all three)."""

    input_tokens: int
    output_tokens: int
    cost_micros: int


class JobView(BaseModel):
    """A job as its account sees it (GET /api/knowledge/jobs/{job_id}): no lease owner (a worker's host and pid)."""

    id: UUID
    kind: str
    subject_id: UUID | None
    status: JobStatus
    attempts: int
    max_attempts: int
    payload: dict[str, Any]
    next_attempt_at: datetime
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    last_error: str | None
    result: dict[str, Any] | None
    usage: JobUsage
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    updated_at: datetime

    @classmethod
    def of(cls, job: Job) -> JobView:
        data = job.model_dump(
            exclude={"account_id", "lease_owner", "woken_at", "input_tokens", "output_tokens", "cost_micros"}
        )
        return cls(
            **data,
            usage=JobUsage(
                input_tokens=job.input_tokens, output_tokens=job.output_tokens, cost_micros=job.cost_micros
            ),
        )
