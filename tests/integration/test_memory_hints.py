"""Errors that say the fix (memory): a 409 on a reused event key names the fields that differ; common wrong field
names get a rename hint."""

from __future__ import annotations

EVENTS = "/api/memory/events"


def _event(key: str, **over):
    return {
        "event_type": "observation",
        "idempotency_key": key,
        "session_id": "s",
        "payload": {"text": "a"},
        **over,
    }


def test_a_reused_event_key_names_the_fields_that_differ(client, account):
    h = account.headers("memory:rw")
    assert client.post(EVENTS, json=_event("k"), headers=h).status_code == 201
    r = client.post(
        EVENTS, json=_event("k", payload={"text": "b"}, scope_type="project", scope_key="x"), headers=h
    )
    assert r.status_code == 409
    assert r.json()["differing_fields"] == ["scope_type", "scope_key", "payload"]
    assert "scope_type, scope_key, payload differ from the stored event" in r.json()["detail"]
    timed = _event("kt", occurred_at="2026-05-01T08:00:00Z")
    assert client.post(EVENTS, json=timed, headers=h).status_code == 201
    r = client.post(EVENTS, json=_event("kt"), headers=h)
    assert r.status_code == 409 and r.json()["differing_fields"] == ["occurred_at"]


def test_common_wrong_field_names_get_rename_hints(client, account):
    h = account.headers("memory:rw")
    r = client.post(EVENTS, json={**_event("h"), "session": "s1", "scope": "repo", "repo": "a/b"}, headers=h)
    assert r.status_code == 400
    messages = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert messages["session"] == "unknown field (use session_id)"
    assert "scope_type" in messages["scope"] and "scope_key" in messages["scope"]
    assert messages["repo"] == 'unknown field (use scope_type "repository" with scope_key "owner/repo")'
    r = client.post("/api/memory/search", json={"query": "x", "repo": "a/b"}, headers=h)
    assert r.status_code == 400 and "owner/repo" in r.json()["errors"][0]["message"]
    r = client.post(
        "/api/memory/checkpoints", json={"session_id": "s", "goal": "g", "session": "s"}, headers=h
    )
    assert r.status_code == 400 and r.json()["errors"][0]["message"] == "unknown field (use session_id)"


def test_more_misplaced_fields_say_where_they_belong(client, account):
    h = account.headers("memory:rw")

    def hint(path: str, body: dict, field: str) -> str:
        r = client.post(path, json=body, headers=h)
        assert r.status_code == 400, r.text
        return next(e["message"] for e in r.json()["errors"] if e["field"] == field)

    event = {"event_type": "note", "idempotency_key": "k", "payload": {}}
    assert (
        hint("/api/memory/events", {**event, "tags": ["x"]}, "tags")
        == "unknown field (put tags inside payload)"
    )
    assert hint("/api/memory/events", {**event, "metadata": {}}, "metadata") == (
        "unknown field (put it inside payload)"
    )
    entry = {"memory_type": "semantic", "content": "c", "evidence": [{"source_type": "t", "source_id": "t"}]}
    assert hint("/api/memory/entries", {**entry, "idempotency_key": "k"}, "idempotency_key") == (
        "unknown field (send it as the Idempotency-Key header)"
    )
    assert (
        hint("/api/memory/search", {"query": "q", "type": "semantic"}, "type")
        == "unknown field (use memory_type)"
    )
    assert hint("/api/memory/search", {"query": "q", "session_id": "s"}, "session_id").startswith(
        "unknown field (search has no session filter"
    )
    assert hint("/api/memory/search", {"query": "   "}, "query") == "must not be blank"
