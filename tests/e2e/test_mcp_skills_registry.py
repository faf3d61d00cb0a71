"""The skills registry tools of /mcp/skills over real HTTP (official SDK client): the agent loop, and tenant
isolation of every registry tool with another account's ids."""

from __future__ import annotations

import anyio
import pytest

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio

SKILL = """---
name: trip-planner
description: Plan multi-city trips with budgets
triggers: [plan a trip, travel itinerary]
capabilities: [itinerary]
---

# Trip planning

Ask for dates and budget first, then propose a day-by-day itinerary with costs per day.
"""


def seed(client, account) -> dict:
    """A local source with one pushed package (via REST: MCP has no push tool in the spec)."""
    h = account.headers("skills:rw")
    source = client.post(
        "/api/skills/sources",
        json={"type": "local", "repository_url": "file:///skills", "package_path": "travel/trip-planner"},
        headers=h,
    ).json()
    pushed = client.post(
        f"/api/skills/sources/{source['id']}/snapshots",
        json={
            "files": [
                {"path": "SKILL.md", "content": SKILL},
                {"path": "references/budget.md", "content": "Budget rules: keep 10% in reserve.\n"},
            ],
            "activate": True,
        },
        headers=h,
    )
    assert pushed.status_code == 201, pushed.text
    return {"source_id": source["id"], "version_id": pushed.json()["version"]["id"]}


async def test_agent_discovers_and_loads_a_skill_in_three_calls(base_url, client, account):
    ids = seed(client, account)
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:rw")}) as s:
            indexed = await call(s, "skill_index_active")
            assert indexed["indexed"] == 1
            compiled = await call(s, "skill_compile", skill_version_id=ids["version_id"])
            assert compiled["items"][0]["status"] == "compiled"
            catalog = await call(s, "skill_catalog_list", query="trip")
            assert [i["skill_name"] for i in catalog["items"]] == ["trip-planner"]
            # 1. search → 2. instructions → 3. one resource
            hits = await call(s, "skill_search", query="plan a trip with a budget")
            vid = hits["items"][0]["skill_version_id"]
            assert vid == ids["version_id"] and hits["items"][0]["instructions"] is None
            assert {"channels", "lexical_score", "vector_score", "lexical_matched"} <= set(hits["items"][0])
            strict = await call(s, "skill_search", query="plan a trip with a budget", min_similarity=1.0)
            assert strict["filtered_by_min_similarity"] + len(strict["items"]) == len(hits["items"])
            assert all(i["lexical_matched"] for i in strict["items"])
            l1 = await call(s, "skill_version_instructions", skill_version_id=vid)
            assert l1["instructions"].startswith("# Trip planning")
            manifest = await call(s, "skill_version_resources", skill_version_id=vid)
            ref = manifest["items"][0]
            res = await call(s, "skill_resource_get", skill_version_id=vid, file_id=ref["file_id"])
            assert res["content"].startswith("Budget rules")
            with_content = await call(s, "skill_search", query="itinerary", include_content=True)
            assert with_content["items"][0]["instructions"].startswith("# Trip planning")
            run = await call(s, "skill_quality_run", skill_version_id=vid)
            assert run["summary"]["blockers"] == 0 and run["summary"]["errors"] == 0
            again = await call(s, "skill_quality_get", run_id=run["id"])
            assert again["report"]["checkset"] == "phase4-contracts/1.1.0"
            # a local source is pushed, not synced
            assert "local source" in await refused(s, "skill_source_sync", source_id=ids["source_id"])


async def test_registry_tools_never_reach_another_accounts_ids(base_url, client, account, other_account):
    theirs = seed(client, other_account)
    h = other_account.headers("skills:rw")
    run = client.post(f"/api/skills/versions/{theirs['version_id']}/quality-runs", headers=h).json()
    resources = client.get(f"/api/skills/versions/{theirs['version_id']}/resources", headers=h).json()
    file_id = resources["items"][0]["file_id"]
    mine = seed(client, account)
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:rw")}) as s:
            vid = theirs["version_id"]
            for name, args in (
                ("skill_version_instructions", {"skill_version_id": vid}),
                ("skill_version_resources", {"skill_version_id": vid}),
                ("skill_resource_get", {"skill_version_id": vid, "file_id": file_id}),
                ("skill_resource_get", {"skill_version_id": mine["version_id"], "file_id": file_id}),
                ("skill_quality_run", {"skill_version_id": vid}),
                ("skill_quality_get", {"run_id": run["id"]}),
                ("skill_compile", {"skill_version_id": vid}),
                ("skill_source_sync", {"source_id": theirs["source_id"]}),
            ):
                message = await refused(s, name, **args)
                assert "not found" in message, (name, message)
                assert "Ask for dates" not in message and "Budget rules" not in message
            assert "unknown skill version" in await refused(
                s, "skill_quality_run", skill_version_id=mine["version_id"], baseline_version_id=vid
            )
            await call(s, "skill_index_active")
            catalog = await call(s, "skill_catalog_list")
            assert [i["skill_version_id"] for i in catalog["items"]] == [mine["version_id"]]
            hits = await call(s, "skill_search", query="plan a trip", include_content=True)
            assert {h["skill_version_id"] for h in hits["items"]} == {mine["version_id"]}
            compiled = await call(s, "skill_compile")
            assert [i["skill_version_id"] for i in compiled["items"]] == [mine["version_id"]]


