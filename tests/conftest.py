"""Test session set-up: the environment the app reads and, when a collected test needs one, a real Postgres with
a migrated template database cloned once per worker (``make unit`` starts none). Isolation between tests comes
from fresh accounts (tenants) per test; each test builds the retrieval it needs (``make_retrieval``)."""

from __future__ import annotations

import hashlib
import os
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hypothesis
import pytest

from agentmate.core.limits.settings import LimitSettings, get_limit_settings

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

PG_PORT = int(os.environ.get("AGENTMATE_TEST_PG_PORT", "26433"))

# Property tests draw the same examples on every run, so CI is never decided by a lucky draw;
# HYPOTHESIS_PROFILE=explore draws new ones (run it before changing a parser).
hypothesis.settings.register_profile("agentmate", derandomize=True, database=None)
hypothesis.settings.register_profile("explore", database=None)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "agentmate"))
PG_DIR = ROOT / ".local" / "test-pg"
JWT_SECRET = "test-secret-" + "x" * 32


def _migrations_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "migrations").glob("*.sql")):
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:12]


# Tests under these folders need no database: a run that collects only them never starts or reaches Postgres.
NO_DATABASE = (ROOT / "tests" / "unit",)


def pytest_configure(config: pytest.Config) -> None:
    """The environment the app reads, except the database (see ``pytest_collection_finish``)."""
    os.environ.update(
        {
            "AGENTMATE_ENV": "test",
            "JWT_SECRET": JWT_SECRET,
            # Every test registers fresh accounts from the same client address; the throttle tests set their own.
            "REGISTRATIONS_PER_ADDRESS": "1000000",
            # Tests drive one account far faster than an agent does; the limits tests set their own rate.
            "LIMIT_REQUESTS_PER_MINUTE": "0",
            # A refusal answers at once, and no request waits its credential's turn: TestClient runs requests on
            # several event loops, and the gate is one loop's (the fairness tests turn both on).
            "LIMIT_REFUSAL_HOLD_MS": "0",
            "LIMIT_CONCURRENT_PER_CREDENTIAL": "0",
            "EMBEDDING_BASE_URL": "",
            "QDRANT_URL": "",
            "VECTOR_PATH": "",
            "POWERTOOLS_DEV": "false",
            "POWERTOOLS_LOG_LEVEL": "WARNING",
        }
    )


def _needs_database(item: pytest.Item) -> bool:
    return not any(item.path.is_relative_to(folder) for folder in NO_DATABASE)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Set up Postgres only when a collected test needs it: a migrated template database (per migrations
    digest, shared by every run) cloned into this worker's database, which ``DATABASE_URL`` then names."""
    if not any(_needs_database(item) for item in session.items):
        return
    import psycopg

    from agentmate.core import migrate
    from infra import localpg

    owner_base = os.environ.get("TEST_DATABASE_OWNER_URL")  # e.g. postgresql://postgres@host:5432
    if owner_base is None:
        localpg.start(PG_DIR, PG_PORT)
        owner_base = f"postgresql://postgres@127.0.0.1:{PG_PORT}"
    admin_url = owner_base + "/postgres"
    template = f"agentmate_tmpl_{_migrations_digest()}"
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    run = os.environ.get("AGENTMATE_TEST_RUN", "main")  # lets parallel pytest runs share one server
    database = f"agentmate_test_{run}_{worker}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(4242)")
        try:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (template,)).fetchone():
                conn.execute(f'CREATE DATABASE "{template}"')  # type: ignore[arg-type]
                migrate.apply_all(f"{owner_base}/{template}")
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')  # type: ignore[arg-type]
            conn.execute(f'CREATE DATABASE "{database}" TEMPLATE "{template}"')  # type: ignore[arg-type]
        finally:
            conn.execute("SELECT pg_advisory_unlock(4242)")
    host = owner_base.split("@", 1)[1]
    os.environ["DATABASE_URL"] = f"postgresql://agentmate_app@{host}/{database}"
    from agentmate.core.settings import get_database_settings

    get_database_settings.cache_clear()  # in case collection read the settings before the database was known
    session.config.stash[_OWNER_URL] = f"{owner_base}/{database}"
    session.config.stash[_OWNER_BASE] = owner_base


_OWNER_URL = pytest.StashKey[str]()
_OWNER_BASE = pytest.StashKey[str]()


def _stashed(config: pytest.Config, key: pytest.StashKey[str]) -> str:
    if key not in config.stash:
        raise RuntimeError(
            f"no test database: tests under {', '.join(str(f) for f in NO_DATABASE)} run without one"
        )
    return config.stash[key]


