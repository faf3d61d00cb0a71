"""Round trips for every tool of the record modules over real HTTP (official SDK client, uvicorn on loopback)."""

from __future__ import annotations

import hashlib
import uuid

import anyio
import pytest

from .conftest import mcp_session

pytestmark = pytest.mark.anyio


def text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def call(session, name: str, **args):
    """Call a tool that must succeed; returns its structured content."""
    result = await session.call_tool(name, args)
    assert not result.is_error, f"{name}: {text(result)}"
    return result.structured_content


async def refused(session, name: str, **args) -> str:
    result = await session.call_tool(name, args)
    assert result.is_error, f"{name} should have failed: {result.structured_content}"
    return text(result)


async def test_note_tools_round_trip(base_url, account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/notes", {"X-Api-Key": account.key("notes:rw")}) as s:
            note = await call(
                s,
                "note_create",
                title="  Groceries ",
                content="milk",
                tags=["Home", "home"],
                idempotency_key="n-1",
            )
            assert note["title"] == "Groceries" and note["tags"] == ["home"]
            assert (
                await call(
                    s,
                    "note_create",
                    title="  Groceries ",
                    content="milk",
                    tags=["Home", "home"],
                    idempotency_key="n-1",
                )
                == note
            )
            assert (await call(s, "note_get", id=note["id"]))["content"] == "milk"
            appended = await call(s, "note_append", id=note["id"], content="\neggs")
            assert appended["content"] == "milk\neggs"
            await call(s, "note_create", title="Work log", content="standup")
            listed = await call(s, "note_list", tags=["HOME"])
            assert [n["id"] for n in listed["items"]] == [note["id"]] and listed["items"][0]["content"]
            assert [n["title"] for n in (await call(s, "note_search", q="STAND"))["items"]] == ["Work log"]
            assert (await call(s, "note_list", q="eggs"))["total"] == 1
            updated = await call(s, "note_update", id=note["id"], title="Shopping", tags=[])
            assert (
                updated["title"] == "Shopping"
                and updated["tags"] == []
                and updated["content"] == "milk\neggs"
            )
            assert "content" in await refused(s, "note_append", id=note["id"], content="")
            assert "title" in await refused(s, "note_create", title="   ")
            assert await call(s, "note_delete", id=note["id"]) == {"id": note["id"], "deleted": True}
            assert await refused(s, "note_get", id=note["id"]) == "note not found"
            assert await refused(s, "note_append", id=note["id"], content="x") == "note not found"


async def test_report_tools_round_trip(base_url, account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/reports", {"X-Api-Key": account.key("reports:rw")}) as s:
            report = await call(
                s, "report_create", title="Weekly", content="# Week 1", tags=["Ops"], source="researcher"
            )
            assert report["format"] == "md" and report["source"] == "researcher" and report["source_key_id"]
            await call(s, "report_create", title="Page", content="<p>x</p>", format="html")
            assert (await call(s, "report_get", id=report["id"]))["content"] == "# Week 1"
            listed = await call(s, "report_list", source="researcher")
            assert [r["id"] for r in listed["items"]] == [report["id"]] and "content" not in listed["items"][
                0
            ]
            assert (await call(s, "report_list", tags=["ops"], q="week"))["total"] == 1
            sources = await call(s, "report_list_sources")
            assert sources["items"] == [{"source": "researcher", "count": 1}]
            updated = await call(s, "report_update", id=report["id"], format="html", clear_source=True)
            assert updated["format"] == "html" and updated["source"] is None and updated["title"] == "Weekly"
            assert "allowed: md, html" in await refused(s, "report_create", title="x", format="pdf")
            assert "clear_source" in await refused(
                s, "report_update", id=report["id"], source="a", clear_source=True
            )
            assert (await call(s, "report_delete", id=report["id"]))["deleted"] is True
            assert await refused(s, "report_get", id=report["id"]) == "report not found"


async def test_bookmark_tools_round_trip(base_url, account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/bookmarks", {"X-Api-Key": account.key("bookmarks:rw")}) as s:
            mark = await call(
                s,
                "bookmark_create",
                url="https://example.com/a",
                title="Example",
                content="saved text",
                tags=["Read-Later"],
                source="crawler",
            )
            assert mark["is_read"] is False and mark["read_at"] is None and mark["tags"] == ["read-later"]
            assert (await call(s, "bookmark_get", id=mark["id"]))["content"] == "saved text"
            await call(s, "bookmark_create", url="http://example.org/b", is_read=True)
            unread = await call(s, "bookmark_list", is_read=False)
            assert [b["id"] for b in unread["items"]] == [mark["id"]] and "content" not in unread["items"][0]
            assert (await call(s, "bookmark_list", source="crawler", tags=["read-later"], q="example.com"))[
                "total"
            ] == 1
            read = await call(s, "bookmark_update", id=mark["id"], is_read=True, summary="short")
            assert read["is_read"] is True and read["read_at"] and read["summary"] == "short"
            assert (await call(s, "bookmark_update", id=mark["id"], clear_source=True))["source"] is None
            assert "url" in await refused(s, "bookmark_create", url="ftp://example.com/x")
            assert (await call(s, "bookmark_delete", id=mark["id"]))["deleted"] is True
            assert await refused(s, "bookmark_delete", id=mark["id"]) == "bookmark not found"


async def test_expense_tools_round_trip(base_url, account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/expenses", {"X-Api-Key": account.key("expenses:rw")}) as s:
            lunch = await call(
                s,
                "expense_create",
                amount="12.50",
                currency="usd",
                description="Lunch",
                tags=["Food"],
                happened_at="2026-03-01T12:30:00+08:00",
                source="receipts",
            )
            assert lunch["amount"] == "12.50" and lunch["currency"] == "USD" and lunch["tags"] == ["food"]
            await call(
                s,
                "expense_create",
                amount=7,
                currency="USD",
                tags=["food", "coffee"],
                happened_at="2026-03-02T09:00:00Z",
            )
            await call(s, "expense_create", amount="100", currency="CNY", happened_at="2026-03-03T09:00:00Z")
            assert (await call(s, "expense_get", id=lunch["id"]))["description"] == "Lunch"
            listed = await call(
                s, "expense_list", currency="usd", start="2026-03-01T00:00:00Z", end="2026-03-02T00:00:00Z"
            )
            assert [e["id"] for e in listed["items"]] == [lunch["id"]]
            assert (await call(s, "expense_list", q="lunch", source="receipts", tags=["FOOD"]))["total"] == 1
            summary = await call(s, "expense_summary")
            totals = {c["currency"]: c["total"] for c in summary["currencies"]}
            assert totals == {"USD": "19.50", "CNY": "100.00"} and summary["count"] == 3
            by_tag = {c["currency"]: c["by_tag"] for c in summary["currencies"]}["USD"]
            assert {t["tag"]: t["total"] for t in by_tag} == {"food": "19.50", "coffee": "7.00"}
            updated = await call(s, "expense_update", id=lunch["id"], amount="13", clear_source=True)
            assert updated["amount"] == "13.00" and updated["source"] is None
            assert "amount" in await refused(s, "expense_create", amount="1.005", currency="USD")
            assert "start" in await refused(
                s, "expense_list", start="2026-03-02T00:00:00Z", end="2026-03-01T00:00:00Z"
            )
            assert "currency" in await refused(s, "expense_create", amount="1", currency="ZZZ")
            assert (await call(s, "expense_delete", id=lunch["id"]))["deleted"] is True
            assert await refused(s, "expense_get", id=lunch["id"]) == "expense not found"


async def test_skill_record_tools_round_trip(base_url, account):
    body = "---\nname: summarise\ndescription: Summarise a text\n---\nSummarise the text.\n"
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp/skills", {"X-Api-Key": account.key("skills:rw")}) as s:
            assert "no active version" in await refused(s, "skill_version_get_active", skill_name="summarise")
            published = await call(
                s,
                "skill_version_publish",
                skill_name="summarise",
                version="1.0.0",
                content=body,
                activate=True,
            )
            assert published["created"] is True and published["is_active"] is True
            assert published["content_hash"] == hashlib.sha256(body.encode()).hexdigest()
            again = await call(
                s, "skill_version_publish", skill_name="summarise", version="1.0.0", content=body
            )
            assert again["created"] is False and again["id"] == published["id"]
            active = await call(s, "skill_version_get_active", skill_name="summarise")
            assert active["id"] == published["id"] and active["content"] == body
            ok = await call(
                s,
                "skill_log_add",
                skill_name="summarise",
                outcome="success",
                skill_version_id=active["id"],
                session_id="sess-1",
                duration_ms=120,
                tool_calls=[{"name": "read"}],
                idempotency_key="log-1",
            )
            assert ok["skill_version"] == "1.0.0" and ok["tool_calls"] == [{"name": "read"}]
            await call(
                s,
                "skill_log_add",
                skill_name="summarise",
                outcome="user_corrected",
                user_correction="too long",
            )
            assert "allowed: success, failure, partial, user_corrected" in await refused(
                s, "skill_log_add", skill_name="summarise", outcome="meh"
            )
            logs = await call(s, "skill_logs_list", skill_name="summarise", outcome="success")
            assert [entry["id"] for entry in logs["items"]] == [ok["id"]]
            stats = await call(s, "skill_stats", skill_name="summarise")
            assert stats["total_runs"] == 2 and stats["outcomes"]["user_corrected"] == 1
            signals = await call(s, "skill_signals", skill_name="summarise", limit=5)
            assert [entry["user_correction"] for entry in signals["items"]] == ["too long"]
            assert "limit" in await refused(s, "skill_signals", skill_name="summarise", limit=99)


async def test_module_tools_are_scoped_like_rest_and_tenant_isolated(base_url, account, other_account):
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": other_account.key()}) as s:
            theirs = {
                "note": await call(s, "note_create", title="theirs"),
                "report": await call(s, "report_create", title="theirs"),
                "bookmark": await call(s, "bookmark_create", url="https://example.com/theirs"),
                "expense": await call(s, "expense_create", amount="1", currency="EUR"),
            }
        read_only = account.key("notes:r", "reports:r", "bookmarks:r", "expenses:r", "skills:r")
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": read_only}) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            for kind, record in theirs.items():
                assert await refused(s, f"{kind}_get", id=record["id"]) == f"{kind} not found"
            write = await refused(s, "note_create", title="x")
            log = await refused(s, "skill_log_add", skill_name="x", outcome="success")
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            for kind, record in theirs.items():
                assert await refused(s, f"{kind}_delete", id=record["id"]) == f"{kind} not found"
    assert (
        "note_create" not in names
        and {"note_get", "report_list_sources", "expense_summary", "skill_stats"} <= names
    )
    assert "notes:rw" in write and "skills:rw" in log


async def test_unknown_ids_are_not_found_for_every_id_tool(base_url, account):
    missing = str(uuid.uuid4())
    with anyio.fail_after(20):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            for kind in ("todo", "note", "report", "bookmark", "expense"):
                for verb in ("get", "update", "delete"):
                    # an update must change something (an empty one is refused before the lookup)
                    change = {"description": "x"} if kind in ("todo", "expense") else {"title": "x"}
                    args = {"id": missing, **(change if verb == "update" else {})}
                    assert await refused(s, f"{kind}_{verb}", **args) == f"{kind} not found"


TAGGED = {  # record module → a create body carrying tags
    "todos": {"title": "t"},
    "notes": {"title": "n"},
    "reports": {"title": "r"},
    "bookmarks": {"url": "https://example.com/tagged"},
    "expenses": {"amount": "1.00", "currency": "EUR"},
}


async def test_each_record_module_has_a_tag_roster_tool_under_its_read_scope(
    base_url, account, other_account
):
    # Given records with tags in every record module, and another account's records with tags of its own
    for acct, tags in ((account, (["Work", "home"], ["work"])), (other_account, (["work", "theirs"],))):
        for module, body in TAGGED.items():
            for record_tags in tags:
                r = acct.client.post(
                    f"/api/{module}", json={**body, "tags": record_tags}, headers=acct.headers()
                )
                assert r.status_code == 201, r.text
    with anyio.fail_after(30):
        # When each module's <module>_tags tool is called with that module's read scope only
        for module in TAGGED:
            async with mcp_session(
                f"{base_url}/mcp/{module}", {"X-Api-Key": account.key(f"{module}:r")}
            ) as s:
                roster = await call(s, f"{module}_tags")
                second = await call(s, f"{module}_tags", limit=1, offset=1)
                bad = await refused(s, f"{module}_tags", limit=0)
            # Then it lists this account's tags, most used first, paged like REST, the other account's never
            assert roster == {
                "items": [{"tag": "work", "count": 2}, {"tag": "home", "count": 1}],
                "total": 2,
                "limit": 20,
                "offset": 0,
            }, module
            assert second["items"] == [{"tag": "home", "count": 1}] and second["total"] == 2
            assert "limit" in bad
        # And without the module's read scope the tool is refused, naming the scope
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key("notes:r")}) as s:
            names = {t.name for t in (await s.list_tools()).tools}
            denied = await refused(s, "todos_tags")
    assert "notes_tags" in names and "todos_tags" not in names
    assert "todos:r" in denied


LIST_TOOLS = {  # record module → its list tool (each has a tag filter)
    "todos": "todo_list",
    "notes": "note_list",
    "reports": "report_list",
    "bookmarks": "bookmark_list",
    "expenses": "expense_list",
}


async def test_list_tools_take_tag_like_rest_and_a_string_tags_is_told_to_send_a_list(base_url, account):
    """Issue 23 trial: REST filters with ?tag=work; todo_list {"tag": "work"} was refused ("did you mean
    tags?") and {"tags": "work"} got "Input should be a valid list" with no fix."""
    for module, body in TAGGED.items():
        for record_tags in (["Work", "home"], ["home"]):
            r = account.client.post(
                f"/api/{module}", json={**body, "tags": record_tags}, headers=account.headers()
            )
            assert r.status_code == 201, r.text
    with anyio.fail_after(30):
        async with mcp_session(f"{base_url}/mcp", {"X-Api-Key": account.key()}) as s:
            for module, tool in LIST_TOOLS.items():
                rest = account.client.get(f"/api/{module}", params={"tag": "work"}, headers=account.headers())
                assert rest.status_code == 200 and rest.json()["total"] == 1, rest.text
                one = await call(s, tool, tag="WORK")
                assert [i["id"] for i in one["items"]] == [i["id"] for i in rest.json()["items"]], module
                # tag and tags together: all must match, as REST's tag= and tags=
                assert (await call(s, tool, tag="home", tags=["work"]))["total"] == 1, module
                assert (await call(s, tool, tags=["home"]))["total"] == 2, module
                bad = await refused(s, tool, tags="work")
                assert bad == (
                    'Validation failed: tags: must be a list of tags, e.g. ["work"]; for one tag, tag: "work" '
                    "also works"
                ), module
