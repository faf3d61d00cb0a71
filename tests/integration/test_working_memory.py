"""Working memory through the HTTP API (and the services directly for concurrency): sessions, batch append with
server-assigned seq and per-session idempotency, replay paging, deletion, validation and tenant isolation."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from starlette.testclient import TestClient

from agentmate.api.app import build_app
from agentmate.core.db import Database
from agentmate.core.principal import Principal
from agentmate.working import service
from agentmate.working.router import router
from agentmate.working.schemas import MAX_BATCH_ITEMS, MAX_CONTENT_BYTES, ItemIn, ItemsAppend, SessionCreate

BASE = "/api/memory/working"
SESSIONS = f"{BASE}/sessions"


@pytest.fixture(scope="module")
def wm(client) -> Iterator[Any]:
    """A client that reaches this router: the local dispatcher once functions/routes.py sends
    /api/memory/working to an app serving it (an unauthenticated probe is then a 401, not a 404),
    otherwise a tiny app holding just this router."""
    if client.get(SESSIONS).status_code == 401:
        yield client
        return
    with TestClient(build_app([router]), base_url="http://127.0.0.1:26001") as standalone:
        yield standalone


def msg(key: str, content: str = "hello", role: str = "user", **extra: Any) -> dict[str, Any]:
    return {"item_type": "message", "role": role, "content": content, "idempotency_key": key, **extra}


def new_session(wm: Any, h: dict[str, str], **body: Any) -> str:
    r = wm.post(SESSIONS, json=body, headers=h)
    assert r.status_code == 201, r.text
    return r.json()["id"]


def append(wm: Any, h: dict[str, str], sid: str, items: list[dict[str, Any]]) -> Any:
    return wm.post(f"{SESSIONS}/{sid}/items", json={"items": items}, headers=h)


def seqs_in_db(owner_url: str, sid: str) -> list[int]:
    with psycopg.connect(owner_url) as conn:
        return [
            r[0]
            for r in conn.execute("SELECT seq FROM working_items WHERE session_id = %s ORDER BY seq", (sid,))
        ]


def errors_by_field(r: Any) -> dict[str, dict[str, Any]]:
    return {e["field"]: e for e in r.json()["errors"]}


def principal_of(account: Any) -> Principal:
    return Principal(account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt")


# --- sessions -------------------------------------------------------------------------------------------------


def test_session_crud_round_trip(wm, account):
    # Given a key with memory:rw
    h = account.headers("memory:rw")
    # When a session is created with title, agent and metadata
    r = wm.post(
        SESSIONS, json={"title": "  Fix the build ", "agent": "coder", "metadata": {"repo": "a/b"}}, headers=h
    )
    assert r.status_code == 201, r.text
    s = r.json()
    # Then it is active, trimmed, and starts with no seq assigned
    assert (s["title"], s["agent"], s["status"], s["metadata"], s["last_seq"]) == (
        "Fix the build",
        "coder",
        "active",
        {"repo": "a/b"},
        0,
    )
    assert r.headers["cache-control"] == "private, no-store"
    # And it reads back with metadata and last_seq
    got = wm.get(f"{SESSIONS}/{s['id']}", headers=h)
    assert got.status_code == 200 and got.json() == s
    # When fields are patched, only those change
    r = wm.patch(f"{SESSIONS}/{s['id']}", json={"status": "archived", "metadata": {"k": 1}}, headers=h)
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["metadata"], r.json()["title"]) == (
        "archived",
        {"k": 1},
        "Fix the build",
    )
    assert r.json()["updated_at"] > s["updated_at"]
    r = wm.patch(f"{SESSIONS}/{s['id']}", json={"title": None}, headers=h)
    assert r.status_code == 200 and r.json()["title"] is None and r.json()["status"] == "archived"
    # And archiving is a label, not a freeze: an archived session still accepts appends
    assert append(wm, h, s["id"], [msg("late")]).status_code == 201
    # And a delete removes it
    r = wm.delete(f"{SESSIONS}/{s['id']}", headers=h)
    assert r.status_code == 200 and r.json() == {"id": s["id"], "deleted": True, "items_deleted": 1}
    assert wm.get(f"{SESSIONS}/{s['id']}", headers=h).status_code == 404
    assert wm.delete(f"{SESSIONS}/{s['id']}", headers=h).status_code == 404


def test_session_create_needs_no_fields_and_rejects_unknown_ones(wm, account):
    h = account.headers("memory:rw")
    # Given an empty object, or no body at all, a session is still created
    for kwargs in ({"json": {}}, {}):
        r = wm.post(SESSIONS, headers=h, **kwargs)
        assert r.status_code == 201, r.text
        assert (r.json()["title"], r.json()["agent"], r.json()["metadata"]) == (None, None, {})
    # But an unknown field, a blank title or a non-object metadata is a 400 naming each field
    r = wm.post(SESSIONS, json={"name": "x", "title": "   ", "metadata": [1]}, headers=h)
    assert r.status_code == 400
    assert set(errors_by_field(r)) == {"name", "title", "metadata"}
    assert errors_by_field(r)["name"]["message"].startswith("unknown field")


def test_session_create_honours_the_idempotency_key_header(wm, account):
    h = {**account.headers("memory:rw"), "Idempotency-Key": "session-1"}
    first = wm.post(SESSIONS, json={"title": "once"}, headers=h)
    again = wm.post(SESSIONS, json={"title": "once"}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and again.json() == first.json()
    assert wm.post(SESSIONS, json={"title": "twice"}, headers=h).status_code == 409
    assert wm.get(SESSIONS, headers=h).json()["total"] == 1


def test_session_patch_requires_a_field_and_lists_allowed_values(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    # An empty patch names the fields that may be sent
    r = wm.patch(f"{SESSIONS}/{sid}", json={}, headers=h)
    assert r.status_code == 400
    assert errors_by_field(r)["body"]["allowed"] == ["title", "status", "metadata"]
    # A bad status lists the statuses; null status/metadata and unknown fields are rejected
    r = wm.patch(f"{SESSIONS}/{sid}", json={"status": "closed", "agent": "x"}, headers=h)
    assert r.status_code == 400
    assert errors_by_field(r)["status"]["allowed"] == ["active", "archived"]
    assert errors_by_field(r)["agent"]["message"].startswith("unknown field")
    r = wm.patch(f"{SESSIONS}/{sid}", json={"status": None, "metadata": None}, headers=h)
    assert r.status_code == 400 and set(errors_by_field(r)) == {"status", "metadata"}
    assert errors_by_field(r)["status"]["allowed"] == ["active", "archived"]
    # And nothing changed
    assert wm.get(f"{SESSIONS}/{sid}", headers=h).json()["status"] == "active"


def test_sessions_list_most_recently_updated_first_with_filters(wm, account):
    h = account.headers("memory:rw")
    # Given three sessions created in order a, b, c
    a = new_session(wm, h, agent="planner")
    b = new_session(wm, h, agent="coder")
    c = new_session(wm, h)
    r = wm.get(SESSIONS, headers=h)
    assert r.status_code == 200
    assert set(r.json()) == {"items", "total", "limit", "offset"}
    assert [s["id"] for s in r.json()["items"]] == [c, b, a]
    # When a receives an append and b is archived
    assert append(wm, h, a, [msg("k1")]).status_code == 201
    assert wm.patch(f"{SESSIONS}/{b}", json={"status": "archived"}, headers=h).status_code == 200
    # Then the order follows updated_at, and the filters apply
    assert [s["id"] for s in wm.get(SESSIONS, headers=h).json()["items"]] == [b, a, c]
    assert [s["id"] for s in wm.get(SESSIONS, params={"status": "archived"}, headers=h).json()["items"]] == [
        b
    ]
    assert [s["id"] for s in wm.get(SESSIONS, params={"status": "active"}, headers=h).json()["items"]] == [
        a,
        c,
    ]
    assert [s["id"] for s in wm.get(SESSIONS, params={"agent": "planner"}, headers=h).json()["items"]] == [a]
    r = wm.get(SESSIONS, params={"limit": 1, "offset": 1}, headers=h)
    assert r.json()["total"] == 3 and [s["id"] for s in r.json()["items"]] == [a]
    assert r.json()["items"][0]["last_seq"] == 1
    # And bad parameters are 400s naming the field
    r = wm.get(SESSIONS, params={"status": "open"}, headers=h)
    assert r.status_code == 400 and errors_by_field(r)["status"]["allowed"] == ["active", "archived"]
    assert list(errors_by_field(wm.get(SESSIONS, params={"limit": 101}, headers=h))) == ["limit"]


# --- append ---------------------------------------------------------------------------------------------------


def test_append_assigns_seq_in_request_order_and_moves_updated_at(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    before = wm.get(f"{SESSIONS}/{sid}", headers=h).json()
    # When a batch of three items is appended
    r = append(
        wm,
        h,
        sid,
        [
            msg("a", role="system", content="be brief"),
            {
                "item_type": "tool_result",
                "content": "42",
                "idempotency_key": "b",
                "metadata": {"tool": "calc"},
            },
            {"item_type": "draft", "role": None, "content": "plan", "idempotency_key": "c"},
        ],
    )
    # Then the server numbers them 1..3, all created
    assert r.status_code == 201, r.text
    assert "x-idempotent-replay" not in r.headers
    body = r.json()
    assert [(i["seq"], i["idempotency_key"], i["created"]) for i in body["items"]] == [
        (1, "a", True),
        (2, "b", True),
        (3, "c", True),
    ]
    assert (body["created_count"], body["replayed_count"], body["last_seq"]) == (3, 0, 3)
    assert "content" not in body["items"][0]
    # And the session reports last_seq and a newer updated_at
    after = wm.get(f"{SESSIONS}/{sid}", headers=h).json()
    assert after["last_seq"] == 3 and after["updated_at"] > before["updated_at"]
    # And a second batch continues the sequence
    assert [i["seq"] for i in append(wm, h, sid, [msg("d"), msg("e")]).json()["items"]] == [4, 5]


def test_content_is_stored_verbatim_including_whitespace_and_empty(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    contents = ["  leading and trailing  \n\t", "", "\n", "héllo 🌍 — “quotes”", "line1\r\nline2   "]
    items = [msg(f"k{i}", content=c, role="assistant") for i, c in enumerate(contents)]
    items[1]["metadata"] = {"tool_calls": [{"name": "search", "arguments": {"q": " x "}}]}
    assert append(wm, h, sid, items).status_code == 201
    got = wm.get(f"{SESSIONS}/{sid}/items", headers=h).json()["items"]
    assert [i["content"] for i in got] == contents
    assert got[1]["metadata"] == {"tool_calls": [{"name": "search", "arguments": {"q": " x "}}]}
    assert got[0]["metadata"] == {} and got[0]["role"] == "assistant" and got[0]["item_type"] == "message"


def test_full_replay_is_200_with_header_and_the_original_seq(wm, account, owner_url):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    batch = [msg("a", content=" x "), {"item_type": "draft", "content": "", "idempotency_key": "b"}]
    first = append(wm, h, sid, batch)
    assert first.status_code == 201
    updated = wm.get(f"{SESSIONS}/{sid}", headers=h).json()["updated_at"]
    # When the identical batch is retried (metadata omitted vs {} is the same content)
    batch[1]["metadata"] = {}
    again = append(wm, h, sid, batch)
    # Then it replays: 200, the header, the original seq, nothing created
    assert again.status_code == 200, again.text
    assert again.headers["x-idempotent-replay"] == "true"
    assert [(i["seq"], i["created"]) for i in again.json()["items"]] == [(1, False), (2, False)]
    assert [i["created_at"] for i in again.json()["items"]] == [
        i["created_at"] for i in first.json()["items"]
    ]
    assert (again.json()["created_count"], again.json()["replayed_count"], again.json()["last_seq"]) == (
        0,
        2,
        2,
    )
    assert seqs_in_db(owner_url, sid) == [1, 2]
    # And a pure replay does not touch the session
    assert wm.get(f"{SESSIONS}/{sid}", headers=h).json()["updated_at"] == updated


def test_partial_replay_plus_new_items_is_201_with_created_flags(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    assert append(wm, h, sid, [msg("a"), msg("b")]).status_code == 201
    # When a retry carries the stored items plus new ones, in mixed order
    r = append(wm, h, sid, [msg("c"), msg("a"), msg("d"), msg("b")])
    # Then the new ones get the next seq and the stored ones keep theirs
    assert r.status_code == 201 and "x-idempotent-replay" not in r.headers
    assert [(i["idempotency_key"], i["seq"], i["created"]) for i in r.json()["items"]] == [
        ("c", 3, True),
        ("a", 1, False),
        ("d", 4, True),
        ("b", 2, False),
    ]
    assert (r.json()["created_count"], r.json()["replayed_count"], r.json()["last_seq"]) == (2, 2, 4)


@pytest.mark.parametrize(
    "change",
    [
        {"content": "hello!"},
        {"content": "hello "},
        {"role": "assistant"},
        {"metadata": {"v": 2}},
    ],
)
def test_reused_key_with_different_content_is_409_and_nothing_from_the_batch_persists(
    wm,
    account,
    owner_url,
    change,
):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    assert append(wm, h, sid, [msg("a", metadata={"v": 1})]).status_code == 201
    # When a batch has a new item and reuses "a" with different content
    r = append(wm, h, sid, [msg("new-1"), {**msg("a", metadata={"v": 1}), **change}, msg("new-2")])
    # Then it is a 409 naming the item
    assert r.status_code == 409, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert list(errors_by_field(r)) == ["items[1].idempotency_key"]
    assert "seq 1" in errors_by_field(r)["items[1].idempotency_key"]["message"]
    # And nothing from that batch was stored; the counter did not move
    assert seqs_in_db(owner_url, sid) == [1]
    assert wm.get(f"{SESSIONS}/{sid}", headers=h).json()["last_seq"] == 1
    assert [i["seq"] for i in append(wm, h, sid, [msg("new-1")]).json()["items"]] == [2]


def test_duplicate_keys_within_one_batch_are_400(wm, account, owner_url):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    r = append(wm, h, sid, [msg("a"), msg("b"), msg("a")])
    assert r.status_code == 400
    err = errors_by_field(r)["items[2].idempotency_key"]
    assert "items[0].idempotency_key" in err["message"]
    assert seqs_in_db(owner_url, sid) == []


def test_item_validation_names_every_field_with_allowed_values(wm, account, owner_url):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    # Shape errors: bad enums, unknown and missing fields
    r = append(
        wm,
        h,
        sid,
        [
            {"item_type": "note", "content": "x", "idempotency_key": "a"},
            {"item_type": "message", "role": "robot", "content": "x", "idempotency_key": "b"},
            {"item_type": "draft", "content": "x", "idempotency_key": "c", "colour": "red"},
            {"item_type": "draft", "idempotency_key": "d"},
            {"item_type": "draft", "content": "x"},
            {"item_type": "draft", "content": "x", "idempotency_key": "   "},
            {"item_type": "draft", "content": None, "idempotency_key": "f", "metadata": "x"},
        ],
    )
    assert r.status_code == 400
    errors = errors_by_field(r)
    assert errors["items[0].item_type"]["allowed"] == ["message", "tool_result", "draft"]
    assert errors["items[1].role"]["allowed"] == ["system", "user", "assistant", "tool"]
    assert errors["items[2].colour"]["message"].startswith("unknown field")
    assert errors["items[3].content"]["message"] == "field required"
    assert errors["items[4].idempotency_key"]["message"] == "field required"
    assert set(errors) >= {"items[5].idempotency_key", "items[6].content", "items[6].metadata"}
    # Rule errors: a message needs a role, other types take none
    r = append(
        wm,
        h,
        sid,
        [
            {"item_type": "message", "content": "x", "idempotency_key": "a"},
            {"item_type": "tool_result", "role": "tool", "content": "x", "idempotency_key": "b"},
            {"item_type": "draft", "content": "x", "idempotency_key": "c"},
        ],
    )
    assert r.status_code == 400
    errors = errors_by_field(r)
    assert set(errors) == {"items[0].role", "items[0].item_type", "items[1].role", "items[1].item_type"}
    assert errors["items[0].role"]["allowed"] == ["system", "user", "assistant", "tool"]
    assert "only messages have a role" in errors["items[1].role"]["message"]
    assert errors["items[1].role"]["allowed"] == [None]
    # A key must be printable ASCII (the schema's pattern)
    r = append(wm, h, sid, [{"item_type": "draft", "content": "x", "idempotency_key": "tab\tkey"}])
    assert r.status_code == 400 and set(errors_by_field(r)) == {"items[0].idempotency_key"}
    # And none of it was stored
    assert seqs_in_db(owner_url, sid) == []


def test_batch_and_content_bounds_are_clear_400s(wm, account, owner_url):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    # Empty and oversize batches
    r = append(wm, h, sid, [])
    assert r.status_code == 400 and list(errors_by_field(r)) == ["items"]
    r = append(wm, h, sid, [msg(f"k{i}") for i in range(MAX_BATCH_ITEMS + 1)])
    assert r.status_code == 400 and list(errors_by_field(r)) == ["items"]
    assert str(MAX_BATCH_ITEMS) in errors_by_field(r)["items"]["message"]
    # Content is bounded in UTF-8 bytes, not characters
    r = append(wm, h, sid, [msg("a", content="é" * (MAX_CONTENT_BYTES // 2 + 1))])
    assert r.status_code == 400 and "bytes" in errors_by_field(r)["items[0].content"]["message"]
    # Content Postgres cannot store verbatim is a 400, not a 500
    r = append(wm, h, sid, [msg("a", content="nul\x00byte", metadata={"k": "v\x00"})])
    assert r.status_code == 400 and set(errors_by_field(r)) == {"items[0].content", "items[0].metadata.k"}
    r = wm.post(
        f"{SESSIONS}/{sid}/items",
        headers={**h, "Content-Type": "application/json"},
        content=b'{"items": [{"item_type": "draft", "content": "\\ud800", "idempotency_key": "s"}]}',
    )
    assert r.status_code == 400 and list(errors_by_field(r)) == ["items[0].content"]
    # A whole batch is bounded too
    big = "x" * MAX_CONTENT_BYTES
    r = append(
        wm, h, sid, [*(msg(f"big{i}", content=big) for i in range(5)), msg("over", content="x" * 1000)]
    )
    assert r.status_code == 400 and list(errors_by_field(r)) == ["items"]
    # and a body over Lambda's 6 MB request limit is a 413 before anything parses it
    r = append(wm, h, sid, [msg(f"big{i}", content=big) for i in range(6)])
    assert r.status_code == 413 and r.json()["limit"] == 6_000_000
    assert seqs_in_db(owner_url, sid) == []
    # While the largest allowed item is accepted and read back intact
    assert append(wm, h, sid, [msg("max", content=big)]).status_code == 201
    assert wm.get(f"{SESSIONS}/{sid}/items", headers=h).json()["items"][0]["content"] == big


# --- replay and deletion --------------------------------------------------------------------------------------


def test_replay_pages_in_seq_order_with_exact_has_more_across_deletion_gaps(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    assert append(wm, h, sid, [msg(f"k{i}", content=str(i)) for i in range(1, 11)]).status_code == 201
    # Given items 4, 5 and the tail 9, 10 deleted
    for seq in (4, 5, 9, 10):
        assert wm.delete(f"{SESSIONS}/{sid}/items/{seq}", headers=h).status_code == 204

    def page(**params: Any) -> dict[str, Any]:
        r = wm.get(f"{SESSIONS}/{sid}/items", params=params, headers=h)
        assert r.status_code == 200, r.text
        return r.json()

    # Then pages follow seq order across the gap
    p = page(limit=3)
    assert [i["seq"] for i in p["items"]] == [1, 2, 3] and p["has_more"] is True
    assert (p["next_after_seq"], p["last_seq"], p["after_seq"], p["limit"]) == (3, 10, 0, 3)
    assert [i["content"] for i in p["items"]] == ["1", "2", "3"]
    p = page(after_seq=p["next_after_seq"], limit=2)
    assert [i["seq"] for i in p["items"]] == [6, 7] and p["has_more"] is True
    # And a full page followed only by deleted seqs says there is no more
    p = page(after_seq=5, limit=3)
    assert [i["seq"] for i in p["items"]] == [6, 7, 8] and p["has_more"] is False and p["next_after_seq"] == 8
    p = page(after_seq=8)
    assert p["items"] == [] and p["has_more"] is False and p["next_after_seq"] == 8 and p["last_seq"] == 10
    # And walking the pages replays every live item exactly once
    seen: list[int] = []
    after = 0
    while True:
        p = page(after_seq=after, limit=2)
        seen += [i["seq"] for i in p["items"]]
        after = p["next_after_seq"]
        if not p["has_more"]:
            break
    assert seen == [1, 2, 3, 6, 7, 8]
    # And out-of-range parameters are 400s naming the field
    assert list(errors_by_field(wm.get(f"{SESSIONS}/{sid}/items", params={"limit": 0}, headers=h))) == [
        "limit"
    ]
    assert list(errors_by_field(wm.get(f"{SESSIONS}/{sid}/items", params={"after_seq": -1}, headers=h))) == [
        "after_seq"
    ]


def test_replay_page_stops_at_the_size_budget_but_has_more_stays_exact(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    big = "y" * MAX_CONTENT_BYTES
    # Given six items of 1 MiB (over the 4 MiB page budget together)
    for i in range(6):
        assert append(wm, h, sid, [msg(f"b{i}", content=big)]).status_code == 201
    # Then a page stops under the budget, says so, and the next page continues
    p = wm.get(f"{SESSIONS}/{sid}/items", headers=h).json()
    assert [i["seq"] for i in p["items"]] == [1, 2, 3] and p["has_more"] is True and p["size_limited"] is True
    p = wm.get(f"{SESSIONS}/{sid}/items", params={"after_seq": 3}, headers=h).json()
    assert [i["seq"] for i in p["items"]] == [4, 5, 6] and p["has_more"] is False
    assert all(i["content"] == big for i in p["items"])
    p = wm.get(f"{SESSIONS}/{sid}/items", params={"after_seq": 3, "limit": 3}, headers=h).json()
    assert p["has_more"] is False and p["size_limited"] is False


def test_deleted_seq_is_never_reused(wm, account):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    assert append(wm, h, sid, [msg("a"), msg("b"), msg("c")]).status_code == 201
    updated = wm.get(f"{SESSIONS}/{sid}", headers=h).json()["updated_at"]
    # When the newest item is deleted
    assert wm.delete(f"{SESSIONS}/{sid}/items/3", headers=h).status_code == 204
    assert wm.get(f"{SESSIONS}/{sid}", headers=h).json()["updated_at"] > updated
    assert wm.delete(f"{SESSIONS}/{sid}/items/3", headers=h).status_code == 404
    # Then the session keeps its counter and the next append gets seq 4
    assert wm.get(f"{SESSIONS}/{sid}", headers=h).json()["last_seq"] == 3
    assert [i["seq"] for i in append(wm, h, sid, [msg("d")]).json()["items"]] == [4]
    assert [i["seq"] for i in wm.get(f"{SESSIONS}/{sid}/items", headers=h).json()["items"]] == [1, 2, 4]
    # And unknown or malformed seqs are 404 / 400
    assert wm.delete(f"{SESSIONS}/{sid}/items/99", headers=h).status_code == 404
    for bad in ("abc", "0", "-1"):
        r = wm.delete(f"{SESSIONS}/{sid}/items/{bad}", headers=h)
        assert r.status_code == 400 and list(errors_by_field(r)) == ["seq"]


def test_delete_session_reports_items_deleted_and_cascades(wm, account, owner_url):
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    keep = new_session(wm, h)
    assert append(wm, h, sid, [msg(f"k{i}") for i in range(5)]).status_code == 201
    assert append(wm, h, keep, [msg("other")]).status_code == 201
    assert wm.delete(f"{SESSIONS}/{sid}/items/2", headers=h).status_code == 204
    # When the session is deleted
    r = wm.delete(f"{SESSIONS}/{sid}", headers=h)
    # Then it reports the items that went with it
    assert r.status_code == 200 and r.json() == {"id": sid, "deleted": True, "items_deleted": 4}
    assert seqs_in_db(owner_url, sid) == []
    assert wm.get(f"{SESSIONS}/{sid}/items", headers=h).status_code == 404
    assert append(wm, h, sid, [msg("late")]).status_code == 404
    # And other sessions are untouched
    assert seqs_in_db(owner_url, keep) == [1]


# --- concurrency (services called directly, each thread on its own connection) --------------------------------


def _new_session_via_service(principal: Principal, body: SessionCreate | None = None) -> uuid.UUID:
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    try:
        return service.create_session(db, principal, body).value.id
    finally:
        db.close()


def _run_threads(n: int, work: Any) -> list[Any]:
    """Run ``work(db, i)`` in ``n`` threads released together, each with its own one-connection pool."""
    app_url = os.environ["DATABASE_URL"]
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        db = Database(app_url, max_size=1)
        try:
            with db.transaction() as conn:  # open the connection before the race starts
                conn.execute("SELECT 1")
            barrier.wait()
            results[i] = work(db, i)
        except BaseException as exc:  # reported to the main thread below
            results[i] = exc
        finally:
            db.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


def test_concurrent_appends_to_one_session_get_unique_gapless_seq(account, owner_url):
    # Given one session and six writers, each on its own connection, appending five batches of three
    principal = principal_of(account)
    sid = _new_session_via_service(principal, SessionCreate(title="race"))
    writers, batches, per_batch = 6, 5, 3

    def work(db: Database, w: int) -> list[list[int]]:
        out = []
        for b in range(batches):
            body = ItemsAppend(
                items=[
                    ItemIn(item_type="draft", content=f"{w}-{b}-{k}", idempotency_key=f"{w}-{b}-{k}")
                    for k in range(per_batch)
                ]
            )
            result = service.append_items(db, principal, sid, body)
            assert result.created_count == per_batch
            out.append([i.seq for i in result.items])
        return out

    results = _run_threads(writers, work)
    # Then every seq 1..N was assigned exactly once, each batch got a contiguous run, and last_seq is N
    total = writers * batches * per_batch
    assert seqs_in_db(owner_url, str(sid)) == list(range(1, total + 1))
    all_batches = [batch for per_writer in results for batch in per_writer]
    assert sorted(s for batch in all_batches for s in batch) == list(range(1, total + 1))
    assert all(batch == list(range(batch[0], batch[0] + per_batch)) for batch in all_batches)
    with psycopg.connect(owner_url) as conn:
        assert conn.execute("SELECT last_seq FROM working_sessions WHERE id = %s", (sid,)).fetchone() == (
            total,
        )


def test_concurrent_retries_of_one_batch_create_it_once(account, owner_url):
    # Given one session and five writers retrying the same batch at the same moment
    principal = principal_of(account)
    sid = _new_session_via_service(principal)
    body = ItemsAppend(
        items=[
            ItemIn(item_type="message", role="user", content=f"m{k}", idempotency_key=f"m{k}")
            for k in range(4)
        ]
    )
    results = _run_threads(5, lambda db, _i: service.append_items(db, principal, sid, body))
    # Then exactly one created the items and every other one replayed the same seqs
    assert sorted(r.created_count for r in results) == [0, 0, 0, 0, 4]
    assert all([i.seq for i in r.items] == [1, 2, 3, 4] for r in results)
    assert sum(r.replay for r in results) == 4
    assert seqs_in_db(owner_url, str(sid)) == [1, 2, 3, 4]


# --- access ---------------------------------------------------------------------------------------------------


def test_another_accounts_session_is_404_on_every_route(wm, account, other_account, owner_url):
    # Given a session with an item in one account
    h = account.headers("memory:rw")
    sid = new_session(wm, h, title="private")
    assert append(wm, h, sid, [msg("a")]).status_code == 201
    # Then another account gets 404 everywhere and cannot see it in lists
    o = other_account.headers("memory:rw")
    assert wm.get(f"{SESSIONS}/{sid}", headers=o).status_code == 404
    assert wm.patch(f"{SESSIONS}/{sid}", json={"title": "mine"}, headers=o).status_code == 404
    assert append(wm, o, sid, [msg("b")]).status_code == 404
    assert append(wm, o, sid, [msg("a")]).status_code == 404
    assert wm.get(f"{SESSIONS}/{sid}/items", headers=o).status_code == 404
    assert wm.delete(f"{SESSIONS}/{sid}/items/1", headers=o).status_code == 404
    assert wm.delete(f"{SESSIONS}/{sid}", headers=o).status_code == 404
    assert wm.get(SESSIONS, headers=o).json()["total"] == 0
    # And nothing changed for the owner
    s = wm.get(f"{SESSIONS}/{sid}", headers=h).json()
    assert (s["title"], s["last_seq"]) == ("private", 1)
    assert seqs_in_db(owner_url, sid) == [1]


def test_malformed_ids_are_400_and_unknown_ids_404(wm, account):
    h = account.headers("memory:rw")
    missing = uuid.uuid4()
    for method, path in [
        ("get", f"{SESSIONS}/not-a-uuid"),
        ("get", f"{SESSIONS}/not-a-uuid/items"),
        ("delete", f"{SESSIONS}/not-a-uuid"),
        ("delete", f"{SESSIONS}/not-a-uuid/items/1"),
    ]:
        r = getattr(wm, method)(path, headers=h)
        assert r.status_code == 400 and list(errors_by_field(r)) == ["session_id"], (method, path)
    assert wm.patch(f"{SESSIONS}/nope", json={"title": "x"}, headers=h).status_code == 400
    assert append(wm, h, "nope", [msg("a")]).status_code == 400
    assert wm.get(f"{SESSIONS}/{missing}", headers=h).status_code == 404
    assert wm.get(f"{SESSIONS}/{missing}/items", headers=h).status_code == 404
    assert wm.patch(f"{SESSIONS}/{missing}", json={"title": "x"}, headers=h).status_code == 404
    assert append(wm, h, str(missing), [msg("a")]).status_code == 404
    assert wm.delete(f"{SESSIONS}/{missing}/items/1", headers=h).status_code == 404
    assert wm.delete(f"{SESSIONS}/{missing}", headers=h).status_code == 404


def test_reads_need_memory_r_and_writes_memory_rw(wm, account):
    rw, r_only, other = account.headers("memory:rw"), account.headers("memory:r"), account.headers("todos:rw")
    sid = new_session(wm, rw)
    assert append(wm, rw, sid, [msg("a")]).status_code == 201
    # A read-only key reads
    assert wm.get(SESSIONS, headers=r_only).status_code == 200
    assert wm.get(f"{SESSIONS}/{sid}", headers=r_only).status_code == 200
    assert wm.get(f"{SESSIONS}/{sid}/items", headers=r_only).status_code == 200
    # But cannot write
    for r in (
        wm.post(SESSIONS, json={}, headers=r_only),
        append(wm, r_only, sid, [msg("b")]),
        wm.patch(f"{SESSIONS}/{sid}", json={"title": "x"}, headers=r_only),
        wm.delete(f"{SESSIONS}/{sid}/items/1", headers=r_only),
        wm.delete(f"{SESSIONS}/{sid}", headers=r_only),
    ):
        assert r.status_code == 403 and r.json()["required_scope"] == "memory:rw"
    # And a key for another domain reads nothing; no credentials is a 401
    assert wm.get(f"{SESSIONS}/{sid}/items", headers=other).status_code == 403
    assert wm.get(SESSIONS).status_code == 401


def test_row_level_security_hides_sessions_and_items_from_other_tenants(wm, account, other_account):
    # Given a session with items in one account
    h = account.headers("memory:rw")
    sid = new_session(wm, h)
    assert append(wm, h, sid, [msg("a"), msg("b")]).status_code == 201
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    try:
        # Then the application role sees them only inside that account's transaction, even without filters
        count = (
            "SELECT (SELECT count(*) FROM working_sessions WHERE id = %(s)s) AS s, "
            "(SELECT count(*) FROM working_items WHERE session_id = %(s)s) AS i"
        )
        with db.tenant(account.account_id) as conn:
            assert conn.execute(count, {"s": sid}).fetchone() == {"s": 1, "i": 2}
        with db.tenant(other_account.account_id) as conn:
            assert conn.execute(count, {"s": sid}).fetchone() == {"s": 0, "i": 0}
        with db.transaction() as conn:
            assert conn.execute(count, {"s": sid}).fetchone() == {"s": 0, "i": 0}
    finally:
        db.close()
