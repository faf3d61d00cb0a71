"""A git sync that runs out of the request's time budget (issue 13: "large sync ... answer 202 with a job"): 202
with a knowledge_sync job, the source pending and naming the job, the worker repeating the sync with its own
budget against the loopback git server. A refusal inside the job fails it with the reason; a size limit stays a
413 in the request."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import agentmate.knowledge.sources.jobs  # noqa: F401  (registers knowledge_sync, as the worker's runners do)
from agentmate.jobs.worker import Worker
from agentmate.knowledge.sources import service
from agentmate.packages.git import GitFetcher
from agentmate.packages.limits import PackageLimits, SyncLimits
from tests.integration.knowledge.corpus import loopback_git
from tests.integration.packages.test_packages_git import SETTINGS, make_policy


@pytest.fixture
def git(monkeypatch) -> Any:
    with loopback_git(monkeypatch) as server:
        policy = make_policy()
        # the request's budget runs out at once; the worker's is the ordinary one
        monkeypatch.setattr(
            service, "fetcher", lambda: GitFetcher(policy, SETTINGS, sync_limits=SyncLimits(budget_s=1e-9))
        )
        monkeypatch.setattr(service, "job_fetcher", lambda: GitFetcher(policy, SETTINGS))
        yield server


def _source(client: Any, acc: Any, git: Any) -> str:
    r = client.post(
        "/api/knowledge/sources",
        headers=acc.headers("knowledge:rw"),
        json={
            "type": "git",
            "repository_url": git.url("git.test", "acme/kb"),
            "package_path": "product/faq",
            "default_ref": "main",
        },
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def _run(db: Any, job_id: str) -> Any:
    return Worker(db, only_kinds=[service.SYNC_JOB_KIND]).run_one(job_id=uuid.UUID(job_id))


def test_a_sync_past_the_request_budget_answers_202_and_the_job_finishes_it(client, account, db, git):
    source = _source(client, account, git)
    # When the sync runs out of the request's time
    r = client.post(f"/api/knowledge/sources/{source}/sync", json={}, headers=account.headers("knowledge:rw"))
    # Then it answers 202 with the job, and the source is pending, naming it
    assert r.status_code == 202, r.text
    body = r.json()
    job = body["job"]
    assert (job["kind"], job["status"], job["subject_id"]) == ("knowledge_sync", "queued", source)
    assert body["source"]["status"] == "pending" and job["id"] in body["source"]["last_error"]
    assert "sync_budget_s" in body["source"]["last_error"]
    # When the worker runs it (with the worker's budget)
    report = _run(db, job["id"])
    # Then the package is ingested at main's commit and the source serves it
    assert report.outcome == "succeeded", report
    assert report.job.result["commit_sha"] == git.main_sha and report.job.result["created"] is True
    src = client.get(f"/api/knowledge/sources/{source}", headers=account.headers("knowledge:r")).json()
    assert (src["status"], src["last_error"]) == ("ready", None)
    assert src["active_revision_id"] == report.job.result["revision_id"]
    done = client.get(f"/api/knowledge/jobs/{job['id']}", headers=account.headers("knowledge:r")).json()
    assert done["status"] == "succeeded"
    # And it is not readable without credentials
    assert client.get(f"/api/knowledge/jobs/{job['id']}").status_code == 401


def test_a_refusal_inside_the_sync_job_fails_it_with_the_reason(client, account, other_account, db, git):
    source = _source(client, account, git)
    r = client.post(
        f"/api/knowledge/sources/{source}/sync",
        json={"ref": "no-such-branch"},
        headers=account.headers("knowledge:rw"),
    )
    assert r.status_code == 202, r.text
    job = r.json()["job"]
    assert (
        client.get(
            f"/api/knowledge/jobs/{job['id']}", headers=other_account.headers("knowledge:r")
        ).status_code
        == 404
    )
    report = _run(db, job["id"])
    assert report.outcome == "failed" and "ref" in report.job.last_error
    src = client.get(f"/api/knowledge/sources/{source}", headers=account.headers("knowledge:r")).json()
    assert src["status"] == "error" and src["active_revision_id"] is None


def test_a_package_over_a_size_limit_is_still_a_413_not_a_job(client, account, git, monkeypatch):
    policy = make_policy()
    monkeypatch.setattr(
        service, "fetcher", lambda: GitFetcher(policy, SETTINGS, package_limits=PackageLimits(max_files=1))
    )
    source = _source(client, account, git)
    r = client.post(f"/api/knowledge/sources/{source}/sync", json={}, headers=account.headers("knowledge:rw"))
    assert r.status_code == 413 and "max_files" in r.json()["detail"]
    assert (
        client.get(
            "/api/knowledge/jobs", params={"kind": "knowledge_sync"}, headers=account.headers("knowledge:r")
        ).json()["total"]
        == 0
    )
