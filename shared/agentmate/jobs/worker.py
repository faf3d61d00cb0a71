"""The worker: claim one job, run its runner with a heartbeat, write the outcome (prior-art §4.9).

- Claim: one transaction (``jobs_claim``: FOR UPDATE SKIP LOCKED, attempt counts claims, max attempts), then the
  transaction switches to the job's account and the kind's ``on_change`` runs in it. A fresh lease owner per
  claim, so a second claim of the same row in the same process can never pass the first one's guard.
- Heartbeat: a thread on its own pooled connection (the pool must hold two) extends the lease every
  WIKI_WORKER_HEARTBEAT_SECONDS; when the row is no longer this claim's, ``lease_lost`` is set and the runner
  stops. Transient database errors are retried until the lease itself would have run out.
- Outcome: one tenant transaction guarded by the lease owner (status, error, usage, and ``on_change``). A lost
  lease discards the outcome; the attempt's usage is still added to the job.
- Retry: ``Retryable`` → queued again after 30 s x 2^(attempt-1) capped at 600 s (or the runner's retry_after),
  while attempts remain; ``Permanent`` and unknown errors → failed. A retry due within SQS's 15 minutes gets a
  delayed wake-up; a later one is left to the sweep.
- Yield: when the remaining invocation time cannot cover the kind's timeout (plus the finish margin), or on
  shutdown, the job goes back due now with the attempt refunded, and a new wake-up is sent.
- Release (issue 20): a runner's report is data (a provider's Retry-After, token counts, error text): it is
  clamped and cleaned before it is written. When writing an outcome fails all the same, a last-resort minimal
  update in a fresh transaction releases the job (queued after the backoff, or failed when no attempts remain or
  the intended outcome was a failure), so no job stays ``running`` past its attempt. Only when even that cannot be
  written (the database is gone) does the lease run out; the queue's stalled view shows the job until then.
"""

from __future__ import annotations

import math
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.observability import count, logger
from agentmate.jobs import repository as repo
from agentmate.jobs import wakeup
from agentmate.jobs.errors import LeaseLost, Permanent, Retryable, Yield
from agentmate.jobs.registry import Kind, RunContext, Usage, kinds, sweepers
from agentmate.jobs.schemas import Job
from agentmate.jobs.settings import MAX_WAKE_DELAY_S, JobSettings, get_job_settings

if TYPE_CHECKING:
    from agentmate.core.db import Conn, Database

Outcome = Literal[
    "not_claimed", "succeeded", "failed", "retry", "yielded", "lease_lost", "gave_up", "released"
]
_HOST = socket.gethostname()[:64]
_ERROR_CHARS = 2000
# Token counts and cost per outcome write: far above any real job (llm clamps one call to 10^8 tokens and one
# cost to 10^15 micros), far below bigint's 9.2e18 (the SQL also saturates the running totals).
MAX_USAGE_PER_WRITE = 10**15


class ConfigurationError(RuntimeError):
    """The worker cannot run as configured (refused at start, with what to change)."""


@dataclass(frozen=True)
class RunReport:
    outcome: Outcome
    job: Job | None = None
    retry_in_seconds: float | None = None


def check_fits(
    function_timeout_s: float, settings: JobSettings | None = None, only: Iterable[Kind] | None = None
) -> None:
    """Refuse a configuration where a registered kind's timeout plus the finish margin does not fit inside the
    function's timeout: every such run would be yielded (or killed mid-write) and never finish."""
    settings = settings or get_job_settings()
    margin = settings.jobs_finish_margin_seconds
    for kind in only if only is not None else kinds().values():
        needed = kind.timeout_seconds() + margin
        if needed > function_timeout_s:
            raise ConfigurationError(
                f"job kind {kind.name!r}: its timeout {kind.timeout_seconds():g} s plus JOBS_FINISH_MARGIN_SECONDS="
                f"{margin:g} s does not fit the worker function's timeout of {function_timeout_s:g} s; lower the "
                f"kind's timeout (e.g. COMPILER_TIMEOUT_SECONDS=780 with a 900 s function) or the margin"
            )


