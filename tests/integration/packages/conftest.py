"""A throw-away registry table set for the package ingest tests (created from the 0050 template)."""

from __future__ import annotations

from uuid import UUID

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.packages.service import Actor
from agentmate.packages.store import PackageStore, PackageTables

TABLES = PackageTables("pkgtest_sources", "pkgtest_revisions", "pkgtest_files")


@pytest.fixture(scope="session")
def store(owner_url: str) -> PackageStore:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(4250)")
        try:
            if conn.execute("SELECT to_regclass('pkgtest_sources')").fetchone()[0] is None:
                conn.execute(
                    "SELECT create_package_tables(%s, %s, %s)",
                    (TABLES.sources, TABLES.revisions, TABLES.files),
                )
        finally:
            conn.execute("SELECT pg_advisory_unlock(4250)")
    return PackageStore(TABLES)


@pytest.fixture
def db():
    return get_database()


@pytest.fixture
def actor(account) -> Actor:
    return Actor(UUID(account.account_id), UUID(account.user_id))


@pytest.fixture
def other_actor(other_account) -> Actor:
    return Actor(UUID(other_account.account_id), UUID(other_account.user_id))
