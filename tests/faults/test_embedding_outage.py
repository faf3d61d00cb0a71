"""The embedding endpoint and the vector index down, then back: stores still succeed (201, ``indexing.status:
failed``), searches degrade and say so, each failure queues the account's ``retrieval_heal`` job, and once the
dependency is back the job re-embeds and re-indexes every waiting item; ``indexing.waiting`` counts them down to 0.
Faults are injected with the fake embeddings provider on loopback and a wrapper around the vector index."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import agentmate.memory.jobs  # noqa: F401  (registers retrieval_heal, as the worker's runners do)
from agentmate.core.db import Database
from agentmate.jobs.worker import Worker
from agentmate.memory.service.projection import HEAL_KIND
from tests.faults.conftest import backoff_over

ENTRIES = "/api/memory/entries"


def _heal_jobs(owner: Any, account_id: str) -> list[dict[str, Any]]:
    import psycopg
    from psycopg.rows import dict_row

    with psycopg.connect(owner, row_factory=dict_row) as conn:
        return conn.execute(
            "SELECT id, status, attempts FROM jobs WHERE account_id = %s AND kind = %s ORDER BY queued_at",
            (account_id, HEAL_KIND),
        ).fetchall()


def _run(job_id: uuid.UUID) -> str:
    db = Database(__import__("os").environ["DATABASE_URL"], max_size=2)
    try:
        return Worker(db, only_kinds=[HEAL_KIND]).run_one(job_id=job_id).outcome
    finally:
        db.close()


@pytest.mark.parametrize("dependency", ["embedder", "vector index"])
def test_items_stored_during_an_outage_are_healed_by_the_job_once_the_dependency_is_back(
    client, account, owner_url, flaky, dependency
):
    provider, index = flaky
    h = account.headers("memory:rw")
    # Given the dependency is down while three memories are stored
    provider.down = dependency == "embedder"
    index.down = dependency == "vector index"
    ids = []
    for i in range(3):
        body = {
            "memory_type": "semantic",
            "title": f"Deploy rule {i}",
            "content": f"deploys use pipeline {i}",
            "evidence": [
                {"source_type": "url", "source_id": f"https://wiki/deploys/{i}", "excerpt": "pipeline"}
            ],
        }
        r = client.post(ENTRIES, json=body, headers=h)
        # Then each store succeeds and says its vector is missing
        assert r.status_code == 201, r.text
        assert r.json()["indexing"]["status"] == "failed"
        ids.append(r.json()["id"])
    # And a search degrades and says so, still finding them through the lexical leg
    found = client.post("/api/memory/search", json={"query": "deploys pipeline"}, headers=h).json()
    assert [d["leg"] for d in found["degraded"]] == ["vector"]
    assert {i["entry"]["id"] for i in found["items"]} == set(ids)
    # And the account sees three items waiting, and one heal job queued for them
    assert client.get(f"{ENTRIES}/{ids[0]}", headers=h).json()["indexing"]["waiting"] == 3
    (job,) = _heal_jobs(owner_url, account.account_id)
    assert job["status"] == "queued"

    # When the job runs while the dependency is still down, it backs off and heals nothing
    assert _run(job["id"]) == "retry"
    assert client.get(f"{ENTRIES}/{ids[0]}", headers=h).json()["indexing"]["waiting"] == 3

    # When the dependency is back and the job runs again
    provider.down = index.down = False
    backoff_over(owner_url, job["id"])
    assert _run(job["id"]) == "succeeded"

    # Then every item is indexed, the count is 0, and search uses both legs again
    for entry_id in ids:
        indexing = client.get(f"{ENTRIES}/{entry_id}", headers=h).json()["indexing"]
        assert (indexing["status"], indexing["waiting"]) == ("indexed", 0)
    found = client.post("/api/memory/search", json={"query": "deploys pipeline"}, headers=h).json()
    assert found["degraded"] == []
    assert {i["entry"]["id"] for i in found["items"]} == set(ids)


def test_the_sweep_queues_a_heal_job_for_an_account_left_waiting_without_one(
    client, account, owner_url, flaky
):
    import psycopg

    from agentmate.core.db import get_database
    from agentmate.memory.service.projection import sweep_heal

    provider, _ = flaky
    h = account.headers("memory:rw")
    # Given an item stored while the embedder was down, whose heal job used up its attempts long ago
    provider.down = True
    body = {
        "memory_type": "semantic",
        "title": "Rollbacks",
        "content": "rollbacks use the previous image",
        "evidence": [{"source_type": "url", "source_id": "https://wiki/rollbacks", "excerpt": "image"}],
    }
    assert client.post(ENTRIES, json=body, headers=h).status_code == 201
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE jobs SET status = 'failed' WHERE account_id = %s", (account.account_id,))
        conn.execute(
            "UPDATE retrieval_documents SET updated_at = now() - interval '1 hour' WHERE account_id = %s",
            (account.account_id,),
        )
    # When the sweep runs (it sees every account of this test database; it queues at most one job per account)
    sweep_heal(get_database())
    # Then this account has a new queued heal job, and a second sweep queues none beside it
    assert [j["status"] for j in _heal_jobs(owner_url, account.account_id)] == ["failed", "queued"]
    sweep_heal(get_database())
    assert [j["status"] for j in _heal_jobs(owner_url, account.account_id)] == ["failed", "queued"]
    # And once the embedder is back, that job heals the item
    provider.down = False
    assert _run(_heal_jobs(owner_url, account.account_id)[-1]["id"]) == "succeeded"
    with psycopg.connect(owner_url) as conn:
        statuses = conn.execute(
            "SELECT status FROM retrieval_documents WHERE account_id = %s", (account.account_id,)
        ).fetchall()
    assert statuses == [("indexed",)]