class Heartbeat:
    """Extends one claim's lease on its own connection until stopped; sets ``lease_lost`` when it is gone."""

    def __init__(
        self,
        db: Database,
        job: Job,
        owner: str,
        lease_seconds: Callable[[], float],
        interval_s: float,
        lease_lost: threading.Event,
    ) -> None:
        self._db, self._job, self._owner = db, job, owner
        self._lease_seconds, self._interval = lease_seconds, interval_s
        self.lease_lost = lease_lost
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{job.id}", daemon=True)
        self.beats = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(self._interval):
            try:
                with self._db.tenant(self._job.account_id) as conn:
                    held = repo.heartbeat(
                        conn, job=self._job, owner=self._owner, lease_seconds=self._lease_seconds()
                    )
            except Exception:
                # A brief database hiccup must not cost a live worker its lease: retry until the lease would
                # have expired anyway (then another worker may already own the job).
                logger.warning(
                    "job heartbeat failed; retrying", exc_info=True, extra={"job_id": str(self._job.id)}
                )
                if time.monotonic() - last_ok >= self._lease_seconds():
                    self.lease_lost.set()
                    return
                continue
            if not held:
                logger.warning("job lease lost", extra={"job_id": str(self._job.id)})
                self.lease_lost.set()
                return
            last_ok = time.monotonic()
            self.beats += 1


