"""The knowledge registry tools of /mcp/knowledge over real HTTP (official SDK client): the agent's loop (catalog
→ documents → one document, git sync), the same answers as REST, scopes, and tenant isolation of every registry
tool with another account's ids."""

from __future__ import annotations

import anyio
import pytest

from tests.integration.knowledge.corpus import loopback_git, repository, snapshot

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio


def seed(client, account, path="product/faq") -> dict:
    """A local source with one pushed package (via REST: the spec has no MCP push tool)."""
    h = account.headers("knowledge:rw")
    source = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": path},
        headers=h,
    ).json()
    pushed = client.post(
        f"/api/knowledge/sources/{source['id']}/snapshots", json={"files": snapshot(path)}, headers=h
    )
    assert pushed.status_code == 201, pushed.text
    revision = pushed.json()["revision"]["id"]
    docs = client.get(f"/api/knowledge/revisions/{revision}/documents", headers=h).json()["items"]
    return {"source_id": source["id"], "revision_id": revision, "document_id": docs[0]["id"]}


async def test_agent_finds_a_collection_and_reads_a_document(base_url, client, account):
    ids = seed(client, account)
    seed(client, account, "support/faq")
    h = account.headers("knowledge:r")
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:r")}) as s:
            catalog = await call(s, "knowledge_catalog_list", query="billing")
            assert (
                catalog == client.get("/api/knowledge/catalog", params={"query": "billing"}, headers=h).json()
            )
            assert [c["source_id"] for c in catalog["items"]] == [ids["source_id"]]
            assert catalog["domains"] == [
                {"domain": "product", "collections": 1},
                {"domain": "support", "collections": 1},
            ]
            zh = await call(s, "knowledge_catalog_list", domain="support")
            assert [c["languages"] for c in zh["items"]] == [["zh"]]
            card = catalog["items"][0]
            docs = await call(s, "knowledge_documents_list", revision_id=card["revision_id"], limit=2)
            assert (
                docs
                == client.get(
                    f"/api/knowledge/revisions/{card['revision_id']}/documents",
                    params={"limit": 2},
                    headers=h,
                ).json()
            )
            assert [d["path"] for d in docs["items"]] == ["docs/billing.md", "docs/refunds.md"] and docs[
                "total"
            ] == 3
            one = await call(
                s,
                "knowledge_document_get",
                revision_id=card["revision_id"],
                document_id=docs["items"][0]["id"],
            )
            assert one["content"].startswith("# Billing")
            sources = await call(s, "knowledge_sources_list")
            assert sources["total"] == 2
            assert "limit" in await refused(s, "knowledge_sources_list", limit=0)


async def test_sync_over_mcp_ingests_from_the_loopback_git_server(base_url, client, account, monkeypatch):
    with loopback_git(monkeypatch) as git:
        h = account.headers("knowledge:rw")
        src = client.post(
            "/api/knowledge/sources",
            json={
                "type": "git",
                "package_path": "support/faq",
                "repository_url": git.url("git.test", "acme/kb"),
            },
            headers=h,
        ).json()
        with anyio.fail_after(30):
            async with mcp_session(
                f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:rw")}
            ) as s:
                out = await call(s, "knowledge_source_sync", source_id=src["id"], ref="main")
                assert (out["created"], out["revision"]["commit_sha"]) == (True, git.main_sha)
                assert out["manifest"]["name"] == "客服常见问题"
                again = await call(s, "knowledge_source_sync", source_id=src["id"])
                assert (again["created"], again["revision"]["id"]) == (False, out["revision"]["id"])
                assert "ref" in await refused(s, "knowledge_source_sync", source_id=src["id"], ref="nope")


async def test_registry_tools_never_reach_another_accounts_ids(base_url, client, account, other_account):
    theirs = seed(client, other_account)
    mine = seed(client, account)
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:rw")}) as s:
            for name, args in (
                ("knowledge_documents_list", {"revision_id": theirs["revision_id"]}),
                (
                    "knowledge_document_get",
                    {"revision_id": theirs["revision_id"], "document_id": theirs["document_id"]},
                ),
                (
                    "knowledge_document_get",
                    {"revision_id": mine["revision_id"], "document_id": theirs["document_id"]},
                ),
                ("knowledge_source_sync", {"source_id": theirs["source_id"]}),
            ):
                message = await refused(s, name, **args)
                assert "not found" in message, (name, message)
                assert "Invoices" not in message
            listed = await call(s, "knowledge_sources_list")
            assert [x["id"] for x in listed["items"]] == [mine["source_id"]]
            catalog = await call(s, "knowledge_catalog_list")
            assert [c["source_id"] for c in catalog["items"]] == [mine["source_id"]]


async def test_a_read_only_key_cannot_sync(base_url, client, account):
    ids = seed(client, account)
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:r")}) as s:
            assert "knowledge:rw" in await refused(s, "knowledge_source_sync", source_id=ids["source_id"])
            assert (await call(s, "knowledge_catalog_list"))["total"] == 1


async def test_sync_with_index_true_indexes_and_search_says_when_it_is_stale(
    base_url, client, account, monkeypatch
):
    """Issue 23 item 2 over MCP: knowledge_source_sync(index=true) indexes the synced revision; a later sync
    without it leaves knowledge_search listing the source in stale until it is indexed."""
    with loopback_git(monkeypatch) as git:
        src = client.post(
            "/api/knowledge/sources",
            json={
                "type": "git",
                "package_path": "product/faq",
                "repository_url": git.url("git.test", "acme/kb"),
            },
            headers=account.headers("knowledge:rw"),
        ).json()
        with anyio.fail_after(60):
            async with mcp_session(
                f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:rw")}
            ) as s:
                out = await call(s, "knowledge_source_sync", source_id=src["id"], ref="main", index=True)
                assert out["index"]["items"][0]["revision_id"] == out["revision"]["id"]
                assert out["index"]["job"] is None
                found = await call(s, "knowledge_search", query="refund")
                assert found["stale"] == [] and found["items"]
                tree = {**repository(), "product/faq/docs/new.md": b"# New\n\nA refund policy change.\n"}
                git.commit(tree)
                plain = await call(s, "knowledge_source_sync", source_id=src["id"], ref="main")
                assert plain["created"] and plain["index"] is None
                found = await call(s, "knowledge_search", query="refund")
                assert [
                    (x["source_id"], x["active_revision_id"], x["indexed_revision_id"])
                    for x in found["stale"]
                ] == [(src["id"], plain["revision"]["id"], out["revision"]["id"])]
                # what to do about it names the MCP tool, not only the REST route
                tool = next(t for t in (await s.list_tools()).tools if t.name == "knowledge_search")
                assert "stale lists" in (tool.description or "")
                assert "knowledge_index_active" in (tool.description or "")
                assert "knowledge_index_active" in str(tool.output_schema)
                assert "index" in await refused(s, "knowledge_source_sync", source_id=src["id"], index="yes")
