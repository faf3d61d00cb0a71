"""Every /mcp/memory tool over real HTTP: journal, durable memories, search, feedback, supersede, checkpoints,
attribution and working memory (official SDK client, uvicorn on loopback)."""

from __future__ import annotations

import uuid

import anyio
import pytest

from .conftest import mcp_session
from .test_mcp_modules import call, refused

pytestmark = pytest.mark.anyio


async def test_journal_durable_memory_search_feedback_and_supersede(base_url, account):
    session = f"s-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("memory:rw", "skills:rw")}) as s:
            version = await call(
                s, "skill_version_publish", skill_name="prefs", version="1", content="# prefs", activate=True
            )
            # Journal: idempotent events, strict arguments with hints
            event = await call(
                s,
                "memory_record",
                event_type="observation",
                idempotency_key="e-1",
                payload={"text": "the user prefers dark mode"},
                session_id=session,
                skill_version_id=version["id"],
            )
            assert event["created"] is True and event["skill_version_id"] == version["id"]
            replay = await call(
                s,
                "memory_record",
                event_type="observation",
                idempotency_key="e-1",
                payload={"text": "the user prefers dark mode"},
                session_id=session,
                skill_version_id=version["id"],
            )
            assert replay["created"] is False and replay["id"] == event["id"]
            assert (
                "idempotency"
                in (
                    await refused(
                        s,
                        "memory_record",
                        event_type="observation",
                        idempotency_key="e-1",
                        payload={"text": "other"},
                        session_id=session,
                    )
                ).lower()
            )
            misplaced = await refused(
                s, "memory_record", event_type="note", idempotency_key="e-2", content="x"
            )
            assert "content: unknown field (event content belongs inside payload)" in misplaced
            assert "event_type" in await refused(
                s, "memory_record", event_type="thought", idempotency_key="e-3"
            )

            # Durable memories need provenance
            entry = await call(
                s,
                "memory_store",
                memory_type="semantic",
                content="The user prefers dark mode",
                source_event_id=event["id"],
                scope_type="project",
                scope_key="agentmate",
                importance=0.9,
            )
            assert entry["status"] == "active" and entry["indexing"]["status"] == "indexed"
            assert "evidence" in await refused(s, "memory_store", memory_type="semantic", content="no source")
            bad_evidence = await refused(
                s,
                "memory_store",
                memory_type="semantic",
                content="x",
                evidence=[{"kind": "url", "source_id": "https://example.com"}],
            )
            assert "evidence[0].kind: unknown field (evidence uses source_type/source_id)" in bad_evidence
            newer = await call(
                s,
                "memory_store",
                memory_type="semantic",
                content="The user prefers dark mode, except in the morning",
                evidence=[
                    {
                        "source_type": "url",
                        "source_id": "https://example.com/chat/1",
                        "excerpt": "light theme before noon",
                    }
                ],
                scope_type="project",
                scope_key="agentmate",
            )
            assert newer["evidence"][0]["source_type"] == "url"

            got = await call(s, "memory_get", id=entry["id"])
            assert got["content"] == entry["content"] and got["source_event_id"] == event["id"]
            found = await call(
                s, "memory_search", query="dark mode", scope_type="project", scope_key="agentmate"
            )
            assert {item["entry"]["id"] for item in found["items"]} == {entry["id"], newer["id"]}
            assert all(item["hit_reason"] for item in found["items"])
            assert "scope_key" in await refused(s, "memory_search", query="dark", scope_key="agentmate")
            assert "use top_k" in await refused(s, "memory_search", query="dark", limit=3)

            # Attribution and timeline trace the skill run
            attribution = await call(s, "memory_attribution", id=entry["id"])
            assert attribution["resolution"] == "skill_version" and attribution["skill_name"] == "prefs"
            timeline = await call(s, "memory_timeline", session_id=session)
            assert timeline["memory_event_count"] == 1 and timeline["items"][0]["id"] == event["id"]
            assert "session_id" in await refused(s, "memory_timeline")

            # Feedback: one signal of each kind per memory per session
            useful = await call(
                s,
                "memory_feedback",
                id=entry["id"],
                signal="useful",
                session_id=session,
                reason="applied the theme",
            )
            assert useful["created"] is True and useful["entry"]["useful_count"] == 1
            again = await call(s, "memory_feedback", id=entry["id"], signal="useful", session_id=session)
            assert again["created"] is False
            assert "allowed: useful, harmful" in await refused(
                s, "memory_feedback", id=entry["id"], signal="meh"
            )
            assert (await call(s, "memory_feedback_list", id=entry["id"]))["total"] == 1

            # Supersede: the newer memory replaces the older one, which leaves search
            replaced = await call(s, "memory_supersede", id=newer["id"], superseded_id=entry["id"])
            assert replaced["superseded"]["status"] == "superseded" and replaced["created"] is True
            assert (await call(s, "memory_supersede", id=newer["id"], superseded_id=entry["id"]))[
                "created"
            ] is False
            assert "cycle" in await refused(s, "memory_supersede", id=entry["id"], superseded_id=newer["id"])
            after = await call(s, "memory_search", query="dark mode")
            assert entry["id"] not in {item["entry"]["id"] for item in after["items"]}
            missing = str(uuid.uuid4())
            assert await refused(s, "memory_get", id=missing) == "memory entry not found"


