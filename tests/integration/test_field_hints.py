"""Hints belong to the model that owns the field (``field_hints``), and a missing enum field lists its values."""

from __future__ import annotations

from agentmate.memory.schemas import EVENT_TYPES


def _errors(r):
    assert r.status_code == 400, r.text
    return {e["field"]: e for e in r.json()["errors"]}


def test_a_memory_hint_is_not_given_to_a_todo(client, account):
    r = client.post("/api/todos", json={"title": "x", "content": "y"}, headers=account.headers("todos:rw"))
    assert _errors(r)["content"] == {"field": "content", "message": "unknown field"}


def test_the_event_body_keeps_its_hint(client, account):
    r = client.post(
        "/api/memory/events",
        json={"event_type": "note", "idempotency_key": "k", "content": "y"},
        headers=account.headers("memory:rw"),
    )
    assert _errors(r)["content"]["message"] == "unknown field (event content belongs inside payload)"


def test_a_missing_enum_field_lists_its_allowed_values(client, account):
    r = client.post("/api/memory/events", json={"idempotency_key": "k"}, headers=account.headers("memory:rw"))
    assert _errors(r)["event_type"] == {
        "field": "event_type",
        "message": "field required",
        "allowed": list(EVENT_TYPES),
    }
    r = client.post("/api/skills/logs", json={"skill_name": "s"}, headers=account.headers("skills:rw"))
    assert _errors(r)["outcome"]["allowed"] == ["success", "failure", "partial", "user_corrected"]


def test_an_event_key_sent_as_a_header_is_pointed_at_the_body(client, account):
    headers = {**account.headers("memory:rw"), "Idempotency-Key": "k-1"}
    r = client.post(
        "/api/memory/events", json={"event_type": "note", "payload": {"text": "x"}}, headers=headers
    )
    assert _errors(r)["idempotency_key"]["message"] == (
        "field required (send it in the JSON body, not as an Idempotency-Key header; reuse it on retries)"
    )


def test_a_missing_enum_query_parameter_lists_its_allowed_values(client, account):
    h = account.headers("memory:rw")
    for method, path, extra in (
        ("GET", "/api/memory/export", {}),
        ("DELETE", "/api/memory/entries", {"confirm": "true"}),
    ):
        r = client.request(method, path, params={"scope_key": "octo/widgets", **extra}, headers=h)
        assert _errors(r)["scope_type"] == {
            "field": "scope_type",
            "message": "field required",
            "allowed": ["global", "project", "repository", "agent", "session"],
        }
    r = client.delete("/api/memory/entries", params={"scope_type": "global"}, headers=h)
    assert _errors(r)["confirm"] == {
        "field": "confirm",
        "message": "field required",
        "allowed": ["true", "false"],
    }
