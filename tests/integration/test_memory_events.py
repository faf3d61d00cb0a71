"""The memory journal through the HTTP API: immutable idempotent events (replay, conflict, attribution in the hash,
concurrent replays), strict bodies with hints, read-back, scopes, and tenant isolation."""

from __future__ import annotations

import threading
import uuid
from typing import Any
from uuid import UUID

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict
from agentmate.core.principal import Principal
from agentmate.memory.schemas import EventCreate
from agentmate.memory.service import events

EVENTS = "/api/memory/events"


def _event(key: str, **over: Any) -> dict[str, Any]:
    return {
        "event_type": "observation",
        "idempotency_key": key,
        "session_id": "sess-1",
        "payload": {"text": "the build is green", "n": 1},
        **over,
    }


def _errors(r: Any) -> dict[str, dict[str, Any]]:
    return {e["field"]: e for e in r.json()["errors"]}


def _version(client, account, name: str = "web-research") -> str:
    r = client.post(
        "/api/skills/versions",
        json={"skill_name": name, "version": "1", "content": f"# {name}"},
        headers=account.headers("skills:rw"),
    )
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_an_event_is_created_once_and_a_replay_returns_it_with_200(client, account, owner_url):
    h = account.headers("memory:rw")
    # When an event is appended
    first = client.post(EVENTS, json=_event("k1"), headers=h)
    assert first.status_code == 201, first.text
    assert "x-idempotent-replay" not in first.headers and first.json()["created"] is True
    # And the same body is sent again (key order and whitespace differ)
    again = client.post(
        EVENTS,
        json={
            "payload": {"n": 1, "text": "the build is green"},
            "event_type": " Observation ",
            "idempotency_key": " k1 ",
            "session_id": "sess-1",
        },
        headers=h,
    )
    # Then it is a replay of the stored event
    assert again.status_code == 200 and again.headers["x-idempotent-replay"] == "true"
    assert again.json()["id"] == first.json()["id"] and again.json()["created"] is False
    assert again.json()["occurred_at"] == first.json()["occurred_at"]
    # And a different body under the same key is a 409 naming the stored event
    changed = client.post(EVENTS, json=_event("k1", payload={"text": "the build is red"}), headers=h)
    assert changed.status_code == 409 and changed.json()["existing_event_id"] == first.json()["id"]
    with psycopg.connect(owner_url) as conn:
        n = conn.execute(
            "SELECT count(*) FROM memory_events WHERE account_id = %s", (account.account_id,)
        ).fetchone()
    assert n == (1,)


def test_a_supplied_occurred_at_is_part_of_the_hash(client, account):
    h = account.headers("memory:rw")
    body = _event("k-time", occurred_at="2026-05-01T10:00:00+02:00")
    first = client.post(EVENTS, json=body, headers=h)
    assert first.status_code == 201 and first.json()["occurred_at"].startswith("2026-05-01T08:00:00")
    # The same instant written differently replays; another instant conflicts
    assert (
        client.post(EVENTS, json={**body, "occurred_at": "2026-05-01T08:00:00Z"}, headers=h).status_code
        == 200
    )
    assert (
        client.post(EVENTS, json={**body, "occurred_at": "2026-05-01T09:00:00Z"}, headers=h).status_code
        == 409
    )
    assert client.post(EVENTS, json=_event("k-time"), headers=h).status_code == 409


