"""Finding your work again after a crash: journal sessions, resume by scope, and nearest scopes when a scoped read
finds nothing (scope keys are exact)."""

from __future__ import annotations

from typing import Any

EVENTS = "/api/memory/events"
SESSIONS = "/api/memory/journal/sessions"


def _event(client: Any, h: dict[str, str], key: str, session: str, at: str, **over: Any) -> dict[str, Any]:
    body = {
        "event_type": "observation",
        "idempotency_key": key,
        "session_id": session,
        "occurred_at": at,
        "payload": {"text": key},
        **over,
    }
    r = client.post(EVENTS, json=body, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def _seed(client: Any, h: dict[str, str]) -> None:
    repo = {"scope_type": "repository", "scope_key": "octo/widgets"}
    _event(client, h, "a1", "s-old", "2026-01-01T10:00:00Z", **repo)
    _event(client, h, "a2", "s-old", "2026-01-01T11:00:00Z", **repo)
    _event(client, h, "b1", "s-new", "2026-01-02T09:00:00Z", **repo)
    # s-other is the newest overall, but in another scope
    _event(client, h, "c1", "s-other", "2026-01-03T09:00:00Z", scope_type="project", scope_key="gadgets")
    # s-old has later activity outside the repository scope: it does not count for the repository
    _event(client, h, "a3", "s-old", "2026-01-04T09:00:00Z", scope_type="project", scope_key="gadgets")
    r = client.post(
        "/api/memory/checkpoints",
        headers=h,
        json={
            "session_id": "s-new",
            "goal": "ship the widget",
            "label": "half way",
            "done": ["parser"],
            "scope_type": "repository",
            "scope_key": "octo/widgets",
        },
    )
    assert r.status_code == 201, r.text


def test_journal_sessions_list_newest_activity_first_with_the_latest_checkpoint(client, account):
    h = account.headers("memory:rw")
    _seed(client, h)
    r = client.get(SESSIONS, headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    # the checkpoint (recorded now) is s-new's latest activity overall
    assert [s["session_id"] for s in body["items"]] == ["s-new", "s-old", "s-other"]
    assert body["total"] == 3 and "nearest_scopes" not in body
    new = body["items"][0]
    assert new["event_count"] == 2 and new["first_activity_at"] == "2026-01-02T09:00:00Z"
    assert new["latest_checkpoint_label"] == "half way" and new["latest_checkpoint_goal"] == "ship the widget"
    old = body["items"][1]
    assert (
        old["event_count"] == 3
        and old["latest_checkpoint_goal"] is None
        and old["latest_checkpoint_at"] is None
    )

    scoped = client.get(SESSIONS, params={"scope_type": "project", "scope_key": "gadgets"}, headers=h).json()
    assert [(s["session_id"], s["event_count"]) for s in scoped["items"]] == [("s-old", 1), ("s-other", 1)]
    assert scoped["items"][0]["last_activity_at"] == "2026-01-04T09:00:00Z"

    page = client.get(SESSIONS, params={"limit": 1, "offset": 1}, headers=h).json()
    assert [s["session_id"] for s in page["items"]] == ["s-old"] and page["total"] == 3
    past = client.get(SESSIONS, params={"limit": 1, "offset": 10}, headers=h).json()
    assert past["items"] == [] and past["total"] == 3


def test_resume_by_scope_picks_the_session_with_the_newest_event_in_that_scope(client, account):
    h = account.headers("memory:rw")
    _seed(client, h)
    r = client.get(
        "/api/memory/resume", params={"scope_type": "repository", "scope_key": "octo/widgets"}, headers=h
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["session_id"] == "s-new" and body["selected_by"] == "scope"
    assert body["resolution"] == "checkpoint" and body["checkpoint"]["goal"] == "ship the widget"
    # the same answer as asking for the session by id, apart from how it was chosen
    by_id = client.get("/api/memory/resume", params={"session_id": "s-new"}, headers=h).json()
    assert {**body, "selected_by": "session_id"} == by_id

    r = client.get("/api/memory/resume", params={"scope_type": "project", "scope_key": "gadgets"}, headers=h)
    assert r.json()["session_id"] == "s-old" and r.json()["resolution"] == "journal_only"


def test_resume_by_scope_says_when_the_sessions_checkpoint_was_saved_in_another_scope(client, account):
    h = account.headers("memory:rw")
    _seed(client, h)
    scope = {"scope_type": "repository", "scope_key": "octo/widgets"}
    assert "note" not in client.get("/api/memory/resume", params=scope, headers=h).json()
    # a later checkpoint of the same session without a scope (global) is the one the session resumes from
    r = client.post("/api/memory/checkpoints", json={"session_id": "s-new", "goal": "unscoped"}, headers=h)
    assert r.status_code == 201
    body = client.get("/api/memory/resume", params=scope, headers=h).json()
    assert body["session_id"] == "s-new" and body["checkpoint"]["goal"] == "unscoped"
    assert body["note"].startswith(
        "this session's latest checkpoint was saved in scope global, not repository:octo/widgets;"
    )
    assert "note" not in client.get("/api/memory/resume", params={"session_id": "s-new"}, headers=h).json()


def test_resuming_an_unknown_session_id_says_how_to_find_the_session(client, account):
    h = account.headers("memory:rw")
    _seed(client, h)
    body = client.get(
        "/api/memory/resume", params={"session_id": "made-up-after-a-restart"}, headers=h
    ).json()
    assert body["resolution"] == "empty"
    assert body["note"].startswith("nothing is recorded under this session_id; after a restart")
    assert "memory_journal_sessions" in body["note"]


def test_resume_by_scope_refuses_ambiguous_or_incomplete_requests(client, account):
    h = account.headers("memory:r")
    r = client.get("/api/memory/resume", params={"session_id": "s", "scope_type": "global"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["session_id"]
    r = client.get("/api/memory/resume", params={"scope_type": "repository"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == [
        "scope_key",
        "scope_type",
    ]  # a cross-field rule names both
    r = client.get("/api/memory/resume", params={"scope_key": "octo/widgets"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["scope_type"]
    r = client.get("/api/memory/resume", headers=h)
    assert r.status_code == 400 and "scope_type" in r.json()["errors"][0]["message"]


def test_an_empty_scoped_read_names_the_nearest_existing_scopes(client, account):
    h = account.headers("memory:rw")
    _seed(client, h)
    r = client.post(
        "/api/memory/entries",
        headers=h,
        json={
            "memory_type": "semantic",
            "content": "Widgets are built with make.",
            "scope_type": "repository",
            "scope_key": "octo/widgets",
            "evidence": [{"source_type": "test", "source_id": "t"}],
        },
    )
    assert r.status_code == 201, r.text
    expected = [{"scope_type": "repository", "scope_key": "octo/widgets"}]
    for wrong in ("Octo/Widgets", "octo/widgets/", "/octo/widgets", "widgets"):
        params = {"scope_type": "repository", "scope_key": wrong}
        for path in ("/api/memory/entries", EVENTS, SESSIONS):
            body = client.get(path, params=params, headers=h).json()
            assert body["total"] == 0 and body["nearest_scopes"] == expected, (path, wrong, body)
        found = client.post("/api/memory/search", json={"query": "widgets make", **params}, headers=h).json()
        assert found["items"] == [] and found["nearest_scopes"] == expected, (wrong, found)
        resumed = client.get("/api/memory/resume", params=params, headers=h).json()
        assert resumed["resolution"] == "empty" and resumed["session_id"] is None
        assert resumed["nearest_scopes"] == expected
    # a key sharing nothing has no suggestion; a read that found something carries none
    body = client.get(
        "/api/memory/entries", params={"scope_type": "repository", "scope_key": "zzz"}, headers=h
    )
    assert body.json()["nearest_scopes"] == []
    body = client.get(
        "/api/memory/entries", params={"scope_type": "repository", "scope_key": "octo/widgets"}, headers=h
    ).json()
    assert body["total"] == 1 and "nearest_scopes" not in body
    # the same key under another scope type is suggested too
    body = client.get(
        "/api/memory/entries", params={"scope_type": "project", "scope_key": "octo/widgets"}, headers=h
    ).json()
    assert body["nearest_scopes"] == expected


def test_nearest_scopes_never_suggest_another_accounts_keys(client, account, other_account):
    victim = other_account.headers("memory:rw")
    _event(
        client,
        victim,
        "v1",
        "vs",
        "2026-01-01T10:00:00Z",
        scope_type="repository",
        scope_key="secret/widgets",
    )
    h = account.headers("memory:r")
    body = client.get(
        "/api/memory/entries", params={"scope_type": "repository", "scope_key": "widgets"}, headers=h
    ).json()
    assert body["nearest_scopes"] == []


def test_a_write_that_opens_a_near_twin_of_an_existing_scope_is_warned(client, account):
    h = account.headers("memory:rw")
    repo = {"scope_type": "repository", "scope_key": "octo/widgets"}
    first = _event(client, h, "w1", "s", "2026-01-01T10:00:00Z", **repo)
    assert "scope_warning" not in first  # the first scope of the account
    assert "scope_warning" not in _event(
        client, h, "w2", "s", "2026-01-01T10:01:00Z", **repo
    )  # an existing scope
    twin = _event(
        client, h, "w3", "s", "2026-01-01T10:02:00Z", scope_type="repository", scope_key="Octo/Widgets/"
    )
    assert twin["scope_warning"].startswith(
        "this opened a new scope repository:Octo/Widgets/, but repository:octo/widgets already exists"
    )
    # only the write that opened it is warned; another type or an unrelated key is not
    assert "scope_warning" not in _event(
        client, h, "w4", "s", "2026-01-01T10:03:00Z", scope_type="repository", scope_key="Octo/Widgets/"
    )
    assert "scope_warning" not in _event(
        client, h, "w5", "s", "2026-01-01T10:04:00Z", scope_type="project", scope_key="OCTO/widgets"
    )
    entry = client.post(
        "/api/memory/entries",
        headers=h,
        json={
            "memory_type": "semantic",
            "content": "c",
            "scope_type": "repository",
            "scope_key": "octo/WIDGETS",
            "evidence": [{"source_type": "t", "source_id": "t"}],
        },
    ).json()
    assert "octo/widgets" in entry["scope_warning"] and "Octo/Widgets/" in entry["scope_warning"]
    saved = client.post(
        "/api/memory/checkpoints",
        headers=h,
        json={"session_id": "s", "goal": "g", "scope_type": "repository", "scope_key": "OCTO/widgets"},
    ).json()
    assert saved["scope_warning"].startswith("this opened a new scope repository:OCTO/widgets")
