"""The skills registry's work that does not fit a request: a compile backfill or an index run over more active
versions than the inline bound answers 202 with a job, which the worker runs (the same use cases)."""

from __future__ import annotations

import uuid

import pytest

from agentmate.jobs.worker import Worker
from agentmate.skills import batch
from agentmate.skills.compile import jobs as skill_jobs
from agentmate.skills.search import jobs as search_jobs

SKILL = """---
name: {name}
description: Answer questions about {name}
---

# Instructions

Say what {name} does.
"""


def _publish(client, h, name: str) -> None:
    r = client.post(
        "/api/skills/sources",
        json={
            "name": name,
            "type": "local",
            "repository_url": "file:///skills",
            "package_path": f"team/{name}",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    r = client.post(
        f"/api/skills/sources/{r.json()['id']}/snapshots",
        headers=h,
        json={"files": [{"path": "SKILL.md", "content": SKILL.format(name=name)}], "activate": True},
    )
    assert r.status_code == 201, r.text


@pytest.fixture
def three_skills(client, account, monkeypatch):
    """Three active skill versions, one more than this test's inline bound of two."""
    h = account.headers("skills:rw")
    names = [f"s{uuid.uuid4().hex[:8]}" for _ in range(3)]
    for name in names:
        _publish(client, h, name)
    monkeypatch.setattr(batch, "MAX_INLINE_VERSIONS", 2)
    return names


def test_a_compile_backfill_too_large_for_a_request_is_a_job_the_worker_runs(
    client, account, db, wakes, three_skills
):
    h = account.headers("skills:rw", "knowledge:r")
    # When the backfill covers more versions than a request may
    r = client.post("/api/skills/compile", json={}, headers=h)
    # Then the answer is 202 with a queued job, and a worker was woken for it
    assert r.status_code == 202, r.text
    body = r.json()
    assert (body["items"], body["total"]) == ([], 0)
    job = body["job"]
    assert (job["kind"], job["status"], job["attempts"]) == (skill_jobs.COMPILE_KIND, "queued", 0)
    assert wakes.sent == [(uuid.UUID(job["id"]), 0)]
    # And asking again while it waits hands back the same job
    assert client.post("/api/skills/compile", json={}, headers=h).json()["job"]["id"] == job["id"]
    # When the worker runs it
    assert Worker(db).run_one(job_id=job["id"]).outcome == "succeeded"
    # Then every active version was compiled, and the job says so
    done = client.get(f"/api/knowledge/jobs/{job['id']}", headers=h).json()
    assert (done["status"], done["result"]) == ("succeeded", {"compiled": 3, "failed": 0, "total": 3})
    # And one version at a time still runs inline
    catalog = client.get("/api/skills/catalog", headers=h).json()
    assert {i["skill_name"] for i in catalog["items"]} == set(three_skills)
    assert all(i["compiled"] for i in catalog["items"])
    one = client.post(
        "/api/skills/compile", json={"skill_version_id": catalog["items"][0]["skill_version_id"]}, headers=h
    )
    assert one.status_code == 200 and one.json()["job"] is None and one.json()["compiled"] == 1


def test_an_index_run_too_large_for_a_request_is_a_job_and_search_finds_its_cards(
    client, account, db, wakes, three_skills
):
    h = account.headers("skills:rw", "knowledge:r")
    r = client.post("/api/skills/index", json={}, headers=h)
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert job["kind"] == search_jobs.INDEX_KIND
    assert Worker(db).run_one(job_id=job["id"]).outcome == "succeeded"
    done = client.get(f"/api/knowledge/jobs/{job['id']}", headers=h).json()
    assert done["result"] == {"indexed": 3, "failed": 0, "total": 3}
    hits = client.post(
        "/api/skills/search", json={"query": f"what does {three_skills[1]} do"}, headers=h
    ).json()
    assert three_skills[1] in [hit["skill_name"] for hit in hits["items"]]
    # A run narrowed to one skill fits inline
    one = client.post("/api/skills/index", json={"skill_name": three_skills[0]}, headers=h)
    assert one.status_code == 200 and one.json()["indexed"] == 1


def test_another_account_cannot_read_the_job(client, account, other_account, wakes, three_skills):
    job = client.post("/api/skills/compile", json={}, headers=account.headers("skills:rw")).json()["job"]
    assert (
        client.get(
            f"/api/knowledge/jobs/{job['id']}", headers=other_account.headers("knowledge:r")
        ).status_code
        == 404
    )
