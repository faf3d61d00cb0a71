"""Fault tests: a Postgres cluster of the test's own (so it can be stopped and started under traffic without
touching the session's), served to the app by pointing ``DATABASE_URL`` at it for the test's duration."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentmate.retrieval.service as retrieval_service
from agentmate.core import db as core_db
from agentmate.core import migrate
from agentmate.core.settings import get_database_settings
from agentmate.retrieval.embedded_index import EmbeddedIndex
from agentmate.retrieval.embedders import OpenAIEmbedder
from agentmate.retrieval.vector_index import VectorIndexError, VectorPoint
from infra import localpg
from tests.fakes.embeddings_provider import SlowEmbeddings


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


class FlakyIndex:
    """The vector index interface around a real in-memory index, failing every call while ``down``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.down = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                raise VectorIndexError("vector index unavailable (test)")
            return attr(*args, **kwargs)

        return call

    def upsert(self, account_id: str, points: Sequence[VectorPoint]) -> None:
        if self.down:
            raise VectorIndexError("vector index unavailable (test)")
        self.inner.upsert(account_id, points)


@pytest.fixture
def provider() -> Iterator[SlowEmbeddings]:
    with SlowEmbeddings(delay_s=0) as server:
        yield server


@pytest.fixture
def flaky(provider, make_retrieval, serve_retrieval, monkeypatch) -> tuple[SlowEmbeddings, FlakyIndex]:
    """A Retrieval over the fake provider and a flaky index, served to the REST apps and to the heal job."""
    embedder = OpenAIEmbedder(provider.base_url, "k", "fake-model", dimensions=8, timeout_s=5, max_retries=0)
    index = FlakyIndex(EmbeddedIndex())
    rt = serve_retrieval(make_retrieval(embedder=embedder, index=index))
    monkeypatch.setattr(retrieval_service, "get_retrieval", lambda: rt)
    return provider, index


def backoff_over(owner: Any, job_id: uuid.UUID) -> None:
    """As if the job's backoff had passed (no waiting in a test)."""
    import psycopg

    with psycopg.connect(owner) as conn:
        conn.execute("UPDATE jobs SET next_attempt_at = now() - interval '1 second' WHERE id = %s", (job_id,))