def test_skill_attribution_is_verified_in_the_account_and_hashed(client, account, other_account):
    h = account.headers("memory:rw")
    version_id = _version(client, account)
    # An unattributed event, then a "replay" that adds attribution: 409, not a silent replay
    assert client.post(EVENTS, json=_event("k-attr"), headers=h).status_code == 201
    r = client.post(EVENTS, json=_event("k-attr", skill_version_id=version_id), headers=h)
    assert r.status_code == 409
    # An attributed event replays only with the same attribution
    assert (
        client.post(EVENTS, json=_event("k-attr2", skill_version_id=version_id), headers=h).status_code == 201
    )
    assert (
        client.post(EVENTS, json=_event("k-attr2", skill_version_id=version_id), headers=h).status_code == 200
    )
    other_version = _version(client, account, "other-skill")
    assert (
        client.post(EVENTS, json=_event("k-attr2", skill_version_id=other_version), headers=h).status_code
        == 409
    )
    # Another account's version (or an unknown one) is a 400 on skill_version_id
    foreign = _version(client, other_account)
    for bad in (foreign, str(uuid.uuid4())):
        r = client.post(EVENTS, json=_event(f"k-{bad}", skill_version_id=bad), headers=h)
        assert r.status_code == 400 and "skill_version_id" in _errors(r)
    # An empty string means "no attribution"
    assert (
        client.post(EVENTS, json=_event("k-empty", skill_version_id=""), headers=h).json()["skill_version_id"]
        is None
    )


def test_concurrent_replays_of_one_key_store_exactly_one_event(account, owner_url):
    # Given eight threads sending the same event at the same moment through the service
    principal = Principal(account_id=UUID(account.account_id), user_id=UUID(account.user_id), via="jwt")
    db = get_database()
    body = EventCreate.model_validate(_event("race-key", payload={"race": True}))
    barrier = threading.Barrier(8)
    outcomes: list[Any] = []
    lock = threading.Lock()

    def send() -> None:
        barrier.wait()
        try:
            result: Any = events.record_event(db, principal, body)
        except Exception as exc:  # recorded and asserted below
            result = exc
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    # Then exactly one was created, the others replayed the same event
    assert all(not isinstance(o, Exception) for o in outcomes), outcomes
    assert sorted(o.replay for o in outcomes) == [False] + [True] * 7
    assert len({o.value.id for o in outcomes}) == 1
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT count(*) FROM memory_events WHERE account_id = %s AND idempotency_key = %s",
            (account.account_id, "race-key"),
        ).fetchone()
    assert rows == (1,)


def test_content_outside_payload_is_refused_with_a_hint_and_every_bad_field_is_named(client, account):
    r = client.post(
        EVENTS,
        json={
            "event_type": "thought",
            "idempotency_key": "",
            "content": "lost body",
            "scope_type": "planet",
            "colour": "red",
            "type": "note",
        },
        headers=account.headers("memory:rw"),
    )
    assert r.status_code == 400
    errors = _errors(r)
    assert set(errors) == {"event_type", "idempotency_key", "content", "scope_type", "colour", "type"}
    assert errors["content"]["message"] == "unknown field (event content belongs inside payload)"
    assert errors["type"]["message"] == "unknown field (use event_type)"
    assert errors["colour"]["message"] == "unknown field"
    assert errors["event_type"]["allowed"] == [
        "goal",
        "observation",
        "action",
        "decision",
        "issue",
        "attempt",
        "outcome",
        "correction",
        "checkpoint",
        "note",
    ]
    assert errors["scope_type"]["allowed"] == ["global", "project", "repository", "agent", "session"]


def test_cross_field_rules_are_reported_together(client, account):
    h = account.headers("memory:rw")
    r = client.post(
        EVENTS,
        json={
            "event_type": "note",
            "idempotency_key": "x",
            "scope_type": "repository",
            "sequence_no": 3,
            "source_type": "url",
        },
        headers=h,
    )
    assert r.status_code == 400
    # each cross-field rule names both of its fields
    assert set(_errors(r)) == {
        "scope_key",
        "scope_type",
        "sequence_no",
        "session_id",
        "source_type",
        "source_id",
    }
    r = client.post(
        EVENTS, json={"event_type": "note", "idempotency_key": "x", "scope_key": "acme/app"}, headers=h
    )
    assert r.status_code == 400 and _errors(r)["scope_key"]["allowed"]