@pytest.fixture(scope="session")
def owner_url(pytestconfig: pytest.Config) -> str:
    """Owner (migration role) URL of this worker's test database: bypasses RLS, for assertions only."""
    return _stashed(pytestconfig, _OWNER_URL)


@pytest.fixture(scope="session")
def owner_base(pytestconfig: pytest.Config) -> str:
    return _stashed(pytestconfig, _OWNER_BASE)


@pytest.fixture(scope="session")
def app():
    from infra.local_app import build_local_app

    return build_local_app()


@pytest.fixture(scope="session")
def client(app):
    from starlette.testclient import TestClient

    with TestClient(app, base_url="http://127.0.0.1:26001") as c:
        yield c


@dataclass
class Account:
    """A fresh tenant: its JWT, and helpers to mint API keys."""

    client: Any
    email: str
    password: str
    token: str
    user_id: str
    account_id: str
    keys: dict[str, str] = field(default_factory=dict)

    @property
    def jwt_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def key(self, *scopes: str) -> str:
        """An API key with these scopes (none = full access), cached per scope set."""
        name = ",".join(sorted(scopes)) or "*full*"
        if name not in self.keys:
            r = self.client.post(
                "/api/auth/apikeys",
                json={"name": f"k-{name}", "scopes": list(scopes)},
                headers=self.jwt_headers,
            )
            assert r.status_code == 201, r.text
            self.keys[name] = r.json()["key"]
        return self.keys[name]

    def headers(self, *scopes: str) -> dict[str, str]:
        return {"X-Api-Key": self.key(*scopes)}


def make_account(client: Any) -> Account:
    email = f"user-{uuid.uuid4().hex[:12]}@example.com"
    password = "correct horse battery"
    r = client.post("/api/auth/register", json={"email": email, "password": password})
    assert r.status_code == 201, r.text
    reg = r.json()
    r = client.post("/api/auth/login", json={"email": email, "password": password})
    assert r.status_code == 200, r.text
    return Account(client, email, password, r.json()["token"], reg["user_id"], reg["account_id"])


@pytest.fixture
def account(client) -> Account:
    return make_account(client)


@pytest.fixture
def other_account(client) -> Account:
    return make_account(client)


@pytest.fixture(scope="session")
def offline_embedder() -> Any:
    """The embedder the test settings select (the bundled static model), loaded once per session."""
    from agentmate.core.settings import get_retrieval_settings
    from agentmate.retrieval import config

    return config.build_embedder(get_retrieval_settings())


@pytest.fixture
def make_retrieval(offline_embedder: Any) -> Iterator[Callable[..., Any]]:
    """Build a Retrieval of the test's own: ``make_retrieval(embedder=..., index=...)``; the embedder defaults to
    the session's offline one and the index to a fresh in-memory one. Closed after the test."""
    from agentmate.retrieval.service import Retrieval

    built: list[Any] = []

    def make(**parts: Any) -> Any:
        parts.setdefault("embedder", offline_embedder)
        retrieval = Retrieval(**parts)
        built.append(retrieval)
        return retrieval

    yield make
    for retrieval in built:
        retrieval.close()


@pytest.fixture
def serve_retrieval(app: Any) -> Iterator[Callable[[Any], Any]]:
    """Serve this test's REST requests with a given Retrieval, through the apps' retrieval dependency."""
    from fastapi import FastAPI

    from agentmate.api import deps

    apps = [a for a in dict.fromkeys(a for _, a in app.table) if isinstance(a, FastAPI)]

    def use(retrieval: Any) -> Any:
        for fastapi_app in apps:
            fastapi_app.dependency_overrides[deps.retrieval] = lambda: retrieval
        return retrieval

    yield use
    for fastapi_app in apps:
        fastapi_app.dependency_overrides.pop(deps.retrieval, None)


@pytest.fixture(autouse=True)
def _main_thread_event_loop() -> None:
    """Mangum (the Lambda adapter) runs on the main thread's event loop, which a Lambda process always has; an
    anyio test earlier in the same worker leaves the main thread without one (asyncio.run unsets it)."""
    import asyncio

    try:
        asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        asyncio.set_event_loop(asyncio.new_event_loop())


@pytest.fixture
def set_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Set ``LIMIT_*`` variables (core/limits) for this test (the settings group is read once per process, so re-read it)."""

    def apply(**values: int) -> LimitSettings:
        for name, value in values.items():
            monkeypatch.setenv(f"LIMIT_{name.upper()}", str(value))
        get_limit_settings.cache_clear()
        return get_limit_settings()

    yield apply
    monkeypatch.undo()
    get_limit_settings.cache_clear()