def _clamp_int(value: Any, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return min(max(value, 0), high)


def _usage(u: Usage) -> dict[str, int]:
    """What a runner reported, as the jobs row can store it: non-negative integers within bigint."""
    return {
        name: _clamp_int(getattr(u, name), MAX_USAGE_PER_WRITE)
        for name in ("input_tokens", "output_tokens", "cost_micros")
    }


def _text(reason: Any) -> str:
    """An error as last_error can store it: bounded, and without NUL (no Postgres text value may hold one)."""
    return str(reason)[:_ERROR_CHARS].replace("\x00", "")


def _delay(backoff: float, retry_after: Any, cap: float) -> float:
    """The backoff, or a longer Retry-After: a finite number, clamped to the backoff cap (anything else: ignored)."""
    if (
        isinstance(retry_after, bool)
        or not isinstance(retry_after, int | float)
        or not math.isfinite(retry_after)
    ):
        return backoff
    return min(max(backoff, float(retry_after)), max(cap, backoff))


def _owner() -> str:
    return f"{_HOST}/{os.getpid()}/{secrets.token_hex(6)}"


class _Finish:
    """``RunContext.finish``: records the success inside the runner's own transaction (``done`` keeps it)."""

    def __init__(self, worker: Worker, kind: Kind, job: Job, owner: str) -> None:
        self.worker, self.kind, self.job, self.owner = worker, kind, job, owner
        self.ctx: RunContext | None = None
        self.done: Job | None = None

    def __call__(self, conn: Conn, result: dict[str, Any] | None) -> None:
        assert self.ctx is not None  # set before the runner starts
        done = repo.succeed(conn, job=self.job, owner=self.owner, usage=_usage(self.ctx.usage), result=result)
        if done is None:
            raise LeaseLost("another worker holds this job now")
        self.worker._changed(conn, self.kind, done)
        self.done = done


class Worker:
    """Runs jobs of the registered kinds (or only of ``only_kinds``) on ``db``, whose pool must hold at least two
    connections: the runner's and the heartbeat's. ``shutdown`` is set by the host (the local poller on exit) to
    make runs yield."""

    def __init__(
        self,
        db: Database,
        *,
        settings: JobSettings | None = None,
        shutdown: threading.Event | None = None,
        wake: Callable[[Any, int], bool] | None = None,
        only_kinds: Iterable[str] | None = None,
        running_cap: int | None = None,
    ) -> None:
        if db.max_size < 2:
            raise ConfigurationError(
                f"the job worker's database pool holds {db.max_size} connection(s); it needs at "
                "least 2 (the runner's and the heartbeat's): set DB_POOL_MAX_SIZE=2 or more"
            )
        self.db = db
        self.settings = settings or get_job_settings()
        self.shutdown = shutdown or threading.Event()
        self._wake = wake or wakeup.wake
        self._only = frozenset(only_kinds) if only_kinds is not None else None
        # Jobs of one account running at once (LIMIT_RUNNING_JOBS; 0 = no cap): the claim skips the others.
        self.running_cap = get_limit_settings().running_jobs if running_cap is None else running_cap

    # --- claim ----------------------------------------------------------------------------------------------

    def run_one(
        self, *, job_id: Any = None, remaining_seconds: Callable[[], float] | None = None
    ) -> RunReport:
        """Claim ``job_id`` (or the oldest claimable job) and run it to an outcome."""
        registered = {name: k for name, k in kinds().items() if self._only is None or name in self._only}
        if not registered or self.shutdown.is_set():
            return RunReport("not_claimed")
        remaining = remaining_seconds or (lambda: math.inf)
        owner = _owner()
        longest = max(k.timeout_seconds() for k in registered.values())

        def lease_seconds() -> float:
            # Never longer than the invocation can live (+ two heartbeats): a killed Lambda's job comes back sooner.
            return min(
                self.settings.lease_seconds(longest),
                remaining() + 2 * self.settings.wiki_worker_heartbeat_seconds,
            )

        job = self._claim(owner, lease_seconds(), job_id, registered)
        if job is None:
            return RunReport("not_claimed")
        if job.status == "failed":
            logger.warning(
                "job gave up", extra={"job_id": str(job.id), "kind": job.kind, "attempts": job.attempts}
            )
            count("JobGaveUp")
            return RunReport("gave_up", job)
        kind = registered[job.kind]
        margin = self.settings.jobs_finish_margin_seconds
        try:
            if remaining() < kind.timeout_seconds() + margin:
                return self._yield(kind, job, owner, Usage())
            return self._run(kind, job, owner, lambda: remaining() - margin, lease_seconds)
        except _Unrecorded as unrecorded:
            return self._release(kind, job, owner, unrecorded)
        finally:
            if self.running_cap > 0:
                self._wake_next(job)

    def _wake_next(self, job: Job) -> None:
        """A slot of the account is free again: wake its next due job, whose own wake-up the running cap may have
        turned away (else it would wait for the sweep)."""
        with self.db.tenant(job.account_id) as conn:
            next_id = repo.next_due(conn, after=job.id)
        if next_id is not None:
            self._wake(next_id, 0)

    def _claim(self, owner: str, lease_s: float, job_id: Any, registered: dict[str, Kind]) -> Job | None:
        with self.db.transaction() as conn:
            job = repo.claim(
                conn,
                owner=owner,
                lease_seconds=lease_s,
                job_id=job_id,
                kinds=sorted(registered),
                running_cap=self.running_cap,
            )
            if job is not None:
                repo.set_tenant(conn, job.account_id)  # from here on the transaction is the job's account's
                self._changed(conn, registered[job.kind], job)
        return job

    # --- run ------------------------------------------------------------------------------------------------

    def _run(
        self,
        kind: Kind,
        job: Job,
        owner: str,
        remaining: Callable[[], float],
        lease_seconds: Callable[[], float],
    ) -> RunReport:
        lease_lost = threading.Event()
        beat = Heartbeat(
            self.db, job, owner, lease_seconds, self.settings.wiki_worker_heartbeat_seconds, lease_lost
        )
        finish = _Finish(self, kind, job, owner)
        ctx = RunContext(
            job=job,
            remaining_seconds=remaining,
            lease_lost=lease_lost,
            shutdown=self.shutdown,
            _db=self.db,
            _finish=finish,
            _stop_heartbeat=beat.stop,
        )
        finish.ctx = ctx
        beat.start()
        try:
            result = kind.runner(ctx)
        except Exception as exc:
            return self._after_error(kind, job, owner, ctx, exc)
        finally:
            beat.stop()
        return self._after_return(kind, job, owner, ctx, result, finish.done)

    def _after_error(self, kind: Kind, job: Job, owner: str, ctx: RunContext, exc: Exception) -> RunReport:
        """The outcome of a runner that raised: a lost lease wins over everything but a ``Yield``; a shutdown
        turns a retryable or unknown error into a yield (the work was interrupted, not wrong)."""
        if isinstance(exc, Yield):
            return self._yield(kind, job, owner, ctx.usage)
        if isinstance(exc, LeaseLost) or ctx.lease_lost.is_set():
            return self._lost(job, ctx.usage)
        if isinstance(exc, Permanent):
            return self._fail(kind, job, owner, ctx.usage, exc.reason)
        if self.shutdown.is_set():
            return self._yield(kind, job, owner, ctx.usage)
        if isinstance(exc, Retryable):
            return self._retry(kind, job, owner, ctx.usage, exc)
        # Unknown errors are not retried (a run can be expensive); details go to the log, not to the tenant.
        logger.exception("job runner failed", extra={"job_id": str(job.id), "kind": job.kind})
        return self._fail(kind, job, owner, ctx.usage, f"unexpected error ({type(exc).__name__})")

    def _after_return(
        self,
        kind: Kind,
        job: Job,
        owner: str,
        ctx: RunContext,
        result: dict[str, Any] | None,
        finished: Job | None,
    ) -> RunReport:
        """The outcome of a runner that returned: already recorded (``ctx.finish``), lost, or recorded now."""
        if ctx.finished:
            count("JobSucceeded")
            return RunReport("succeeded", finished)
        if ctx.lease_lost.is_set():
            return self._lost(job, ctx.usage)
        # A success that cannot be recorded (e.g. a result Postgres refuses) is an unknown error: not retried.
        done = self._guarded(
            kind,
            job,
            lambda conn: repo.succeed(conn, job=job, owner=owner, usage=_usage(ctx.usage), result=result),
            ctx.usage,
            failing=True,
        )
        if done is None:
            return RunReport("lease_lost", job)
        count("JobSucceeded")
        return RunReport("succeeded", done)

    # --- outcomes -------------------------------------------------------------------------------------------

    def _changed(self, conn: Conn, kind: Kind, job: Job) -> None:
        if kind.on_change is not None:
            kind.on_change(conn, job)

    def _guarded(
        self, kind: Kind, job: Job, write: Callable[[Conn], Job | None], usage: Usage, *, failing: bool
    ) -> Job | None:
        try:
            with self.db.tenant(job.account_id) as conn:
                done = write(conn)
                if done is not None:
                    self._changed(conn, kind, done)
        except Exception as exc:
            raise _Unrecorded(failing=failing, usage=usage) from exc
        if done is None:
            self._lost(job, usage)
        return done

    def _retry(self, kind: Kind, job: Job, owner: str, usage: Usage, exc: Retryable) -> RunReport:
        if job.attempts >= job.max_attempts:
            return self._fail(kind, job, owner, usage, f"gave up after {job.attempts} attempts: {exc.reason}")
        delay = _delay(
            self.settings.backoff_seconds(job.attempts),
            exc.retry_after,
            self.settings.wiki_worker_max_retry_backoff_seconds,
        )
        scheduled = delay + 1 <= MAX_WAKE_DELAY_S
        done = self._guarded(
            kind,
            job,
            lambda conn: repo.requeue(
                conn,
                job=job,
                owner=owner,
                usage=_usage(usage),
                error=_text(exc.reason),
                delay_seconds=delay,
                wake_scheduled=scheduled,
            ),
            usage,
            failing=False,
        )
        if done is None:
            return RunReport("lease_lost", job)
        if scheduled:
            self._wake(
                job.id, math.ceil(delay) + 1
            )  # +1 s: the message must not arrive before the row is due
        count("JobRetried")
        return RunReport("retry", done, retry_in_seconds=delay)

    def _fail(self, kind: Kind, job: Job, owner: str, usage: Usage, error: str) -> RunReport:
        done = self._guarded(
            kind,
            job,
            lambda conn: repo.fail(conn, job=job, owner=owner, usage=_usage(usage), error=_text(error)),
            usage,
            failing=True,
        )
        if done is None:
            return RunReport("lease_lost", job)
        count("JobFailed")
        return RunReport("failed", done)

    def _yield(self, kind: Kind, job: Job, owner: str, usage: Usage) -> RunReport:
        done = self._guarded(
            kind,
            job,
            lambda conn: repo.yield_back(conn, job=job, owner=owner, usage=_usage(usage)),
            usage,
            failing=False,
        )
        if done is None:
            return RunReport("lease_lost", job)
        self._wake(job.id, 0)
        count("JobYielded")
        return RunReport("yielded", done)

    def _release(self, kind: Kind, job: Job, owner: str, unrecorded: _Unrecorded) -> RunReport:
        """The last resort when an outcome could not be written: a minimal update in a fresh transaction (no
        runner data, a fixed error text) takes the job out of ``running``: failed when the outcome was a failure or
        no attempt remains, else queued after the backoff. ``on_change`` is tried with it, then without it (it may
        be what failed). When nothing can be written the error propagates (SQS redelivers the wake-up) and the
        lease runs out: the queue's stalled view shows the job until a worker claims it again."""
        cause = unrecorded.__cause__ or unrecorded
        logger.error(
            "job outcome could not be written; releasing the job",
            exc_info=cause,
            extra={"job_id": str(job.id), "kind": job.kind},
        )
        failed = unrecorded.failing or job.attempts >= job.max_attempts
        delay = self.settings.backoff_seconds(job.attempts)
        scheduled = delay + 1 <= MAX_WAKE_DELAY_S
        error = f"the outcome of attempt {job.attempts} could not be recorded ({type(cause).__name__}); " + (
            "the job failed" if failed else f"retrying after {delay:g} s"
        )
        done: Job | None = None
        for with_change in (True, False):
            try:
                with self.db.tenant(job.account_id) as conn:
                    done = repo.release(
                        conn,
                        job=job,
                        owner=owner,
                        failed=failed,
                        error=error,
                        delay_seconds=delay,
                        wake_scheduled=scheduled,
                    )
                    if done is not None and with_change:
                        self._changed(conn, kind, done)
                break
            except Exception:
                logger.exception(
                    "job release failed", extra={"job_id": str(job.id), "on_change": with_change}
                )
        else:
            count("JobReleaseFailed")
            raise cause
        if done is None:
            return self._lost(job, unrecorded.usage)
        self._add_usage(job, unrecorded.usage)
        if not failed and scheduled:
            self._wake(job.id, math.ceil(delay) + 1)
        count("JobReleased")
        return RunReport("released", done, retry_in_seconds=None if failed else delay)

    def _add_usage(self, job: Job, usage: Usage) -> None:
        """Best effort: the calls were made and paid for, but a failure to count them must not stop anything."""
        if not any(_usage(usage).values()):
            return
        try:
            with self.db.tenant(job.account_id) as conn:
                repo.add_usage(conn, job=job, usage=_usage(usage))
        except Exception:
            logger.exception("job usage could not be recorded", extra={"job_id": str(job.id)})

    def _lost(self, job: Job, usage: Usage) -> RunReport:
        self._add_usage(job, usage)
        logger.warning("job outcome discarded: lease lost", extra={"job_id": str(job.id)})
        count("JobLeaseLost")
        return RunReport("lease_lost", job)


class _Unrecorded(Exception):
    """Writing an outcome failed (raised from the database error): the worker releases the job instead."""

    def __init__(self, *, failing: bool, usage: Usage) -> None:
        super().__init__("the job's outcome could not be written")
        self.failing = failing
        self.usage = usage


def sweep(
    db: Database, *, settings: JobSettings | None = None, wake: Callable[[Any, int], bool] | None = None
) -> int:
    """Re-send a wake-up for every claimable job no wake-up reached within the grace period (a lost message, a
    killed worker's expired lease, a backoff longer than an SQS delay), then retire jobs of kinds nobody here runs.
    Only the kinds this process registered are re-sent. Returns how many wake-ups were sent."""
    settings = settings or get_job_settings()
    send = wake or wakeup.wake
    registered = sorted(kinds())
    with db.transaction() as conn:
        due = repo.due_for_wakeup(
            conn,
            grace_seconds=settings.jobs_sweep_grace_seconds,
            limit=settings.jobs_sweep_batch,
            kinds=registered,
        )
    sent = sum(1 for job_id in due if send(job_id, 0))
    if due:
        logger.info("job sweep", extra={"due": len(due), "sent": sent})
    retire_unregistered(db, settings=settings)
    run_sweepers(db)
    return sent


def run_sweepers(db: Database) -> int:
    """Run every registered sweeper (``registry.register_sweeper``); one failing does not stop the others.
    Returns how many jobs they queued."""
    queued = 0
    for name, sweeper in sweepers().items():
        try:
            queued += sweeper(db)
        except Exception:
            logger.exception("job sweeper failed", extra={"sweeper": name})
    return queued


def retire_unregistered(db: Database, *, settings: JobSettings | None = None) -> int:
    """Fail the jobs whose kind no runner in this process is registered for, once they have waited
    JOBS_UNREGISTERED_AFTER_SECONDS: nobody would ever claim them. Returns how many were failed."""
    settings = settings or get_job_settings()
    registered = sorted(kinds())
    if not registered:
        return 0  # a process that runs no kinds at all is misconfigured, not proof that every kind is gone
    with db.transaction() as conn:
        retired = repo.fail_unregistered(
            conn,
            kinds=registered,
            after_seconds=settings.jobs_unregistered_after_seconds,
            limit=settings.jobs_sweep_batch,
        )
    for row in retired:
        logger.warning(
            "job of an unregistered kind retired",
            extra={"job_id": str(row["job_id"]), "account_id": str(row["account_id"]), "kind": row["kind"]},
        )
        count("JobUnregisteredKind")
    return len(retired)
