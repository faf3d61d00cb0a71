"""Todos through the HTTP API: CRUD, filters, validation, idempotency."""

from __future__ import annotations

import uuid


def test_todo_crud_round_trip(client, account):
    # Given a key with todos:rw
    h = account.headers("todos:rw")
    # When a todo is created with messy tags
    r = client.post(
        "/api/todos",
        json={
            "title": "Ship it",
            "tags": [" Work ", "URGENT", "work", ""],
            "priority": "high",
            "due_date": "2026-12-01T10:00:00Z",
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    todo = r.json()
    # Then tags are normalised and defaults applied
    assert todo["tags"] == ["work", "urgent"]
    assert todo["status"] == "pending"
    assert r.headers["cache-control"] == "private, no-store"
    # And it reads back, updates and deletes
    assert client.get(f"/api/todos/{todo['id']}", headers=h).json()["title"] == "Ship it"
    r = client.patch(f"/api/todos/{todo['id']}", json={"status": "done", "due_date": None}, headers=h)
    assert r.status_code == 200 and r.json()["status"] == "done" and r.json()["due_date"] is None
    assert r.json()["title"] == "Ship it"
    assert client.delete(f"/api/todos/{todo['id']}", headers=h).status_code == 204
    assert client.get(f"/api/todos/{todo['id']}", headers=h).status_code == 404
    assert client.delete(f"/api/todos/{todo['id']}", headers=h).status_code == 404


def test_todo_list_filters_normalise_tags_and_paginate(client, account):
    h = account.headers("todos:rw")
    for i in range(5):
        client.post(
            "/api/todos",
            json={
                "title": f"task {i}",
                "tags": ["Home"] if i % 2 else ["work"],
                "status": "done" if i == 4 else "pending",
            },
            headers=h,
        )
    r = client.get("/api/todos", params={"tag": "  HOME "}, headers=h)
    assert r.status_code == 200
    assert r.json()["total"] == 2 and {t["title"] for t in r.json()["items"]} == {"task 1", "task 3"}
    r = client.get("/api/todos", params={"status": "done"}, headers=h)
    assert [t["title"] for t in r.json()["items"]] == ["task 4"]
    r = client.get("/api/todos", params={"limit": 2, "offset": 0}, headers=h)
    assert r.json()["total"] == 5 and len(r.json()["items"]) == 2 and r.json()["limit"] == 2
    r = client.get("/api/todos", params={"limit": 2, "offset": 10}, headers=h)
    assert r.json()["total"] == 5 and r.json()["items"] == []
    r = client.get("/api/todos/search", params={"q": "TASK 3"}, headers=h)
    assert [t["title"] for t in r.json()["items"]] == ["task 3"]
    r = client.get("/api/todos/search", params={"q": "100%_"}, headers=h)
    assert r.json()["items"] == []


def test_out_of_range_limit_is_a_400_naming_the_field(client, account):
    r = client.get("/api/todos", params={"limit": 1000}, headers=account.headers("todos:r"))
    assert r.status_code == 400
    assert r.headers["content-type"].startswith("application/problem+json")
    assert [e["field"] for e in r.json()["errors"]] == ["limit"]


def test_validation_lists_every_bad_field_with_allowed_values(client, account):
    r = client.post(
        "/api/todos",
        json={"title": "", "status": "nope", "priority": "urgent", "colour": "red"},
        headers=account.headers("todos:rw"),
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert set(errors) == {"title", "status", "priority", "colour"}
    assert errors["status"]["allowed"] == ["pending", "in_progress", "done", "cancelled"]
    assert errors["priority"]["allowed"] == ["low", "medium", "high"]
    assert errors["colour"]["message"].startswith("unknown field")


def test_malformed_ids_are_400_and_unknown_ids_404(client, account):
    h = account.headers("todos:rw")
    assert client.get("/api/todos/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/todos/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.patch(f"/api/todos/{uuid.uuid4()}", json={"title": "x"}, headers=h).status_code == 404


def test_idempotency_key_replays_and_conflicts(client, account, owner_url):
    h = {**account.headers("todos:rw"), "Idempotency-Key": "create-1"}
    first = client.post("/api/todos", json={"title": "once"}, headers=h)
    again = client.post("/api/todos", json={"title": "once"}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and "idempotent-replay" not in first.headers
    assert again.json() == first.json()
    changed = client.post("/api/todos", json={"title": "twice"}, headers=h)
    assert changed.status_code == 409
    listing = client.get("/api/todos", headers=h).json()
    assert listing["total"] == 1


def test_nul_characters_are_a_400_not_a_500(client, account):
    h = account.headers("todos:rw")
    r = client.post("/api/todos", json={"title": "bad\u0000title", "tags": ["a\u0000"]}, headers=h)
    assert r.status_code == 400
    assert {e["field"] for e in r.json()["errors"]} == {"title", "tags[0]"}
    r = client.get("/api/todos", params={"q": "x\u0000y"}, headers=h)
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/problem+json")
