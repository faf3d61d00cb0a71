"""The unscripted task from issue 10 — "persist what I learn across sessions and pick up where I left off after a
crash" — done with nothing but what the served guide (GET /api/guide) describes, over REST (real HTTP on loopback)
and over MCP (the official client). The second "process" knows only the scope it works in: not its session id."""

from __future__ import annotations

import json
import urllib.request
import uuid
from typing import Any

import anyio
import pytest

from .conftest import mcp_session

SCOPE = {"scope_type": "repository", "scope_key": "octo/widgets"}


def _http(base: str, method: str, path: str, key: str | None = None, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method)
    if key:
        req.add_header("X-Api-Key", key)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read().decode()
            return r.status, (json.loads(raw) if r.headers.get_content_type() == "application/json" else raw)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read().decode() or "null")


def _guide(base: str) -> str:
    status, text = _http(base, "GET", "/api/guide")
    assert status == 200
    # What the agent relies on below is in the served guide
    for needle in (
        "/api/memory/journal/sessions",
        "/api/memory/resume?scope_type=",
        "memory_journal_sessions",
        "memory_resume",
        "deduplicated",
        "nearest_scopes",
        "Scope keys are exact",
    ):
        assert needle in text, needle
    return text


def test_persist_and_resume_after_a_crash_over_rest(base_url, account):
    key = account.key("memory:rw")
    _guide(base_url)
    # Process 1: a session of its own, events and a memory in the repository scope, then a checkpoint
    session = f"task-{uuid.uuid4()}"
    status, event = _http(
        base_url,
        "POST",
        "/api/memory/events",
        key,
        {
            "event_type": "decision",
            "idempotency_key": f"{session}:decision:1",
            "session_id": session,
            "payload": {"text": "widgets build with make, not cmake"},
            **SCOPE,
        },
    )
    assert status == 201, event
    memory = {
        "memory_type": "procedural",
        "content": "Build widgets with `make`; cmake is not supported.",
        "source_event_id": event["id"],
        **SCOPE,
    }
    status, entry = _http(base_url, "POST", "/api/memory/entries", key, memory)
    assert status == 201, entry
    status, _ = _http(
        base_url,
        "POST",
        "/api/memory/checkpoints",
        key,
        {
            "session_id": session,
            "goal": "port the build to make",
            "done": ["decided on make"],
            "next": ["delete CMakeLists.txt"],
            "label": "after-decision",
            **SCOPE,
        },
    )
    assert status == 201
    # The retry after a lost response (no Idempotency-Key) stores nothing twice
    status, again = _http(base_url, "POST", "/api/memory/entries", key, memory)
    assert status == 200 and again["deduplicated"] is True and again["id"] == entry["id"]
    del session  # crash: the session id is gone

    # Process 2: a wrong scope key says which one exists
    status, found = _http(
        base_url, "GET", "/api/memory/resume?scope_type=repository&scope_key=Octo/Widgets/", key
    )
    assert status == 200 and found["resolution"] == "empty" and found["nearest_scopes"] == [SCOPE]
    status, sessions = _http(
        base_url, "GET", "/api/memory/journal/sessions?scope_type=repository&scope_key=octo/widgets", key
    )
    assert status == 200 and sessions["total"] == 1
    assert sessions["items"][0]["latest_checkpoint_label"] == "after-decision"
    status, resumed = _http(
        base_url, "GET", "/api/memory/resume?scope_type=repository&scope_key=octo/widgets", key
    )
    assert status == 200 and resumed["selected_by"] == "scope"
    assert resumed["session_id"] == sessions["items"][0]["session_id"]
    assert resumed["resolution"] == "checkpoint" and resumed["checkpoint"]["next"] == [
        "delete CMakeLists.txt"
    ]
    # ...and what it learnt is recalled in that scope
    status, recalled = _http(
        base_url, "POST", "/api/memory/search", key, {"query": "how to build widgets", **SCOPE}
    )
    assert status == 200 and [i["entry"]["id"] for i in recalled["items"]] == [entry["id"]]


@pytest.mark.anyio
async def test_persist_and_resume_after_a_crash_over_mcp(base_url, account):
    key = account.key("memory:rw")
    _guide(base_url)
    url = f"{base_url}/mcp/memory"
    session = f"task-{uuid.uuid4()}"
    with anyio.fail_after(60):
        async with mcp_session(url, {"X-Api-Key": key}) as s:
            r = await s.call_tool(
                "memory_record",
                {
                    "event_type": "observation",
                    "idempotency_key": f"{session}:obs:1",
                    "session_id": session,
                    "payload": {"text": "the CI cache key must include the lockfile hash"},
                    **SCOPE,
                },
            )
            assert not r.is_error, r
            event_id = r.structured_content["id"]
            r = await s.call_tool(
                "memory_store",
                {
                    "memory_type": "semantic",
                    "content": "The CI cache key includes the lockfile hash.",
                    "source_event_id": event_id,
                    **SCOPE,
                },
            )
            assert not r.is_error and r.structured_content["deduplicated"] is False
            entry_id = r.structured_content["id"]
            r = await s.call_tool(
                "memory_checkpoint_save",
                {
                    "session_id": session,
                    "goal": "speed up CI",
                    "next": ["measure the cache hit rate"],
                    "label": "cache-key",
                    **SCOPE,
                },
            )
            assert not r.is_error
        del session  # crash

        async with mcp_session(url, {"X-Api-Key": key}) as s:
            r = await s.call_tool("memory_scopes", {})
            assert not r.is_error and SCOPE in [
                {k: i[k] for k in SCOPE} for i in r.structured_content["items"]
            ]
            r = await s.call_tool("memory_journal_sessions", SCOPE)
            assert not r.is_error and r.structured_content["total"] == 1
            found_session = r.structured_content["items"][0]["session_id"]
            r = await s.call_tool("memory_resume", SCOPE)
            assert not r.is_error
            resumed = r.structured_content
            assert resumed["session_id"] == found_session and resumed["selected_by"] == "scope"
            assert resumed["resolution"] == "checkpoint"
            assert resumed["checkpoint"]["next"] == ["measure the cache hit rate"]
            r = await s.call_tool("memory_events_list", {"session_id": found_session})
            assert not r.is_error and [e["id"] for e in r.structured_content["items"]][-1] == event_id
            r = await s.call_tool("memory_search", {"query": "CI cache key lockfile", **SCOPE})
            assert not r.is_error and [i["entry"]["id"] for i in r.structured_content["items"]] == [entry_id]
            # and a wrong memory can be retired, then forgotten
            r = await s.call_tool(
                "memory_update", {"id": entry_id, "status": "invalidated", "reason": "wrong"}
            )
            assert not r.is_error and r.structured_content["entry"]["status"] == "invalidated"
            r = await s.call_tool("memory_delete", {"id": entry_id})
            assert not r.is_error and r.structured_content["deleted"] is True
