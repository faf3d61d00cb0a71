"""The wiki routes over REST (real Postgres, the local dispatcher app): compile 202/200/409/501, builds, pages,
page with links, diff, events, activate 409 and rollback, bad input, and tenant isolation of every route."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from agentmate.core.db import get_database
from agentmate.knowledge.wiki.compiler import CompileContext, compile_build
from tests.integration.wiki.corpus import MANIFEST, documents
from tests.integration.wiki.corpus import client as chat_client


@pytest.fixture
def compiler_configured(app, fake):
    """Serve this test's REST requests with a compiler pointed at the fake provider."""
    from fastapi import FastAPI

    from agentmate.api import deps
    from agentmate.llm.settings import get_model_settings as get_settings

    patched = get_settings().model_copy(
        update={"compiler_base_url": fake.base_url, "compiler_model": "fake-compiler"}
    )
    apps = [a for a in dict.fromkeys(a for _, a in app.table) if isinstance(a, FastAPI)]
    for fastapi_app in apps:
        fastapi_app.dependency_overrides[deps._model_settings] = lambda: patched
    yield patched
    for fastapi_app in apps:
        fastapi_app.dependency_overrides.pop(deps._model_settings, None)


def _source(http, h, name, n=3):
    src = http.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": f"kb/{name}"},
        headers=h,
    ).json()
    files = [{"path": "KNOWLEDGE.yaml", "content": MANIFEST}] + [
        {"path": p, "content": c} for p, c in documents(n).items()
    ]
    assert (
        http.post(
            f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h
        ).status_code
        == 201
    )
    return src["id"]


def _run(account, fake, build_id):
    c = chat_client(fake)
    try:
        return compile_build(
            get_database(), UUID(build_id), CompileContext(account_id=UUID(account.account_id)), client=c
        )
    finally:
        c.close()


def test_compile_queues_in_the_request_and_the_build_reads_back(client, account, fake, compiler_configured):
    http = client
    h = account.headers("knowledge:rw")
    src = _source(http, h, "rest")
    r = http.post("/api/knowledge/compile", json={"source_id": src}, headers=h)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["queued"] is True and body["build"]["status"] == "queued"
    assert any("check is the only gate" in w and "not been reviewed" in w for w in body["warnings"])
    build_id = body["build"]["id"]
    again = http.post("/api/knowledge/compile", json={"source_id": src}, headers=h)
    assert (again.status_code, again.json()["build"]["id"], again.json()["queued"]) == (200, build_id, False)
    assert _run(account, fake, build_id).status == "succeeded"

    got = http.get(f"/api/knowledge/builds/{build_id}", headers=h).json()
    assert (got["status"], got["check_status"], got["is_active"], got["cost_priced"]) == (
        "succeeded",
        "passed",
        True,
        False,
    )
    assert got["profile"]["name"] == "default" and got["profile"]["version"] == 1
    listed = http.get("/api/knowledge/builds", params={"source_id": src}, headers=h).json()
    assert [b["id"] for b in listed["items"]] == [build_id]
    pages = http.get(f"/api/knowledge/builds/{build_id}/pages", headers=h).json()
    assert pages["total"] == 6 and "content" not in pages["items"][0]
    page = http.get(f"/api/knowledge/builds/{build_id}/pages/wiki/docs-topic-01.md", headers=h)
    assert page.status_code == 200 and page.headers["cache-control"] == "private, no-store"
    assert page.json()["citations"][0]["document_path"] == "docs/topic-01.md"
    assert {x["path"] for x in page.json()["links_in"]} >= {"wiki/index.md"}
    log = http.get(f"/api/knowledge/builds/{build_id}/pages/wiki/log.md", headers=h).json()
    assert "build_succeeded" in log["content"]
    events = http.get(f"/api/knowledge/builds/{build_id}/events", headers=h).json()
    assert events["items"][0]["event_type"] == "build_queued"
    d = http.get(f"/api/knowledge/builds/{build_id}/diff", headers=h).json()
    assert d["from_build_id"] is None and len(d["added"]) == 6
    assert http.get(f"/api/knowledge/builds/{build_id}/pages/wiki/nope.md", headers=h).status_code == 404


def test_activate_is_the_rollback_and_refuses_a_failed_build(client, account, fake, compiler_configured):
    http = client
    h = account.headers("knowledge:rw")
    src = _source(http, h, "rest-rollback", 2)
    first = http.post("/api/knowledge/compile", json={"source_id": src}, headers=h).json()["build"]["id"]
    _run(account, fake, first)
    second = http.post("/api/knowledge/compile", json={"source_id": src, "force": True}, headers=h).json()
    _run(account, fake, second["build"]["id"])
    r = http.post(f"/api/knowledge/builds/{first}/activate", headers=h)
    body = r.json()
    assert r.status_code == 200 and {
        k: body[k] for k in ("source_id", "active_build_id", "previous_build_id")
    } == {"source_id": src, "active_build_id": first, "previous_build_id": second["build"]["id"]}
    # and the small build was re-indexed inline, so wiki search serves it at once
    assert (body["index"]["build_id"], body["index"]["status"], body["index_job"]) == (first, "indexed", None)
    status = http.get("/api/knowledge/wiki/index", params={"source_id": src}, headers=h).json()
    assert status["stale_count"] == 0 and status["items"][0]["indexed_build_id"] == first
    third = http.post("/api/knowledge/compile", json={"source_id": src, "force": True}, headers=h).json()
    fake.push("outside_link")
    _run(account, fake, third["build"]["id"])
    refused = http.post(f"/api/knowledge/builds/{third['build']['id']}/activate", headers=h)
    problem = refused.json()
    assert refused.status_code == 409 and problem["reason"] == "not_activatable"
    # issue 20: "status" is the HTTP status (RFC 9457), the build's own state is "build_status"
    assert (problem["status"], problem["build_status"], problem["check_status"]) == (409, "failed", "failed")


