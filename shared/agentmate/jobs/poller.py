"""The local runtime's stand-in for SQS: threads that claim with the same worker code as the Lambda handler.

Each thread drains (claims until nothing is claimable), then waits for a poke (``jobs.wake`` after an enqueue
calls it) or WIKI_WORKER_POLL_SECONDS, whichever comes first. Polling rather than only waiting for pokes: a
job whose worker died, or whose backoff ended, has nobody to poke for it. On stop, running jobs are told to
yield (their attempt refunded) and the threads are joined.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentmate.core.observability import logger
from agentmate.jobs import wakeup
from agentmate.jobs.settings import JobSettings, get_job_settings
from agentmate.jobs.worker import Worker, retire_unregistered, run_sweepers

if TYPE_CHECKING:
    from agentmate.core.db import Database


class Poller:
    def __init__(
        self,
        db: Database,
        *,
        settings: JobSettings | None = None,
        concurrency: int | None = None,
        only_kinds: Iterable[str] | None = None,
    ) -> None:
        self.settings = settings or get_job_settings()
        self.concurrency = concurrency or self.settings.wiki_worker_concurrency
        self.shutdown = threading.Event()
        self.worker = Worker(db, settings=self.settings, shutdown=self.shutdown, only_kinds=only_kinds)
        self._poke = threading.Event()
        self._threads: list[threading.Thread] = []
        self._previous: wakeup.Waker | None = None

    def poke(self, job_id: Any = None, delay_seconds: int = 0) -> None:
        self._poke.set()

    def start(self) -> None:
        self._previous = wakeup.set_waker(self.poke)
        for n in range(self.concurrency):
            thread = threading.Thread(target=self._loop, args=(n == 0,), name=f"job-poller-{n}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout_s: float = 30.0) -> None:
        self.shutdown.set()
        self._poke.set()
        for thread in self._threads:
            thread.join(timeout_s)
        self._threads.clear()
        wakeup.set_waker(self._previous)

    def _loop(self, retires: bool) -> None:
        last_retire = -float("inf")
        while not self.shutdown.is_set():
            self._poke.clear()
            try:
                if retires and time.monotonic() - last_retire >= self.settings.jobs_sweep_grace_seconds:
                    last_retire = time.monotonic()
                    retire_unregistered(self.worker.db, settings=self.settings)
                    run_sweepers(self.worker.db)
                while not self.shutdown.is_set() and self.worker.run_one().outcome != "not_claimed":
                    pass
            except Exception:
                logger.exception("job poller: claim failed; retrying after the poll interval")
            self._poke.wait(self.settings.wiki_worker_poll_seconds)

    @asynccontextmanager
    async def local_lifespan(self) -> AsyncIterator[None]:
        """For the local dispatcher (infra/local_app.py): run while the server runs."""
        import anyio.to_thread

        self.start()
        try:
            yield
        finally:
            await anyio.to_thread.run_sync(self.stop)