async def test_read_only_key_cannot_call_registry_write_tools(base_url, client, account):
    ids = seed(client, account)
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:r")}) as s:
            for name, args in (
                ("skill_compile", {}),
                ("skill_index_active", {}),
                ("skill_quality_run", {"skill_version_id": ids["version_id"]}),
                ("skill_source_sync", {"source_id": ids["source_id"]}),
            ):
                assert "skills:rw" in await refused(s, name, **args), name
            assert (await call(s, "skill_catalog_list"))["total"] == 1


async def test_skill_compile_of_a_stored_hostile_version_reports_the_problem_not_an_internal_error(
    base_url, account, owner_url
):
    # Issue 20: a version stored before the fix with a value PyYAML's constructor refuses (2024-13-45)
    from tests.integration.test_hostile_yaml import skill, stored_version

    bad = stored_version(owner_url, account.account_id, "hostile", skill("description: 2024-13-45"))
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:rw")}) as s:
            one = await call(s, "skill_compile", skill_version_id=bad)
            assert one["items"][0]["status"] == "failed"
            assert one["items"][0]["problems"][0].startswith("description: is not a valid YAML timestamp")
            backfill = await call(s, "skill_compile")
            assert backfill["failed"] == 1 and backfill["items"][0]["skill_name"] == "hostile"


async def test_skill_search_names_what_an_unknown_argument_likely_meant(base_url, account):
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:r")}) as s:
            message = await refused(s, "skill_search", query="plan a trip", text="plan a trip")
            assert "text" in message and "query" in message, message
            message = await refused(s, "skill_search", query="plan a trip", k=3)
            assert "k" in message and "top_k" in message, message


async def test_publish_with_activate_over_mcp_says_why_a_version_that_does_not_compile_stays_inactive(
    base_url, account
):
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:rw")}) as s:
            out = await call(
                s,
                "skill_version_publish",
                skill_name="notes",
                version="1",
                content="# Notes\n",
                activate=True,
            )
            assert (out["activated"], out["is_active"], out["compile"]["status"]) == (False, False, "failed")
            assert "frontmatter" in out["not_activated_reason"]
            good = "---\nname: notes\ndescription: Take notes\n---\n# Notes\n"
            out = await call(
                s, "skill_version_publish", skill_name="notes", version="2", content=good, activate=True
            )
            assert (out["activated"], out["is_active"], out["not_activated_reason"]) == (True, True, None)


async def test_publish_with_index_over_mcp_is_searchable_warns_and_hints_body(base_url, account):
    typo = "---\nname: packer\ndescription: Pack luggage for a trip\ntrigers: [pack a bag]\n---\n# Pack\n"
    first = {"skill_name": "packer", "version": "1", "content": typo, "activate": True, "index": True}
    headers = {"X-Api-Key": account.key("skills:rw")}
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp/skills", headers) as s:
            # activate + index: indexed at once, and the misspelt key is a warning with the key it likely meant
            out = await call(s, "skill_version_publish", **first)
            assert out["index"]["status"] == "indexed" and out["not_indexed_reason"] is None, out
            assert any("did you mean triggers?" in w for w in out["compile"]["warnings"]), out
            hits = await call(s, "skill_search", query="pack luggage for a trip")
            assert [h["skill_name"] for h in hits["items"]] == ["packer"]
            # index without a compiling, active version: not indexed, and why
            out = await call(s, "skill_version_publish", **{**first, "version": "2", "content": "# P\n"})
            assert out["index"] is None and "compile" in out["not_indexed_reason"], out
            # body instead of content: the hint names content
            message = await refused(s, "skill_version_publish", **{**first, "version": "3", "body": typo})
            assert "body" in message and "the SKILL.md text is content" in message, message
