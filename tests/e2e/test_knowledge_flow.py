"""The whole knowledge flow as a new user runs it against the local runtime (issue 12 "Done when"): register a git
source → sync it from the loopback git server → index → find it in the catalog → search with citations →
discover for a skill → record the resolution; over MCP with the official client where spec/001 has a tool, over
REST (real HTTP) where it has none (registering a source, publishing a skill)."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest

from tests.integration.knowledge.corpus import loopback_git

from .conftest import mcp_session
from .test_mcp_modules import call

pytestmark = pytest.mark.anyio

CONTRACT = {
    "requirements": [
        {
            "id": "refund-rules",
            "purpose": "The refund rules to cite",
            "required": True,
            "match": {"capabilities": ["refunds"], "languages": ["en"]},
            "retrieval": {"max_knowledge_bases": 1, "top_k_per_base": 3},
        }
    ]
}
SKILL = (
    f"---\nname: refund-helper\ndescription: Answer refund questions\nknowledge: {json.dumps(CONTRACT)}\n---\n"
    "# Refunds\nCite the refund policy.\n"
)


async def test_register_sync_index_catalog_search_discover_and_record(base_url, account, monkeypatch):
    key = account.key("knowledge:rw", "skills:rw")
    h = {"X-Api-Key": key}
    with loopback_git(monkeypatch) as git, anyio.fail_after(90):
        async with httpx.AsyncClient(base_url=base_url, headers=h) as rest:
            # 1. Register the English collection of the corpus as a git source (REST: no MCP tool)
            r = await rest.post(
                "/api/knowledge/sources",
                json={
                    "type": "git",
                    "repository_url": git.url("git.test", "acme/kb"),
                    "package_path": "product/faq",
                    "default_ref": "main",
                },
            )
            assert r.status_code == 201, r.text
            source = r.json()
            r = await rest.post(
                "/api/skills/versions",
                json={"skill_name": "refund-helper", "version": "1", "content": SKILL, "activate": True},
            )
            assert r.status_code == 201, r.text
            skill_version = r.json()["id"]
        async with mcp_session(f"{base_url}/mcp/knowledge", h) as s:
            # 2. Sync main to an immutable commit
            synced = await call(s, "knowledge_source_sync", source_id=source["id"])
            assert synced["revision"]["commit_sha"] == git.main_sha and synced["created"] is True
            # 3. Index the active revision
            indexed = await call(s, "knowledge_index_active", source_id=source["id"])
            assert indexed["indexed"] == 1
            # 4. Find the collection in the catalog
            catalog = await call(s, "knowledge_catalog_list", query="refund", domain="product")
            card = catalog["items"][0]
            assert (card["source_id"], card["index_status"], card["document_count"]) == (
                source["id"],
                "indexed",
                3,
            )
            # 5. Search it; each hit is a citation into the revision
            found = await call(
                s, "knowledge_search", query="when are refunds paid back", source_ids=[source["id"]]
            )
            hit = found["items"][0]
            assert hit["path"] == "docs/refunds.md" and hit["revision_id"] == card["revision_id"]
            assert hit["citation"].startswith("docs/refunds.md") and found["query_id"]
            doc = await call(
                s, "knowledge_document_get", revision_id=hit["revision_id"], document_id=hit["document_id"]
            )
            assert "original card" in doc["content"]
            # 6. Discover knowledge for the skill's contract
            discovered = await call(s, "knowledge_discover", skill_version_id=skill_version)
            requirement = discovered["requirements"][0]
            assert requirement["status"] == "matched"
            assert [c["source_id"] for c in requirement["candidates"]] == [source["id"]]
            # 7. Record what the execution selected and cited
            run = await call(
                s,
                "knowledge_resolution_record",
                skill_version_id=skill_version,
                requirement_id="refund-rules",
                discovery_status="matched",
                discovery_fingerprint=discovered["discovery_fingerprint"],
                selected=[{"source_id": source["id"], "revision_id": card["revision_id"]}],
                retrieved=[
                    {
                        "source_id": source["id"],
                        "document_id": hit["document_id"],
                        "path": hit["path"],
                        "query_id": found["query_id"],
                        "score": hit["score"],
                    }
                ],
                citations=[
                    {"source_id": source["id"], "document_id": hit["document_id"], "path": hit["path"]}
                ],
            )
            assert run["fingerprint_current"] is True
            runs = await call(s, "knowledge_resolutions_list", source_id=source["id"])
            assert [r["id"] for r in runs["items"]] == [run["id"]]