async def test_checkpoints_and_resume(base_url, account):
    session = f"s-{uuid.uuid4().hex[:8]}"
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": account.key("memory:rw")}) as s:
            assert (await call(s, "memory_resume", session_id=session))["resolution"] == "empty"
            saved = await call(
                s,
                "memory_checkpoint_save",
                session_id=session,
                goal="ship MCP",
                done=["tools"],
                next=["benchmarks"],
                open=["session ids?"],
                label="midway",
            )
            assert saved["created"] is True and saved["checkpoint"]["next"] == ["benchmarks"]
            same = await call(
                s,
                "memory_checkpoint_save",
                session_id=session,
                goal="ship MCP",
                done=["tools"],
                next=["benchmarks"],
                open=["session ids?"],
                label="midway",
            )
            assert same["created"] is False
            assert "use done" in await refused(
                s, "memory_checkpoint_save", session_id=session, goal="x", completed=["a"]
            )
            await call(
                s,
                "memory_record",
                event_type="action",
                idempotency_key="after-1",
                session_id=session,
                payload={"text": "wrote the bench"},
            )
            resumed = await call(s, "memory_resume", session_id=session)
            assert resumed["resolution"] == "checkpoint" and resumed["checkpoint"]["goal"] == "ship MCP"
            assert [i["event_type"] for i in resumed["since_checkpoint"]] == ["action"]