def test_incremental_refusal_is_409_naming_the_reason(client, account, fake, compiler_configured):
    http = client
    h = account.headers("knowledge:rw")
    src = _source(http, h, "rest-inc", 2)
    r = http.post("/api/knowledge/compile", json={"source_id": src, "mode": "incremental"}, headers=h)
    assert r.status_code == 409 and r.json()["reason"] == "no_parent"


def test_no_compiler_configured_is_501(client, account):
    h = account.headers("knowledge:rw")
    src = _source(client, h, "rest-501", 1)
    r = client.post("/api/knowledge/compile", json={"source_id": src}, headers=h)
    assert r.status_code == 501 and "COMPILER_BASE_URL" in r.json()["detail"]


@pytest.mark.parametrize(
    "body,field",
    [
        ({"source_id": "nope"}, "source_id"),
        ({}, "source_id"),
        ({"source_id": str(uuid4()), "mode": "partial"}, "mode"),
        ({"source_id": str(uuid4()), "build_id": "x"}, "build_id"),
        ({"source_id": str(uuid4()), "force": "yes"}, "force"),
    ],
)
def test_bad_compile_bodies_are_400_naming_the_field(client, account, body, field):
    r = client.post("/api/knowledge/compile", json=body, headers=account.headers("knowledge:rw"))
    assert r.status_code == 400 and field in [e["field"] for e in r.json()["errors"]]


def test_every_wiki_route_is_tenant_isolated(client, account, other_account, fake, compiler_configured):
    http = client
    h = account.headers("knowledge:rw")
    src = _source(http, h, "rest-tenant", 2)
    build = http.post("/api/knowledge/compile", json={"source_id": src}, headers=h).json()["build"]["id"]
    _run(account, fake, build)
    evil = other_account.headers("knowledge:rw")
    for method, path, body in [
        ("POST", "/api/knowledge/compile", {"source_id": src}),
        ("GET", f"/api/knowledge/builds/{build}", None),
        ("GET", f"/api/knowledge/builds/{build}/pages", None),
        ("GET", f"/api/knowledge/builds/{build}/pages/wiki/index.md", None),
        ("GET", f"/api/knowledge/builds/{build}/diff", None),
        ("GET", f"/api/knowledge/builds/{build}/events", None),
        ("POST", f"/api/knowledge/builds/{build}/activate", None),
        ("GET", f"/api/knowledge/builds?source_id={src}", None),
    ]:
        r = http.request(method, path, json=body, headers=evil)
        assert r.status_code == 404, (method, path, r.status_code)
    assert http.get("/api/knowledge/builds", headers=evil).json()["total"] == 0
    own = http.get(f"/api/knowledge/builds/{build}", headers=h).json()
    assert own["is_active"] is True


def test_wiki_index_and_search_over_rest(client, account, other_account, fake, compiler_configured):
    http = client
    h = account.headers("knowledge:rw")
    src = _source(http, h, "rest-wiki-search", 3)
    build = http.post("/api/knowledge/compile", json={"source_id": src}, headers=h).json()["build"]["id"]
    _run(account, fake, build)
    status = http.get("/api/knowledge/wiki/index", params={"source_id": src}, headers=h).json()
    assert (status["stale_count"], status["items"][0]["active_build_id"]) == (1, build)
    indexed = http.post("/api/knowledge/wiki/index", json={"source_id": src}, headers=h)
    assert indexed.status_code == 200 and indexed.json()["items"][0]["build_id"] == build
    r = http.post(
        "/api/knowledge/wiki/search", json={"query": "Topic 01 billing rule", "top_k": 3}, headers=h
    )
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
    body = r.json()
    assert body["items"] and body["items"][0]["build_id"] == build and body["stale"] == []
    assert {"citations", "links_out", "links_in", "matched_chunks"} <= set(body["items"][0])
    bad = http.post("/api/knowledge/wiki/search", json={"query": "", "top_k": 99}, headers=h)
    assert bad.status_code == 400 and {"query", "top_k"} <= {e["field"] for e in bad.json()["errors"]}
    evil = other_account.headers("knowledge:rw")
    assert (
        http.post("/api/knowledge/wiki/search", json={"query": "Topic 01 billing rule"}, headers=evil).json()[
            "items"
        ]
        == []
    )
    assert http.post("/api/knowledge/wiki/index", json={"source_id": src}, headers=evil).status_code == 404
    assert http.get("/api/knowledge/wiki/index", params={"source_id": src}, headers=evil).status_code == 404
