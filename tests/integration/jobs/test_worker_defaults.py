"""spec/001's worker defaults, as the queue runs them: WIKI_WORKER_CONCURRENCY 2 (poller threads),
WIKI_WORKER_POLL_SECONDS 5, WIKI_WORKER_HEARTBEAT_SECONDS 15 (well under the shortest lease),
WIKI_WORKER_RETRY_BACKOFF_SECONDS 30 doubling per attempt up to WIKI_WORKER_MAX_RETRY_BACKOFF_SECONDS 600."""

from __future__ import annotations

import pytest

from agentmate.jobs.poller import Poller
from agentmate.jobs.settings import JobSettings

SPEC_DEFAULTS = {
    "WIKI_WORKER_CONCURRENCY": 2,
    "WIKI_WORKER_POLL_SECONDS": 5,
    "WIKI_WORKER_HEARTBEAT_SECONDS": 15,
    "WIKI_WORKER_RETRY_BACKOFF_SECONDS": 30,
    "WIKI_WORKER_MAX_RETRY_BACKOFF_SECONDS": 600,
}


@pytest.fixture
def defaults(monkeypatch) -> JobSettings:
    """The settings of a deployment that sets none of the variables."""
    for name in SPEC_DEFAULTS:
        monkeypatch.delenv(name, raising=False)
    for name in ("JOBS_MIN_LEASE_SECONDS", "JOBS_FINISH_MARGIN_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    return JobSettings()


def test_the_worker_variables_default_to_spec_001_s_values(defaults):
    got = {name: getattr(defaults, name.lower()) for name in SPEC_DEFAULTS}
    assert got == SPEC_DEFAULTS


def test_retries_back_off_from_30_s_doubling_and_capped_at_600_s(defaults):
    # the attempt that just failed → the wait before the next one
    assert [defaults.backoff_seconds(attempt) for attempt in range(1, 8)] == [30, 60, 120, 240, 480, 600, 600]


def test_the_default_heartbeat_comes_at_least_four_times_per_shortest_lease(defaults):
    assert defaults.wiki_worker_heartbeat_seconds * 4 <= defaults.jobs_min_lease_seconds
    # and a compile's lease is derived from COMPILER_TIMEOUT_SECONDS (900 by default), never configured apart
    assert defaults.lease_seconds(900) == 1800


def test_the_local_poller_runs_as_many_worker_threads_as_the_concurrency_says(defaults, db):
    poller = Poller(db, settings=defaults, only_kinds=())  # claims nothing: only its threads are counted
    assert poller.concurrency == 2
    poller.start()
    try:
        assert len(poller._threads) == 2
    finally:
        poller.stop()
    assert poller.shutdown.is_set()
