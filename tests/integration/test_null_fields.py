"""Explicit JSON nulls in optional fields are either accepted or a 400 naming the field — never a 500."""

from __future__ import annotations

import pytest

from agentmate.system.service import schema_document as _schema

WRITE_BODIES = {
    "POST /api/memory/search": {"query": "x"},
    "POST /api/memory/checkpoints": {"session_id": "s1", "goal": "g"},
    "POST /api/memory/events": {"event_type": "note", "idempotency_key": "k1", "payload": {"a": 1}},
    "POST /api/memory/entries": {
        "content": "c",
        "memory_type": "semantic",
        "evidence": [{"source_type": "url", "source_id": "x"}],
    },
    "POST /api/todos": {"title": "t"},
    "POST /api/notes": {"title": "t"},
    "POST /api/reports": {"title": "t"},
    "POST /api/bookmarks": {"url": "https://example.com"},
    "POST /api/expenses": {"amount": "1.00", "currency": "EUR"},
    "POST /api/memory/working/sessions": {},
    "POST /api/skills/logs": {"skill_name": "s"},
    "POST /api/context/pack": {"task": "t"},
}


@pytest.mark.parametrize("route", sorted(WRITE_BODIES))
def test_null_in_any_optional_field_is_never_a_500(client, account, route):
    method, path = route.split(" ", 1)
    body = WRITE_BODIES[route]
    # Given every field of every write model (from /api/schema) set to null, one at a time
    fields = {name for model in _schema()["models"].values() for name in model["fields"]}
    for field in sorted(fields - set(body)):
        r = client.request(method, path, json={**body, field: None}, headers=account.jwt_headers)
        # Then the answer is a success or a client error, never a server error
        assert r.status_code < 500, (field, r.status_code, r.text)