def test_checkpoint_events_have_a_strict_payload(client, account):
    h = account.headers("memory:rw")
    r = client.post(
        EVENTS,
        json={
            "event_type": "checkpoint",
            "idempotency_key": "cp",
            "session_id": "s",
            "payload": {"goal": "", "next": "a string", "blocked_on": "x", "notes": 3},
        },
        headers=h,
    )
    assert r.status_code == 400
    errors = _errors(r)
    assert set(errors) == {"payload.goal", "payload.next", "payload.blocked_on", "payload.notes"}
    assert errors["payload.blocked_on"]["allowed"] == ["goal", "label", "notes", "done", "next", "open"]
    r = client.post(
        EVENTS,
        json={"event_type": "checkpoint", "idempotency_key": "cp", "payload": {"goal": "g"}},
        headers=h,
    )
    assert r.status_code == 400 and "session_id" in _errors(r)


def test_a_sequence_number_is_unique_within_a_session(client, account):
    h = account.headers("memory:rw")
    assert client.post(EVENTS, json=_event("s1", sequence_no=1), headers=h).status_code == 201
    r = client.post(EVENTS, json=_event("s2", sequence_no=1), headers=h)
    assert r.status_code == 409 and "sequence_no" in r.json()["detail"]
    assert (
        client.post(EVENTS, json=_event("s3", sequence_no=1, session_id="sess-2"), headers=h).status_code
        == 201
    )


