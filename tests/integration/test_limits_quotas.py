"""Stored-volume quotas (issue 25 §1): memories, working items and package bytes are refused with a 409 naming the
quota once a store would add past it; an idempotent replay (or a store that adds nothing: a deduplicated memory, a
package already stored) is never refused; a batch that would cross the quota is refused whole with nothing
stored; ``GET /api/auth/usage`` reports the same numbers the refusal counted."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import psycopg
import pytest
from mcp import Client

from agentmate.core.principal import Principal
from agentmate.mcp import registry
from agentmate.mcp.app import build_servers
from agentmate.mcp.context import acting_as

ENTRIES = "/api/memory/entries"
USAGE = "/api/auth/usage"


def _assert_quota(r: Any, quota: str, value: int, used: int) -> dict[str, Any]:
    assert r.status_code == 409, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = r.json()
    assert (body["limit"], body["limit_value"], body["used"]) == (f"max_{quota}", value, used)
    assert f"LIMIT_MAX_{quota.upper()}" in body["detail"]
    return body


def _count(owner_url: str, account: Any, table: str) -> int:
    assert table in (
        "memory_entries",
        "working_items",
        "knowledge_source_revisions",
        "skill_source_revisions",
    )
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            f"SELECT count(*) FROM {table} WHERE account_id = %(a)s", {"a": account.account_id}
        ).fetchone()
    assert row is not None
    return int(row[0])


# --- memories ---------------------------------------------------------------------------------------------------


def _memory(content: str) -> dict[str, Any]:
    return {
        "memory_type": "semantic",
        "content": content,
        "evidence": [{"source_type": "t", "source_id": "1"}],
    }


def test_a_memory_past_the_quota_is_refused_but_a_replay_and_a_duplicate_are_not(
    client, account, owner_url, set_limits
):
    # Given a quota of two memories, both used (the second under an idempotency key)
    h = account.headers("memory:rw")
    set_limits(max_memories=2)
    assert client.post(ENTRIES, json=_memory("one"), headers=h).status_code == 201
    keyed = {**h, "Idempotency-Key": "m2"}
    assert client.post(ENTRIES, json=_memory("two"), headers=keyed).status_code == 201
    # When a third memory is stored
    r = client.post(ENTRIES, json=_memory("three"), headers=h)
    # Then it is refused naming the quota, and nothing was stored
    _assert_quota(r, "memories", 2, 2)
    assert _count(owner_url, account, "memory_entries") == 2
    # And a replay of the second, and a store deduplicated onto the first, still answer (they add no row)
    replay = client.post(ENTRIES, json=_memory("two"), headers=keyed)
    assert replay.status_code == 201 and replay.headers["Idempotent-Replay"] == "true", replay.text
    dup = client.post(ENTRIES, json=_memory("one"), headers=h)
    assert dup.status_code == 200 and dup.json()["deduplicated"] is True, dup.text
    # And usage reports the numbers the refusal counted
    assert client.get(USAGE, headers=h).json()["memories"] == {"used": 2, "limit": 2}


def test_deleting_a_memory_makes_room_again(client, account, set_limits):
    h = account.headers("memory:rw")
    set_limits(max_memories=1)
    first = client.post(ENTRIES, json=_memory("one"), headers=h)
    assert first.status_code == 201
    _assert_quota(client.post(ENTRIES, json=_memory("two"), headers=h), "memories", 1, 1)
    assert client.delete(f"{ENTRIES}/{first.json()['id']}", headers=h).status_code == 200
    assert client.post(ENTRIES, json=_memory("two"), headers=h).status_code == 201


# --- working items ----------------------------------------------------------------------------------------------


def _session(client: Any, h: dict[str, str]) -> str:
    r = client.post("/api/memory/working/sessions", json={}, headers=h)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _items(*keys: str) -> dict[str, Any]:
    return {
        "items": [{"item_type": "message", "role": "user", "content": k, "idempotency_key": k} for k in keys]
    }


def test_a_working_batch_that_would_cross_the_quota_is_refused_whole(client, account, owner_url, set_limits):
    # Given a quota of three working items, two used
    h = account.headers("memory:rw")
    set_limits(max_working_items=3)
    items = f"/api/memory/working/sessions/{_session(client, h)}/items"
    assert client.post(items, json=_items("a", "b"), headers=h).status_code in (200, 201)
    # When a batch of two would make four
    r = client.post(items, json=_items("c", "d"), headers=h)
    # Then the whole batch is refused and none of it is stored
    body = _assert_quota(r, "working_items", 3, 2)
    assert "2 new" in body["detail"]
    assert _count(owner_url, account, "working_items") == 2
    # And one more fits, after which a replay of every stored item still answers
    assert client.post(items, json=_items("c"), headers=h).status_code in (200, 201)
    replay = client.post(items, json=_items("a", "b", "c"), headers=h)
    assert replay.status_code in (200, 201), replay.text
    assert replay.json()["replayed_count"] == 3
    # But a batch mixing replays with one new item is refused at the limit
    _assert_quota(client.post(items, json=_items("a", "e"), headers=h), "working_items", 3, 3)
    assert _count(owner_url, account, "working_items") == 3
    assert client.get(USAGE, headers=h).json()["working_items"] == {"used": 3, "limit": 3}


def test_the_counters_follow_deletes_cascades_and_rollbacks(client, account, owner_url, set_limits):
    # Given working items in two sessions and memories, one of them deleted
    h = account.headers("memory:rw")
    set_limits(max_working_items=4, max_memories=5)
    one, two = _session(client, h), _session(client, h)
    assert client.post(
        f"/api/memory/working/sessions/{one}/items", json=_items("a", "b"), headers=h
    ).is_success
    assert client.post(
        f"/api/memory/working/sessions/{two}/items", json=_items("c", "d"), headers=h
    ).is_success
    _assert_quota(
        client.post(f"/api/memory/working/sessions/{two}/items", json=_items("e"), headers=h),
        "working_items",
        4,
        4,
    )
    # When a session is deleted (its items go with it)
    assert client.delete(f"/api/memory/working/sessions/{one}", headers=h).status_code == 200
    # Then its items' room is free again, and a refused (rolled back) batch counted nothing
    assert client.post(f"/api/memory/working/sessions/{two}/items", json=_items("e"), headers=h).is_success
    ids = [client.post(ENTRIES, json=_memory(f"m{i}"), headers=h).json()["id"] for i in range(3)]
    assert client.delete(f"{ENTRIES}/{ids[0]}", headers=h).status_code == 200
    usage = client.get(USAGE, headers=h).json()
    assert usage["working_items"]["used"] == _count(owner_url, account, "working_items") == 3
    assert usage["memories"]["used"] == _count(owner_url, account, "memory_entries") == 2


# --- package bytes ----------------------------------------------------------------------------------------------


def _local_source(client: Any, h: dict[str, str], kind: str, path: str) -> str:
    body = {"type": "local", "repository_url": f"file:///{kind}", "package_path": path}
    r = client.post(f"/api/{kind}/sources", json=body, headers=h)
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


def _push(client: Any, h: dict[str, str], kind: str, source_id: str, files: list[dict[str, str]]) -> Any:
    return client.post(f"/api/{kind}/sources/{source_id}/snapshots", json={"files": files}, headers=h)


KB_FILES = [
    {"path": "KNOWLEDGE.yaml", "content": "name: quota-kb\n"},
    {"path": "a.md", "content": "# A\n\nSome text about quotas.\n"},
]
SKILL_FILES = [
    {
        "path": "SKILL.md",
        "content": "---\nname: quota-skill\ndescription: Counts bytes.\n---\n# Quota skill\n",
    }
]


def test_a_package_past_the_byte_quota_is_refused_but_the_same_package_again_is_not(
    client, account, owner_url, set_limits
):
    # Given a knowledge package stored, and a byte quota at exactly what it takes
    h = account.headers("knowledge:rw", "skills:rw")
    kb = _local_source(client, h, "knowledge", "quota/kb")
    assert _push(client, h, "knowledge", kb, KB_FILES).status_code in (200, 201)
    stored = client.get(USAGE, headers=h).json()["package_bytes"]["used"]
    assert stored > 0
    set_limits(max_package_bytes=stored)
    # When the same package is pushed again, it adds nothing: answered
    again = _push(client, h, "knowledge", kb, KB_FILES)
    assert again.status_code in (200, 201), again.text
    # When a changed knowledge package or any skill package is pushed
    changed = [*KB_FILES, {"path": "b.md", "content": "# B\n"}]
    refused_kb = _push(client, h, "knowledge", kb, changed)
    skill = _local_source(client, h, "skills", "quota/skill")
    refused_skill = _push(client, h, "skills", skill, SKILL_FILES)
    # Then each is refused naming the quota, and no revision was stored
    for r in (refused_kb, refused_skill):
        body = _assert_quota(r, "package_bytes", stored, stored)
        assert "bytes" in body["detail"]
    assert _count(owner_url, account, "knowledge_source_revisions") == 1
    assert _count(owner_url, account, "skill_source_revisions") == 0
    assert client.get(USAGE, headers=h).json()["package_bytes"] == {"used": stored, "limit": stored}


def test_a_package_bigger_than_the_room_left_is_refused_though_the_account_is_under_the_quota(
    client, account, set_limits
):
    h = account.headers("knowledge:rw")
    set_limits(max_package_bytes=10)  # less than the package: even the first push would cross it
    kb = _local_source(client, h, "knowledge", "quota/big")
    _assert_quota(_push(client, h, "knowledge", kb, KB_FILES), "package_bytes", 10, 0)


# --- MCP --------------------------------------------------------------------------------------------------------

SERVERS = build_servers(registry.load())


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_mcp_a_store_past_the_quota_is_a_tool_error_naming_it(account, set_limits, anyio_backend):
    set_limits(max_memories=1, max_working_items=1, requests_per_minute=0)
    principal = Principal(
        account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt", role="member"
    )
    evidence = [{"source_type": "t", "source_id": "1"}]
    with anyio.fail_after(30), acting_as(principal):
        async with Client(SERVERS["/mcp/memory"]) as mcp:
            first = await mcp.call_tool(
                "memory_store", {"memory_type": "semantic", "content": "one", "evidence": evidence}
            )
            second = await mcp.call_tool(
                "memory_store", {"memory_type": "semantic", "content": "two", "evidence": evidence}
            )
            session = await mcp.call_tool("memory_working_session_create", {})
            sid = session.structured_content["id"] if session.structured_content else None
            batch = [
                {"item_type": "message", "role": "user", "content": k, "idempotency_key": k} for k in "ab"
            ]
            crossing = await mcp.call_tool("memory_working_append", {"session_id": sid, "items": batch})
    assert not first.is_error, first.content
    assert second.is_error and "max_memories" in second.content[0].text
    assert "LIMIT_MAX_MEMORIES" in second.content[0].text
    assert crossing.is_error and "max_working_items" in crossing.content[0].text
