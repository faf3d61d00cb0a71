"""The K4 tools of /mcp/knowledge over real HTTP (official SDK client): discover → record → list → get, both
scopes of the double-scoped tools, and tenant isolation with another account's ids."""

from __future__ import annotations

import uuid

import anyio
import pytest

from tests.integration.knowledge.k4 import knowledge_base, requirement, skill_version

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio

BILLING = "name: Billing FAQ\ncapabilities: [billing]\nlanguages: [en]\n"
CONTRACT = {"requirements": [requirement(match={"capabilities": ["billing"]})]}


async def test_agent_discovers_records_and_reads_back_a_resolution(base_url, client, account):
    kb = knowledge_base(account, "product/billing", BILLING)
    vid = skill_version(client, account, CONTRACT)
    key = account.key("knowledge:rw", "skills:r")
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": key}) as s:
            found = await call(s, "knowledge_discover", skill_version_id=vid)
            (req,) = found["requirements"]
            assert (req["status"], req["candidates"][0]["source_id"]) == ("matched", kb["source_id"])
            args = {
                "skill_version_id": vid,
                "requirement_id": "billing-docs",
                "discovery_fingerprint": found["discovery_fingerprint"],
                "discovery_status": "matched",
                "selected": [{"source_id": kb["source_id"]}],
                "citations": [{"source_id": kb["source_id"], "path": "docs/a.md"}],
                "idempotency_key": "mcp-run-1",
            }
            run = await call(s, "knowledge_resolution_record", **args)
            assert (
                run["fingerprint_current"] is True and run["selected"][0]["revision_id"] == kb["revision_id"]
            )
            assert (await call(s, "knowledge_resolution_record", **args))["id"] == run["id"]
            assert "idempotency key" in await refused(
                s, "knowledge_resolution_record", **{**args, "confidence": 0.1}
            )
            listed = await call(s, "knowledge_resolutions_list", source_id=kb["source_id"])
            assert [(i["id"], i["citation_count"]) for i in listed["items"]] == [(run["id"], 1)]
            assert await call(s, "knowledge_resolution_get", run_id=run["id"]) == run
            message = await refused(
                s,
                "knowledge_resolution_record",
                **{**args, "idempotency_key": None, "requirement_id": "other"},
            )
            assert "requirement_id" in message and "billing-docs" in message
            message = await refused(
                s,
                "knowledge_resolution_record",
                **{**args, "idempotency_key": None, "retrieved": [{"path": "a.md", "content": "body"}]},
            )
            assert "content" in message and "never bodies" in message


async def test_each_missing_scope_of_the_double_scoped_tools_is_refused(base_url, client, account):
    vid = skill_version(client, account, CONTRACT)
    fp = "0" * 64
    record = {
        "skill_version_id": vid,
        "requirement_id": "billing-docs",
        "discovery_fingerprint": fp,
        "discovery_status": "no_authorized_knowledge",
    }
    with anyio.fail_after(30):
        for scopes, tool, args, missing in (
            (("knowledge:r",), "knowledge_discover", {"skill_version_id": vid}, "skills:r"),
            (("skills:r",), "knowledge_discover", {"skill_version_id": vid}, "knowledge:r"),
            (("knowledge:rw",), "knowledge_resolution_record", record, "skills:r"),
            (("knowledge:r", "skills:r"), "knowledge_resolution_record", record, "knowledge:rw"),
            (("skills:r",), "knowledge_resolutions_list", {}, "knowledge:r"),
        ):
            async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key(*scopes)}) as s:
                message = await refused(s, tool, **args)
                assert "insufficient scope" in message and missing in message, (scopes, tool, message)
        async with mcp_session(f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:r")}) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            assert {
                "knowledge_discover",
                "knowledge_resolution_record",
                "knowledge_resolutions_list",
            } <= names
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("knowledge:r")}) as s:
            names = {
                t.name for t in (await s.list_tools()).tools
            }  # the aggregate lists only what the key may call
            assert "knowledge_resolutions_list" in names and "knowledge_discover" not in names


async def test_discovery_tools_never_reach_another_accounts_ids(base_url, client, account, other_account):
    theirs_kb = knowledge_base(other_account, "product/billing", BILLING)
    theirs_vid = skill_version(client, other_account, CONTRACT)
    out = client.post(
        "/api/knowledge/discover",
        json={"skill_version_id": theirs_vid},
        headers=other_account.headers("knowledge:r", "skills:r"),
    ).json()
    theirs_run = client.post(
        "/api/knowledge/resolutions",
        json={
            "skill_version_id": theirs_vid,
            "requirement_id": "billing-docs",
            "discovery_status": "matched",
            "discovery_fingerprint": out["discovery_fingerprint"],
            "selected": [{"source_id": theirs_kb["source_id"]}],
        },
        headers=other_account.headers("knowledge:rw", "skills:r"),
    ).json()
    mine_vid = skill_version(client, account, CONTRACT)
    with anyio.fail_after(30):
        async with mcp_session(
            f"{base_url}/mcp/knowledge", {"X-Api-Key": account.key("knowledge:rw", "skills:r")}
        ) as s:
            assert "unknown skill version" in await refused(
                s, "knowledge_discover", skill_version_id=theirs_vid
            )
            assert "not found" in await refused(s, "knowledge_resolution_get", run_id=theirs_run["id"])
            message = await refused(
                s,
                "knowledge_resolution_record",
                skill_version_id=mine_vid,
                requirement_id="billing-docs",
                discovery_fingerprint="0" * 64,
                discovery_status="matched",
                selected=[{"source_id": theirs_kb["source_id"]}],
            )
            assert "unknown knowledge source" in message
            # My discovery sees none of their collections; their runs are not listed under any filter
            mine = await call(s, "knowledge_discover", skill_version_id=mine_vid)
            assert (mine["catalog_size"], mine["requirements"][0]["status"]) == (0, "no_authorized_knowledge")
            for args in ({}, {"source_id": theirs_kb["source_id"]}, {"skill_version_id": theirs_vid}):
                assert (await call(s, "knowledge_resolutions_list", **args))["total"] == 0
            assert "not found" in await refused(s, "knowledge_resolution_get", run_id=str(uuid.uuid4()))