def test_events_read_back_with_filters_and_an_empty_payload_warning(client, account):
    h = account.headers("memory:rw")
    ids = []
    for i, (etype, scope) in enumerate([("goal", "acme/app"), ("note", "acme/app"), ("note", "acme/lib")]):
        r = client.post(
            EVENTS,
            json={
                "event_type": etype,
                "idempotency_key": f"rb-{i}",
                "scope_type": "repository",
                "scope_key": scope,
                "session_id": "sess-rb",
                "payload": {"i": i},
            },
            headers=h,
        )
        ids.append(r.json()["id"])
    empty = client.post(EVENTS, json={"event_type": "note", "idempotency_key": "rb-empty"}, headers=h)
    assert empty.status_code == 201 and "payload is empty" in empty.json()["warning"]
    r = client.get(EVENTS, params={"scope_type": "repository", "scope_key": "acme/app"}, headers=h).json()
    assert r["total"] == 2 and [e["id"] for e in r["items"]] == [ids[1], ids[0]]
    r = client.get(EVENTS, params={"event_type": "note", "session_id": "sess-rb"}, headers=h).json()
    assert r["total"] == 2
    r = client.get(EVENTS, params={"limit": 1, "offset": 1}, headers=h).json()
    assert r["total"] == 4 and len(r["items"]) == 1 and r["limit"] == 1
    assert client.get(EVENTS, params={"event_type": "thought"}, headers=h).status_code == 400
    one = client.get(f"{EVENTS}/{ids[0]}", headers=h).json()
    assert one["payload"] == {"i": 0} and one["warning"] is None
    assert "payload is empty" in client.get(f"{EVENTS}/{empty.json()['id']}", headers=h).json()["warning"]
    assert client.get(f"{EVENTS}/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.get(f"{EVENTS}/not-a-uuid", headers=h).status_code == 400


def test_events_are_immutable_for_the_application_role(client, account, owner_url):
    r = client.post(EVENTS, json=_event("imm"), headers=account.headers("memory:rw"))
    app_url = owner_url.replace("postgresql://postgres@", "postgresql://agentmate_app@")
    with psycopg.connect(app_url) as conn:
        conn.execute("SELECT set_config('app.account_id', %s, false)", (account.account_id,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("UPDATE memory_events SET payload = '{}' WHERE id = %s", (r.json()["id"],))


def test_scopes_list_what_is_in_use_with_counts(client, account):
    h = account.headers("memory:rw")
    client.post(
        EVENTS,
        json={
            "event_type": "note",
            "idempotency_key": "sc1",
            "scope_type": "repository",
            "scope_key": "acme/app",
            "payload": {"a": 1},
        },
        headers=h,
    )
    client.post(EVENTS, json={"event_type": "note", "idempotency_key": "sc2", "payload": {"a": 1}}, headers=h)
    r = client.post(
        EVENTS,
        json={
            "event_type": "note",
            "idempotency_key": "sc3",
            "scope_type": "project",
            "scope_key": "apollo",
            "payload": {"a": 1},
        },
        headers=h,
    )
    client.post(
        "/api/memory/entries",
        json={
            "memory_type": "semantic",
            "content": "Apollo uses Postgres",
            "scope_type": "project",
            "scope_key": "apollo",
            "source_event_id": r.json()["id"],
        },
        headers=h,
    )
    page = client.get("/api/memory/scopes", headers=account.headers("memory:r")).json()
    by_scope = {(s["scope_type"], s["scope_key"]): s for s in page["items"]}
    assert page["total"] == 3 and page["note"]
    assert (
        by_scope[("project", "apollo")]["entry_count"] == 1
        and by_scope[("project", "apollo")]["event_count"] == 1
    )
    assert by_scope[("repository", "acme/app")]["entry_count"] == 0
    assert client.get("/api/memory/scopes", params={"limit": 1}, headers=h).json()["total"] == 3


def test_events_are_scoped_and_tenant_isolated(client, account, other_account):
    r = client.post(EVENTS, json=_event("iso"), headers=account.headers("memory:rw"))
    event_id = r.json()["id"]
    assert client.post(EVENTS, json=_event("ro"), headers=account.headers("memory:r")).status_code == 403
    assert client.get(EVENTS, headers=account.headers("skills:rw")).status_code == 403
    h2 = other_account.headers("memory:rw")
    assert client.get(f"{EVENTS}/{event_id}", headers=h2).status_code == 404
    assert client.get(EVENTS, headers=h2).json()["total"] == 0
    assert client.get("/api/memory/scopes", headers=h2).json()["total"] == 0
    # The same idempotency key is independent per account
    assert client.post(EVENTS, json=_event("iso", payload={"other": True}), headers=h2).status_code == 201


def test_the_service_reports_conflicts_without_http(account):
    principal = Principal(account_id=UUID(account.account_id), user_id=UUID(account.user_id), via="jwt")
    db = get_database()
    events.record_event(db, principal, EventCreate.model_validate(_event("svc")))
    with pytest.raises(Conflict):
        events.record_event(db, principal, EventCreate.model_validate(_event("svc", payload={"x": 2})))


@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_the_memory_lambda_handler_serves_events_with_the_replay_header(account):
    from functions.memory.app import handler
    from tests.apigw import LambdaContext, http_event, parse_response

    headers = {**account.headers("memory:rw"), "content-type": "application/json"}
    body = _event("lambda-1")
    first = parse_response(
        handler(http_event("POST", EVENTS, headers=headers, json_body=body), LambdaContext())
    )
    again = parse_response(
        handler(http_event("POST", EVENTS, headers=headers, json_body=body), LambdaContext())
    )
    assert first.status_code == 201 and again.status_code == 200
    assert again.headers["x-idempotent-replay"] == "true" and again.json()["id"] == first.json()["id"]
    assert first.headers["cache-control"] == "private, no-store"


def test_every_replay_carries_both_replay_headers(client, account):
    # One rule for agents (docs/decisions.md D17): body-keyed and header-keyed replays say so the same way.
    h = account.headers("memory:rw", "todos:rw")
    event = {"event_type": "note", "idempotency_key": "replay-headers", "payload": {"text": "x"}}
    client.post("/api/memory/events", json=event, headers=h)
    body_keyed = client.post("/api/memory/events", json=event, headers=h)
    client.post("/api/todos", json={"title": "t"}, headers={**h, "Idempotency-Key": "replay-headers"})
    header_keyed = client.post(
        "/api/todos", json={"title": "t"}, headers={**h, "Idempotency-Key": "replay-headers"}
    )
    assert (body_keyed.status_code, header_keyed.status_code) == (200, 201)
    for r in (body_keyed, header_keyed):
        assert r.headers["idempotent-replay"] == "true" and r.headers["x-idempotent-replay"] == "true"
