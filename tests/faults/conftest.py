"""Fault tests: a Postgres cluster of the test's own (so it can be stopped and started under traffic without
touching the session's), served to the app by pointing ``DATABASE_URL`` at it for the test's duration."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentmate.core import db as core_db
from agentmate.core import migrate
from agentmate.core.settings import get_database_settings
from infra import localpg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class OwnCluster:
    base: Path
    port: int

    def stop(self) -> None:
        """A fast shutdown: open sessions are ended, committed work is checkpointed."""
        localpg.stop(self.base)

    def start(self) -> None:
        assert localpg.start(self.base, self.port)


@pytest.fixture
def own_cluster(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OwnCluster]:
    """A migrated cluster on a free port that the app's requests use while the test runs (1 s connect budget)."""
    cluster = OwnCluster(tmp_path_factory.mktemp("own-pg"), _free_port())
    cluster.start()
    try:
        localpg.ensure_database(cluster.port, "agentmate")
        migrate.apply_all(localpg.url(cluster.port, "agentmate"))
        monkeypatch.setenv("DATABASE_URL", localpg.url(cluster.port, "agentmate", localpg.APP_ROLE))
        monkeypatch.setenv("DB_CONNECT_TIMEOUT_S", "1")
        get_database_settings.cache_clear()
        yield cluster
    finally:
        database = core_db._databases.pop(localpg.url(cluster.port, "agentmate", localpg.APP_ROLE), None)
        if database is not None:
            database.close()
        get_database_settings.cache_clear()
        cluster.stop()
