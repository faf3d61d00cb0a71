"""Fixtures of the job-queue tests: a pool of our own, test job kinds, and owner-side row surgery (expiring a
lease, ageing a wake-up) that stands in for time passing: no test sleeps through a lease or a backoff."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

from agentmate import jobs
from agentmate.core.db import Database
from agentmate.jobs import wakeup
from agentmate.jobs.settings import JobSettings


@pytest.fixture
def db() -> Iterator[Database]:
    database = Database(os.environ["DATABASE_URL"], max_size=6)
    try:
        yield database
    finally:
        database.close()


@pytest.fixture
def settings() -> JobSettings:
    return JobSettings(wiki_worker_heartbeat_seconds=0.05, jobs_min_lease_seconds=120)


@dataclass
class Wakes:
    """Records wake-ups instead of sending them."""

    sent: list[tuple[uuid.UUID, int]] = field(default_factory=list)

    def __call__(self, job_id: Any, delay_seconds: int) -> None:
        self.sent.append((uuid.UUID(str(job_id)), delay_seconds))


@pytest.fixture
def wakes() -> Iterator[Wakes]:
    recorder = Wakes()
    previous = wakeup.set_waker(recorder)
    try:
        yield recorder
    finally:
        wakeup.set_waker(previous)


@dataclass
class TestKind:
    name: str
    runs: list[jobs.Job] = field(default_factory=list)
    changes: list[tuple[str, int]] = field(default_factory=list)
    behaviour: Callable[[jobs.RunContext], Any] | None = None
    release: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)

    def runner(self, ctx: jobs.RunContext) -> Any:
        self.runs.append(ctx.job)
        self.started.set()
        return self.behaviour(ctx) if self.behaviour else {"ok": True}

    def on_change(self, conn: Any, job: jobs.Job) -> None:
        self.changes.append((job.status, job.attempts))


@pytest.fixture
def make_kind() -> Iterator[Callable[..., TestKind]]:
    made: list[str] = []

    def make(
        behaviour: Callable[[jobs.RunContext], Any] | None = None, *, timeout_seconds: float = 60
    ) -> TestKind:
        kind = TestKind(f"test_{uuid.uuid4().hex[:10]}", behaviour=behaviour)
        jobs.register(kind.name, kind.runner, timeout_seconds=timeout_seconds, on_change=kind.on_change)
        made.append(kind.name)
        return kind

    yield make
    for name in made:
        jobs.unregister(name)


@pytest.fixture
def enqueue(db: Database) -> Callable[..., jobs.Job]:
    def put(account_id: str, kind: str, **kw: Any) -> jobs.Job:
        with db.tenant(account_id) as conn:
            return jobs.enqueue(conn, account_id=uuid.UUID(account_id), kind=kind, **kw)

    return put


class Rows:
    """The owner's view of jobs rows (bypasses RLS): for assertions, and to move a row through time."""

    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, job_id: Any) -> dict[str, Any]:
        with psycopg.connect(self.url, row_factory=dict_row) as conn:
            row = conn.execute(
                "SELECT *, next_attempt_at - now() AS due_in, woken_at - now() AS woken_in "
                "FROM jobs WHERE id = %s",
                (job_id,),
            ).fetchone()
        assert row is not None
        return row

    def update(self, job_id: Any, sets: str, *params: Any) -> None:
        with psycopg.connect(self.url) as conn:
            conn.execute(f"UPDATE jobs SET {sets} WHERE id = %s", (*params, job_id))  # type: ignore[arg-type]

    def expire_lease(self, job_id: Any) -> None:
        """As if the lease ran out (its worker died or was partitioned away)."""
        self.update(job_id, "lease_expires_at = now() - interval '1 second'")

    def backoff_over(self, job_id: Any) -> None:
        self.update(job_id, "next_attempt_at = now() - interval '1 second'")

    def wake_lost(self, job_id: Any) -> None:
        """As if the last wake-up was sent long ago and never arrived."""
        self.update(job_id, "woken_at = now() - interval '1 hour'")

    def quiet_earlier_jobs(self) -> None:
        """Jobs earlier tests left queued (e.g. an account export the scope matrix started) as if just woken, so a
        sweep that counts queue messages sees only this test's jobs."""
        with psycopg.connect(self.url) as conn:
            conn.execute(
                "UPDATE jobs SET woken_at = now() + interval '1 day' WHERE status IN ('queued', 'running')"
            )


@pytest.fixture
def rows(owner_url: str) -> Rows:
    return Rows(owner_url)