async def test_working_memory_tools(base_url, account, other_account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": account.key("memory:rw")}) as s:
            ws = await call(
                s, "memory_working_session_create", title="chat", agent="coder", metadata={"model": "x"}
            )
            assert ws["status"] == "active" and ws["last_seq"] == 0
            items = [
                {"item_type": "message", "role": "user", "content": "  hi  ", "idempotency_key": "m1"},
                {
                    "item_type": "tool_result",
                    "content": "{}",
                    "metadata": {"tool": "ls"},
                    "idempotency_key": "t1",
                },
                {"item_type": "draft", "content": "", "idempotency_key": "d1"},
            ]
            appended = await call(s, "memory_working_append", session_id=ws["id"], items=items)
            assert [i["seq"] for i in appended["items"]] == [1, 2, 3] and appended["created_count"] == 3
            replayed = await call(s, "memory_working_append", session_id=ws["id"], items=items[:1])
            assert replayed["replayed_count"] == 1 and replayed["items"][0]["seq"] == 1
            no_role = await refused(
                s,
                "memory_working_append",
                session_id=ws["id"],
                items=[{"item_type": "message", "content": "x", "idempotency_key": "m2"}],
            )
            assert "items[0].role" in no_role and "system, user, assistant, tool" in no_role
            page = await call(s, "memory_working_replay", session_id=ws["id"], limit=2)
            assert [i["content"] for i in page["items"]] == ["  hi  ", "{}"] and page["has_more"] is True
            deleted = await call(s, "memory_working_item_delete", session_id=ws["id"], seq=2)
            assert deleted == {"session_id": ws["id"], "seq": 2, "deleted": True}
            assert (
                await refused(s, "memory_working_item_delete", session_id=ws["id"], seq=2)
                == "working item not found"
            )
            rest = await call(
                s, "memory_working_replay", session_id=ws["id"], after_seq=page["next_after_seq"]
            )
            assert [i["seq"] for i in rest["items"]] == [3] and rest["has_more"] is False
            listed = await call(s, "memory_working_session_list", agent="coder", status="active")
            assert [x["id"] for x in listed["items"]] == [ws["id"]]
            got = await call(s, "memory_working_session_get", id=ws["id"])
            assert got["last_seq"] == 3
            updated = await call(
                s, "memory_working_session_update", id=ws["id"], status="archived", clear_title=True
            )
            assert updated["status"] == "archived" and updated["title"] is None
            assert "at least one" in await refused(s, "memory_working_session_update", id=ws["id"])
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": other_account.key("memory:rw")}) as s:
            assert await refused(s, "memory_working_session_get", id=ws["id"]) == "working session not found"
            assert (
                await refused(s, "memory_working_replay", session_id=ws["id"]) == "working session not found"
            )
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": account.key("memory:r")}) as s:
            assert "memory:rw" in await refused(s, "memory_working_session_delete", id=ws["id"])
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": account.key("memory:rw")}) as s:
            gone = await call(s, "memory_working_session_delete", id=ws["id"])
            assert gone["items_deleted"] == 2
            assert await refused(s, "memory_working_session_get", id=ws["id"]) == "working session not found"


@pytest.mark.anyio
async def test_tool_errors_name_arguments_as_rest_names_fields(base_url, account):
    """An argument named like an HTTP location keeps its name; a whole-call error is named arguments; a reused
    idempotency key is worded for the argument, not the REST header."""
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            r = await s.call_tool("memory_search", {"query": "   "})
            assert r.is_error and r.content[0].text == "Validation failed: query: must not be blank"
            todo = await s.call_tool("todo_create", {"title": "t"})
            r = await s.call_tool("todo_update", {"id": todo.structured_content["id"]})
            assert r.is_error and r.content[0].text.startswith(
                "Validation failed: arguments: an empty PATCH changes nothing: send at least one of title,"
            )
            first = await s.call_tool("todo_create", {"title": "a", "idempotency_key": "same-key"})
            r = await s.call_tool("todo_create", {"title": "b", "idempotency_key": "same-key"})
            assert r.is_error and r.content[0].text.startswith(
                "this idempotency key was already used with a different request body (that request created "
                f"{first.structured_content['id']})"
            )


@pytest.mark.anyio
async def test_list_tools_name_the_argument_meant_as_the_rest_query_does(base_url, account):
    with anyio.fail_after(60):
        async with mcp_session(f"{base_url}/mcp/memory", {"X-Api-Key": account.key()}) as s:
            r = await s.call_tool("memory_events_list", {"session": "s-1"})
            assert r.is_error and r.content[0].text.startswith(
                "Validation failed: session: unknown field (did you mean session_id?) (allowed: "
            )
            r = await s.call_tool("memory_journal_sessions", {"repo": "octo/widgets"})
            assert "repo: unknown field (use scope_type=repository&scope_key=owner/repo)" in r.content[0].text
            r = await s.call_tool("memory_search", {"query": "x", "status": "invalidated"})
            assert (
                r.is_error
                and "list them with GET /api/memory/entries?status=invalidated" in r.content[0].text
            )
