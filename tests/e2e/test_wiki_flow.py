"""The wiki compiler as a new user runs it against the local runtime (issue 13 "Done when"), over real HTTP with
the job poller running in the server as the dev server runs it and the compiler pointed at the loopback fake
provider through its ordinary settings (COMPILER_BASE_URL / COMPILER_MODEL): register → sync from the loopback git
server → compile → queue → build → pages → wiki search → rollback → incremental."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.chat_provider import FakeChatProvider
from tests.integration.knowledge.corpus import loopback_git, repository

from .conftest import serve

COMPILER_ENV = ("COMPILER_BASE_URL", "COMPILER_MODEL", "COMPILER_API_KEY")


@pytest.fixture
def fake() -> Iterator[FakeChatProvider]:
    with FakeChatProvider() as provider:
        yield provider


@pytest.fixture
def wiki_runtime(fake: FakeChatProvider) -> Iterator[str]:
    """The local runtime with its job poller, configured as an operator would: the compiler's environment."""
    from agentmate.llm.settings import get_model_settings as get_settings
    from agentmate.mcp.app import build_mcp_app
    from infra.local_app import build_local_app

    saved = {k: os.environ.get(k) for k in COMPILER_ENV}
    os.environ.update(
        {
            "COMPILER_BASE_URL": fake.base_url,
            "COMPILER_MODEL": "fake-compiler",
            "COMPILER_API_KEY": "local-key",
        }
    )
    get_settings.cache_clear()
    try:
        with serve(
            build_local_app(extra={"/mcp": build_mcp_app()}, job_poller=True), "uvicorn-wiki-e2e"
        ) as url:
            yield url
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        get_settings.cache_clear()


def _until(rest: httpx.Client, path: str, done: Any, timeout_s: float = 60.0) -> dict[str, Any]:
    """Poll a read route until ``done(body)``, as a client waiting on the queue would."""
    deadline = time.monotonic() + timeout_s
    while True:
        r = rest.get(path)
        assert r.status_code == 200, r.text
        body = r.json()
        if done(body):
            return body
        assert time.monotonic() < deadline, f"{path} never got there: {body}"
        time.sleep(0.05)


def _compiled(rest: httpx.Client, source_id: str, **body: Any) -> dict[str, Any]:
    r = rest.post("/api/knowledge/compile", json={"source_id": source_id, **body})
    assert r.status_code == 202, r.text
    queued = r.json()
    assert queued["queued"] is True and queued["build"]["status"] == "queued"
    build = _until(
        rest,
        f"/api/knowledge/builds/{queued['build']['id']}",
        lambda b: b["status"] not in ("queued", "running"),
    )
    assert (build["status"], build["check_status"]) == ("succeeded", "passed"), build
    return build


def _served_build(rest: httpx.Client, source_id: str, query: str) -> set[str]:
    """Wait for the wiki index to reflect the active build, then search: which builds the hits come from."""
    _until(rest, f"/api/knowledge/wiki/index?source_id={source_id}", lambda s: s["stale_count"] == 0)
    r = rest.post("/api/knowledge/wiki/search", json={"query": query, "source_ids": [source_id], "top_k": 10})
    assert r.status_code == 200, r.text
    found = r.json()
    assert found["stale"] == [] and found["items"], found
    return {h["build_id"] for h in found["items"]}


def test_register_sync_compile_queue_build_pages_search_rollback_incremental(
    wiki_runtime, account, fake, monkeypatch
):
    headers = {"X-Api-Key": account.key("knowledge:rw")}
    with (
        loopback_git(monkeypatch) as git,
        httpx.Client(base_url=wiki_runtime, headers=headers, timeout=30) as rest,
    ):
        # 1. Register a git source and sync it from the loopback git server
        r = rest.post(
            "/api/knowledge/sources",
            json={
                "type": "git",
                "repository_url": git.url("git.test", "acme/kb"),
                "package_path": "product/faq",
                "default_ref": "main",
            },
        )
        assert r.status_code == 201, r.text
        source = r.json()["id"]
        r = rest.post(f"/api/knowledge/sources/{source}/sync", json={})
        assert r.status_code == 201 and r.json()["revision"]["commit_sha"] == git.main_sha, r.text

        # 2. Compile: 202 at once, the poller's worker compiles it; the job and the queue say where it is
        first = _compiled(rest, source)
        job = rest.get(f"/api/knowledge/jobs/{first['job_id']}").json()
        assert (job["kind"], job["status"], job["attempts"]) == ("wiki_compile", "succeeded", 1)
        queue = _until(rest, "/api/knowledge/queue", lambda q: q["waiting"] == q["running"] == 0)
        assert queue["stalled"] == 0
        assert first["is_active"] is True and first["model"] == "fake-compiler" and first["output_tokens"] > 0

        # 3. Pages: metadata, then one page with its citations
        pages = rest.get(f"/api/knowledge/builds/{first['id']}/pages", params={"limit": 100}).json()
        paths = {p["path"] for p in pages["items"]}
        assert {"wiki/index.md", "wiki/log.md", "wiki/docs-refunds.md", "wiki/docs-billing.md"} <= paths
        page = rest.get(f"/api/knowledge/builds/{first['id']}/pages/wiki/docs-refunds.md").json()
        assert [c["document_path"] for c in page["citations"]] == ["docs/refunds.md"]

        # 4. Wiki search: the activation queued the re-index; once it ran, search serves the build
        assert _served_build(rest, source, "refunds original card") == {first["id"]}

        # 5. A second build becomes active; rolling back serves the first one's pages again at once
        second = _compiled(rest, source, force=True)
        assert _served_build(rest, source, "refunds original card") == {second["id"]}
        r = rest.post(f"/api/knowledge/builds/{first['id']}/activate")
        assert r.status_code == 200 and r.json()["previous_build_id"] == second["id"], r.text
        assert _served_build(rest, source, "refunds original card") == {first["id"]}

        # 6. Incremental: a document is added upstream; only its page is compiled, the others are carried over
        files = repository()
        files["product/faq/docs/invoices.md"] = b"# Invoices\n\nInvoices are issued monthly in euros.\n"
        git.commit(files)
        r = rest.post(f"/api/knowledge/sources/{source}/sync", json={})
        assert r.status_code == 201, r.text
        third = _compiled(rest, source, mode="incremental")
        assert third["mode"] == "incremental" and third["parent_build_id"] == first["id"]
        assert third["pages_reused"] >= 2 and third["output_tokens"] < first["output_tokens"]
        carried = {
            p["path"]: p
            for p in rest.get(f"/api/knowledge/builds/{third['id']}/pages", params={"limit": 100}).json()[
                "items"
            ]
        }
        assert carried["wiki/docs-refunds.md"]["derived_from_build_id"] == first["id"]
        assert carried["wiki/docs-invoices.md"]["derived_from_build_id"] is None
        diff = rest.get(f"/api/knowledge/builds/{third['id']}/diff", params={"from": first["id"]}).json()
        assert diff["from_build_id"] == first["id"] and [a["path"] for a in diff["added"]] == [
            "wiki/docs-invoices.md"
        ]
        assert _served_build(rest, source, "invoices monthly euros") == {third["id"]}
        # and every model call went to the endpoint the settings named (three compiles; a transport error under
        # load is retried by the job, so a fourth request is legitimate)
        assert len(fake.requests) in (3, 4) and all(
            r["authorization"] == "Bearer local-key" for r in fake.requests
        )
