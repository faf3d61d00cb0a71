"""The embedding endpoint or the vector index down while a knowledge source or a skill card is indexed: the index
run still answers (its chunks and cards marked failed), the account sees how many wait, and the failure queues the
domain's own heal job at once (``knowledge_index_heal``, ``skills_index_heal``), which backs off while the
dependency is down and re-embeds and re-indexes once it is back, without an operator or the 5-minute sweep."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from psycopg.rows import dict_row

import agentmate.knowledge.search.jobs  # (registers the kinds, as the worker's runners do)
import agentmate.memory.jobs
import agentmate.skills.search.jobs  # noqa: F401
from agentmate.core.db import Database
from agentmate.jobs.worker import Worker
from agentmate.knowledge.search.index import HEAL_KIND as KNOWLEDGE_HEAL
from agentmate.skills.search.index import HEAL_KIND as SKILLS_HEAL
from tests.faults.conftest import backoff_over
from tests.integration.jobs.test_skills_jobs import SKILL
from tests.integration.jobs.test_skills_jobs import _publish as publish_skill


def _jobs(owner: Any, account_id: str, kind: str) -> list[dict[str, Any]]:
    with psycopg.connect(owner, row_factory=dict_row) as conn:
        return conn.execute(
            "SELECT id, status, attempts, max_attempts FROM jobs WHERE account_id = %s AND kind = %s"
            " ORDER BY queued_at",
            (account_id, kind),
        ).fetchall()


def _run(kind: str, job_id: uuid.UUID) -> str:
    db = Database(__import__("os").environ["DATABASE_URL"], max_size=2)
    try:
        return Worker(db, only_kinds=[kind]).run_one(job_id=job_id).outcome
    finally:
        db.close()


def _knowledge_source(client: Any, h: dict[str, str]) -> str:
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "ops/deploys"},
        headers=h,
    ).json()
    sections = "\n".join(
        f"# Stage {i}\n\nStage {i} of the deploy pipeline runs check {i}.\n" for i in range(3)
    )
    files = [
        {"path": "KNOWLEDGE.yaml", "content": "name: deploys\ndescription: how deploys run\n"},
        {"path": "pipeline.md", "content": sections},
    ]
    r = client.post(f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h)
    assert r.status_code == 201, r.text
    return str(src["id"])


def _index_status(client: Any, h: dict[str, str]) -> str:
    (card,) = client.get("/api/knowledge/catalog", headers=h).json()["items"]
    return str(card["index_status"])


@pytest.mark.parametrize("dependency", ["embedder", "vector index"])
def test_a_knowledge_index_run_during_an_outage_queues_its_heal_job_which_reindexes_once_the_dependency_is_back(
    client, account, owner_url, flaky, dependency
):
    provider, index = flaky
    h = account.headers("knowledge:rw")
    _knowledge_source(client, h)
    # Given the dependency is down while the source is indexed
    provider.down = dependency == "embedder"
    index.down = dependency == "vector index"
    report = client.post("/api/knowledge/index", json={}, headers=h)
    # Then the run answers, the source is partial, and the report counts the chunks waiting for their vector
    assert report.status_code == 200, report.text
    body = report.json()
    (item,) = body["items"]
    assert item["status"] == "partial" and item["failed_chunks"] == item["chunks"] > 0
    assert body["waiting"] == item["chunks"]
    # And search degrades and says so, still finding the chunks through the lexical leg
    found = client.post("/api/knowledge/search", json={"query": "deploy pipeline stage"}, headers=h).json()
    assert [d["leg"] for d in found["degraded"]] == ["vector"] and found["items"]
    # And one heal job of the domain's own is queued at once, with the backoff's attempts
    (job,) = _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)
    assert (job["status"], job["max_attempts"]) == ("queued", 10)
    # And a second failing run reuses it
    assert client.post("/api/knowledge/index", json={}, headers=h).json()["waiting"] == item["chunks"]
    assert [j["id"] for j in _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)] == [job["id"]]

    # When the job runs while the dependency is still down, it backs off and heals nothing
    assert _run(KNOWLEDGE_HEAL, job["id"]) == "retry"
    assert _index_status(client, h) == "partial"

    # When the dependency is back and the job runs again
    provider.down = index.down = False
    backoff_over(owner_url, job["id"])
    assert _run(KNOWLEDGE_HEAL, job["id"]) == "succeeded"

    # Then the source is indexed, nothing waits, and search uses both legs again
    assert _index_status(client, h) == "indexed"
    found = client.post("/api/knowledge/search", json={"query": "deploy pipeline stage"}, headers=h).json()
    assert found["degraded"] == [] and found["items"]
    with psycopg.connect(owner_url) as conn:
        statuses = conn.execute(
            "SELECT DISTINCT status FROM retrieval_documents WHERE account_id = %s", (account.account_id,)
        ).fetchall()
    assert statuses == [("indexed",)]


@pytest.mark.parametrize("dependency", ["embedder", "vector index"])
def test_a_skill_index_run_during_an_outage_queues_its_heal_job_which_reindexes_once_the_dependency_is_back(
    client, account, owner_url, flaky, dependency
):
    provider, index = flaky
    h = account.headers("skills:rw")
    names = [f"s{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for name in names:
        publish_skill(client, h, name)
    # Given the dependency is down while the active cards are indexed
    provider.down = dependency == "embedder"
    index.down = dependency == "vector index"
    report = client.post("/api/skills/index", json={}, headers=h)
    # Then the run answers with each card failed, and the count of cards waiting for their vector
    assert report.status_code == 200, report.text
    body = report.json()
    assert (body["failed"], body["waiting"]) == (2, 2)
    # And one heal job of the domain's own is queued at once
    (job,) = _jobs(owner_url, account.account_id, SKILLS_HEAL)
    assert (job["status"], job["max_attempts"]) == ("queued", 10)

    # When the job runs while the dependency is still down, it backs off
    assert _run(SKILLS_HEAL, job["id"]) == "retry"

    # When the dependency is back and the job runs again
    provider.down = index.down = False
    backoff_over(owner_url, job["id"])
    assert _run(SKILLS_HEAL, job["id"]) == "succeeded"

    # Then both cards are indexed: search finds them through both legs, and an index run finds nothing waiting
    found = client.post(
        "/api/skills/search", json={"query": "answer questions", "top_k": 5}, headers=h
    ).json()
    assert found["degraded"] == []
    assert {hit["skill_name"] for hit in found["items"]} == set(names)
    again = client.post("/api/skills/index", json={}, headers=h).json()
    assert (again["indexed"], again["failed"], again["waiting"]) == (2, 0, 0)
    assert [j["status"] for j in _jobs(owner_url, account.account_id, SKILLS_HEAL)] == ["succeeded"]


def test_a_skill_pushed_with_index_during_an_outage_queues_the_heal_job(client, account, owner_url, flaky):
    provider, _ = flaky
    h = account.headers("skills:rw")
    name = f"s{uuid.uuid4().hex[:8]}"
    publish_skill(client, h, name)
    (source,) = client.get("/api/skills/sources", headers=h).json()["items"]
    # Given the embedder is down when a changed snapshot is pushed with activate and index
    provider.down = True
    files = [{"path": "SKILL.md", "content": SKILL.format(name=name) + "\nAlso say who owns it.\n"}]
    r = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        headers=h,
        json={"files": files, "activate": True, "index": True},
    )
    # Then the push succeeds, its card's index failed, and the heal job is queued
    assert r.status_code == 201, r.text
    assert r.json()["index"]["status"] == "failed"
    assert [j["status"] for j in _jobs(owner_url, account.account_id, SKILLS_HEAL)] == ["queued"]


def _exhaust(owner: Any, kind: str, job_id: uuid.UUID) -> None:
    """Run the job through every attempt while its dependency is down (the backoff skipped, not waited)."""
    outcomes = []
    while not outcomes or outcomes[-1] == "retry":
        backoff_over(owner, job_id)
        outcomes.append(_run(kind, job_id))
    assert outcomes == ["retry"] * 9 + ["failed"]


def _memory_sweep_heals(owner: Any, account_id: str) -> None:
    """Memory's ``retrieval_heal`` sweep (which re-embeds waiting rows of every namespace) queues the account's job,
    its rows' failure dated past the sweep's grace; the job runs and succeeds."""
    from agentmate.core.db import get_database
    from agentmate.memory.service.projection import HEAL_KIND as MEMORY_HEAL
    from agentmate.memory.service.projection import sweep_heal as memory_sweep

    with psycopg.connect(owner) as conn:
        conn.execute(
            "UPDATE retrieval_documents SET updated_at = now() - interval '1 hour' WHERE account_id = %s",
            (account_id,),
        )
    memory_sweep(get_database())
    (job,) = _jobs(owner, account_id, MEMORY_HEAL)
    assert _run(MEMORY_HEAL, job["id"]) == "succeeded"


def _usage_waiting(client: Any, h: dict[str, str]) -> dict[str, int]:
    r = client.get("/api/auth/usage", headers=h)
    assert r.status_code == 200, r.text
    return dict(r.json()["indexing"])


def test_a_knowledge_heal_job_that_used_up_its_attempts_is_queued_again_by_the_sweep_once_the_outage_ends(
    client, account, owner_url, flaky
):
    from agentmate.core.db import get_database
    from agentmate.knowledge.search.index import sweep_heal

    provider, _ = flaky
    h = account.headers("knowledge:rw")
    source_id = _knowledge_source(client, h)
    # Given a source indexed while the embedder was down, whose heal job used up its 10 attempts in the outage
    provider.down = True
    (item,) = client.post("/api/knowledge/index", json={}, headers=h).json()["items"]
    chunks = item["failed_chunks"]
    assert chunks == item["chunks"] > 0
    (job,) = _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)
    _exhaust(owner_url, KNOWLEDGE_HEAL, job["id"])
    # Then the account sees what waits: in its usage report and on the source's catalog card
    assert _usage_waiting(client, h) == {"memory": 0, "knowledge": chunks, "wiki": 0, "skills": 0}
    (card,) = client.get("/api/knowledge/catalog", headers=h).json()["items"]
    assert (card["source_id"], card["index_status"], card["waiting_chunks"]) == (source_id, "partial", chunks)
    # And a sweep during the outage queues the heal job again (its backoff starts over), once
    assert sweep_heal(get_database()) >= 1
    assert [j["status"] for j in _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)] == ["failed", "queued"]
    sweep_heal(get_database())
    again = _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)
    assert [j["status"] for j in again] == ["failed", "queued"]
    _exhaust(owner_url, KNOWLEDGE_HEAL, again[-1]["id"])

    # When the embedder is back, memory's sweep re-embeds the chunks' rows (its job heals every namespace) ...
    provider.down = False
    _memory_sweep_heals(owner_url, account.account_id)
    assert _usage_waiting(client, h)["knowledge"] == 0
    # ... but the source's index state is still the failed run's: only the knowledge heal job rewrites it
    assert _index_status(client, h) == "partial"

    # When the knowledge sweep runs, it queues the heal job again, and that job heals the source
    assert sweep_heal(get_database()) >= 1
    *_, healing = _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)
    assert healing["status"] == "queued"
    assert _run(KNOWLEDGE_HEAL, healing["id"]) == "succeeded"
    (card,) = client.get("/api/knowledge/catalog", headers=h).json()["items"]
    assert (card["index_status"], card["waiting_chunks"]) == ("indexed", 0)
    assert _usage_waiting(client, h) == {"memory": 0, "knowledge": 0, "wiki": 0, "skills": 0}
    # And a sweep with nothing left partial queues nothing more for the account
    sweep_heal(get_database())
    statuses = [j["status"] for j in _jobs(owner_url, account.account_id, KNOWLEDGE_HEAL)]
    assert statuses == ["failed", "failed", "succeeded"]


def test_skill_cards_left_waiting_after_their_heal_job_used_up_its_attempts_are_healed_by_the_sweep(
    client, account, owner_url, flaky
):
    provider, _ = flaky
    h = account.headers("skills:rw")
    name = f"s{uuid.uuid4().hex[:8]}"
    publish_skill(client, h, name)
    # Given the active card indexed while the embedder was down, and its heal job's attempts used up
    provider.down = True
    assert client.post("/api/skills/index", json={}, headers=h).json()["waiting"] == 1
    (job,) = _jobs(owner_url, account.account_id, SKILLS_HEAL)
    _exhaust(owner_url, SKILLS_HEAL, job["id"])
    assert _usage_waiting(client, h)["skills"] == 1
    # When the embedder is back and the sweep runs (a card has no index state of its own: its retrieval row is
    # the whole of it, which the retrieval_heal sweep re-embeds whatever the namespace)
    provider.down = False
    _memory_sweep_heals(owner_url, account.account_id)
    # Then nothing waits, and search uses both legs again
    assert _usage_waiting(client, h)["skills"] == 0
    found = client.post(
        "/api/skills/search", json={"query": "answer questions", "top_k": 5}, headers=h
    ).json()
    assert found["degraded"] == [] and [hit["skill_name"] for hit in found["items"]] == [name]
