"""Job kinds and their runners.

The one convention for declaring a kind: a job kind is registered once, in a module named ``jobs.py`` inside the
sub-package of its use case, by module-level ``jobs.register(...)`` calls; nothing else registers kinds. The
kind-name constant lives with the code that enqueues the kind, and ``jobs.py`` imports it together with the
runner: the enqueuing code never imports ``jobs.py``, so no use case and its job module import each other (the
``acyclic_siblings`` contract would refuse it). The worker and the local poller discover kinds by importing the
one list of job modules, ``functions/compile_worker/runners.py`` (the worker function at cold start, the local
runtime's poller in ``infra/local_app.py``); a request path never loads a ``jobs.py``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentmate.jobs.errors import LeaseLost
from agentmate.jobs.schemas import Job

if TYPE_CHECKING:
    from agentmate.core.db import Conn, Database


class Runner(Protocol):
    def __call__(self, ctx: RunContext) -> dict[str, Any] | None: ...


# Called inside the transaction that changed the job (claimed, requeued, yielded, failed, succeeded), under the
# job's account, with the job as it now is: the owning domain mirrors the status on its own row there.
OnChange = Callable[["Conn", Job], None]


@dataclass(frozen=True)
class Kind:
    name: str
    runner: Runner
    # The longest one run may take (e.g. COMPILER_TIMEOUT_SECONDS): the lease is derived from it and a worker
    # refuses to start a run the remaining invocation time cannot cover.
    timeout_seconds: Callable[[], float]
    on_change: OnChange | None = None


_KINDS: dict[str, Kind] = {}
_lock = threading.Lock()


def register(
    kind: str,
    runner: Runner,
    *,
    timeout_seconds: float | Callable[[], float],
    on_change: OnChange | None = None,
) -> Kind:
    """Register (or replace, e.g. in tests) the runner of ``kind``."""
    timeout = timeout_seconds if callable(timeout_seconds) else (lambda t=float(timeout_seconds): t)
    entry = Kind(kind, runner, timeout, on_change)
    with _lock:
        _KINDS[kind] = entry
    return entry


def unregister(kind: str) -> None:
    with _lock:
        _KINDS.pop(kind, None)


def kinds() -> dict[str, Kind]:
    with _lock:
        return dict(_KINDS)


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_micros: int = 0


@dataclass
class RunContext:
    """What a runner gets: its job, the time it may still use, and the events that tell it to stop.

    ``lease_lost`` is set when the heartbeat finds the job no longer this worker's (another worker claimed it
    after an expiry, or it was cancelled): stop and write nothing. ``shutdown`` is set when the process is going
    away: stop and raise ``jobs.Yield`` (the job is handed back with its attempt refunded).
    """

    job: Job
    remaining_seconds: Callable[[], float]
    lease_lost: threading.Event
    shutdown: threading.Event
    _db: Database
    _finish: Callable[[Conn, dict[str, Any] | None], None]
    _stop_heartbeat: Callable[[], None]
    usage: Usage = field(default_factory=Usage)
    finished: bool = False

    @property
    def stopping(self) -> bool:
        return self.lease_lost.is_set() or self.shutdown.is_set()

    @property
    def db(self) -> Database:
        """For services that open their own ``db.tenant(account_id)`` transactions (pass the job's account)."""
        return self._db

    def tenant(self) -> Any:
        """A transaction under the job's account (RLS): everything a runner reads or writes goes through it."""
        return self._db.tenant(self.job.account_id)

    def add_usage(self, *, input_tokens: int = 0, output_tokens: int = 0, cost_micros: int = 0) -> None:
        """Record what this attempt spent; it is added to the job's totals whatever the outcome."""
        self.usage.input_tokens += input_tokens
        self.usage.output_tokens += output_tokens
        self.usage.cost_micros += cost_micros

    @contextmanager
    def finish(self, result: dict[str, Any] | None = None) -> Iterator[Conn]:
        """The success outcome, guarded by the lease: marks the job succeeded first (raising ``LeaseLost`` when
        this worker no longer holds it), then yields the same transaction for the runner's own writes, so the
        results and the job's success commit together or not at all."""
        if self.lease_lost.is_set():
            raise LeaseLost("the lease was lost before the outcome")
        self._stop_heartbeat()
        with self.tenant() as conn:
            self._finish(conn, result)
            yield conn
        self.finished = True


Sweeper = Callable[["Database"], int]
_SWEEPERS: dict[str, Sweeper] = {}


def register_sweeper(name: str, sweeper: Sweeper) -> None:
    """Register (or replace) a periodic check the scheduled sweep and the local poller run beside the wake-up
    sweep, e.g. queueing a heal job for every account that needs one (``memory/jobs.py``). Registered where the
    kinds are (a ``jobs.py``); it returns how many jobs it queued."""
    with _lock:
        _SWEEPERS[name] = sweeper


def sweepers() -> dict[str, Sweeper]:
    with _lock:
        return dict(_SWEEPERS)
