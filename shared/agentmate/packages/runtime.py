"""The deployment's git sync parts, built from settings (``PACKAGES_*``), for every registry: the URL policy and
a fetcher that is only built (dulwich only imported) when a sync of an existing git source actually fetches.

A registry keeps its own ``net_policy`` / ``fetcher`` module functions on top of these, so tests can point one
registry at the loopback git server."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentmate.packages.limits import get_package_settings
from agentmate.packages.policy import NetPolicy
from agentmate.packages.schemas import Fetched

if TYPE_CHECKING:  # pragma: no cover
    from agentmate.packages.service import Fetcher


def net_policy() -> NetPolicy:
    return NetPolicy.from_settings(get_package_settings())


def git_fetcher(policy: NetPolicy | None = None, *, sync_budget_s: float | None = None) -> Fetcher:
    """``sync_budget_s`` overrides PACKAGES_SYNC_BUDGET_S (the job worker's syncs are not bound by a request)."""
    import dataclasses

    from agentmate.packages.git import GitFetcher  # dulwich only where a sync runs

    settings = get_package_settings()
    limits = settings.sync_limits()
    if sync_budget_s is not None:
        limits = dataclasses.replace(limits, budget_s=sync_budget_s)
    return GitFetcher(policy or net_policy(), settings, sync_limits=limits)


class LazyFetcher:
    """Calls ``factory`` for the real fetcher only when a fetch happens (a refused sync never builds one)."""

    def __init__(self, factory: Callable[[], Fetcher]) -> None:
        self._factory = factory

    def fetch(self, repository_url: str, package_path: str, ref: str) -> Fetched:
        return self._factory().fetch(repository_url, package_path, ref)
