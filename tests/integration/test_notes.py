"""Notes through the HTTP API: CRUD, filters, append, validation, idempotency, tenancy."""

from __future__ import annotations

import uuid

MIB = 1_048_576


def test_note_crud_round_trip(client, account):
    # Given a key with notes:rw
    h = account.headers("notes:rw")
    # When a note is created with messy tags and untrimmed content
    r = client.post(
        "/api/notes",
        json={"title": "  Plan  ", "content": "line 1\n", "tags": [" Work ", "WORK", ""]},
        headers=h,
    )
    assert r.status_code == 201, r.text
    note = r.json()
    # Then the title is trimmed, tags normalised and the content kept verbatim
    assert note["title"] == "Plan" and note["tags"] == ["work"] and note["content"] == "line 1\n"
    assert set(note) == {"id", "title", "content", "tags", "created_at", "updated_at"}
    # And it reads back, updates (only the fields sent) and deletes
    assert client.get(f"/api/notes/{note['id']}", headers=h).json() == note
    r = client.patch(f"/api/notes/{note['id']}", json={"content": "new", "tags": ["Ideas"]}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["content"] == "new" and r.json()["tags"] == ["ideas"] and r.json()["title"] == "Plan"
    assert r.json()["updated_at"] >= note["updated_at"]
    assert client.delete(f"/api/notes/{note['id']}", headers=h).status_code == 204
    assert client.get(f"/api/notes/{note['id']}", headers=h).status_code == 404
    assert client.delete(f"/api/notes/{note['id']}", headers=h).status_code == 404


def test_append_adds_text_verbatim_with_no_separator_and_returns_the_note(client, account):
    h = account.headers("notes:rw")
    note = client.post("/api/notes", json={"title": "log", "content": "a"}, headers=h).json()
    # When text is appended twice, once with the caller's own newline
    r = client.patch(f"/api/notes/{note['id']}/append", json={"content": "b"}, headers=h)
    assert r.status_code == 200, r.text
    r = client.patch(f"/api/notes/{note['id']}/append", json={"content": "\n  c "}, headers=h)
    # Then the content is the exact concatenation, in the normal Note shape (no legacy envelope)
    assert r.json()["content"] == "ab\n  c "
    assert set(r.json()) == {"id", "title", "content", "tags", "created_at", "updated_at"}
    assert client.get(f"/api/notes/{note['id']}", headers=h).json()["content"] == "ab\n  c "


def test_append_is_strict_and_404s_for_unknown_notes(client, account):
    h = account.headers("notes:rw")
    note = client.post("/api/notes", json={"title": "t"}, headers=h).json()
    r = client.patch(f"/api/notes/{note['id']}/append", json={"content": "x", "text": "y"}, headers=h)
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["text"]
    r = client.patch(f"/api/notes/{note['id']}/append", json={}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0] == {"field": "content", "message": "field required"}
    r = client.patch(f"/api/notes/{note['id']}/append", json={"content": ""}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "content"
    r = client.patch(f"/api/notes/{uuid.uuid4()}/append", json={"content": "x"}, headers=h)
    assert r.status_code == 404
    assert client.patch("/api/notes/nope/append", json={"content": "x"}, headers=h).status_code == 400


def test_content_is_capped_at_one_mebibyte_including_appends(client, account):
    h = account.headers("notes:rw")
    # Given a note exactly at the limit (multi-byte characters count as bytes)
    r = client.post("/api/notes", json={"title": "big", "content": "é" * (MIB // 2)}, headers=h)
    assert r.status_code == 201
    note = r.json()
    # When one more byte is appended, or a bigger note is created
    r = client.patch(f"/api/notes/{note['id']}/append", json={"content": "x"}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "content"
    r = client.post("/api/notes", json={"title": "bigger", "content": "x" * (MIB + 1)}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "content"
    # Then the stored note is unchanged
    assert len(client.get(f"/api/notes/{note['id']}", headers=h).json()["content"]) == MIB // 2


def test_list_filters_by_text_and_normalised_tags_and_paginates(client, account):
    h = account.headers("notes:rw")
    client.post(
        "/api/notes", json={"title": "Groceries", "content": "milk, EGGS", "tags": ["Home"]}, headers=h
    )
    client.post(
        "/api/notes",
        json={"title": "Standup", "content": "eggs benedict later", "tags": ["work", "daily"]},
        headers=h,
    )
    client.post("/api/notes", json={"title": "Retro 100%", "content": "x", "tags": ["work"]}, headers=h)

    def titles(params, path="/api/notes"):
        r = client.get(path, params=params, headers=h)
        assert r.status_code == 200, r.text
        return [n["title"] for n in r.json()["items"]]

    assert titles({"q": "EgGs"}) == ["Standup", "Groceries"]
    assert titles({"q": "retro"}) == ["Retro 100%"]
    assert titles({"tag": "  HOME "}) == ["Groceries"]
    assert titles({"tags": "WORK, Daily"}) == ["Standup"]
    assert titles({"tag": "work", "q": "100%"}) == ["Retro 100%"]
    assert titles({"q": "100%_"}) == []
    assert titles({"q": "eggs"}, "/api/notes/search") == ["Standup", "Groceries"]
    r = client.get("/api/notes", params={"limit": 2, "offset": 2}, headers=h).json()
    assert r["total"] == 3 and r["limit"] == 2 and r["offset"] == 2 and len(r["items"]) == 1
    assert client.get("/api/notes", params={"limit": 101}, headers=h).status_code == 400


def test_validation_lists_every_bad_field(client, account):
    h = account.headers("notes:rw")
    r = client.post("/api/notes", json={"title": " ", "content": 5, "tags": "x", "colour": "red"}, headers=h)
    assert r.status_code == 400
    assert {e["field"] for e in r.json()["errors"]} == {"title", "content", "tags", "colour"}
    r = client.post("/api/notes", json={"title": "x" * 501}, headers=h)
    assert [e["field"] for e in r.json()["errors"]] == ["title"]
    note = client.post("/api/notes", json={"title": "t"}, headers=h).json()
    r = client.patch(
        f"/api/notes/{note['id']}", json={"title": None, "content": None, "tags": None}, headers=h
    )
    assert r.status_code == 400
    null = "may not be null: omit the field to leave it unchanged"
    assert [(e["field"], e["message"]) for e in r.json()["errors"]] == [
        ("title", null),
        ("content", null),
        ("tags", null),
    ]


def test_nul_characters_are_a_400_not_a_server_error(client, account):
    h = account.headers("notes:rw")
    r = client.post(
        "/api/notes", json={"title": "a\u0000", "content": "b\u0000", "tags": ["c\u0000"]}, headers=h
    )
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["title", "content", "tags[0]"]
    r = client.get("/api/notes", params={"q": "a\u0000", "tag": "b\u0000"}, headers=h)
    assert r.status_code == 400 and {e["field"] for e in r.json()["errors"]} == {"q", "tag"}


def test_ids_scopes_and_tenancy(client, account, other_account):
    h = account.headers("notes:rw")
    note = client.post("/api/notes", json={"title": "mine"}, headers=h).json()
    # Malformed ids are 400, unknown ids 404
    assert client.get("/api/notes/not-a-uuid", headers=h).status_code == 400
    assert client.get(f"/api/notes/{uuid.uuid4()}", headers=h).status_code == 404
    assert client.patch(f"/api/notes/{uuid.uuid4()}", json={"title": "x"}, headers=h).status_code == 404
    # A read-only key reads but cannot write
    ro = account.headers("notes:r")
    assert client.get(f"/api/notes/{note['id']}", headers=ro).status_code == 200
    assert client.post("/api/notes", json={"title": "x"}, headers=ro).status_code == 403
    assert (
        client.patch(f"/api/notes/{note['id']}/append", json={"content": "x"}, headers=ro).status_code == 403
    )
    # Another account sees nothing of it
    oh = other_account.headers("notes:rw")
    assert client.get(f"/api/notes/{note['id']}", headers=oh).status_code == 404
    assert client.delete(f"/api/notes/{note['id']}", headers=oh).status_code == 404
    assert client.get("/api/notes", headers=oh).json()["total"] == 0


def test_idempotency_key_replays_and_conflicts(client, account):
    h = {**account.headers("notes:rw"), "Idempotency-Key": "note-1"}
    first = client.post("/api/notes", json={"title": "once", "tags": ["A"]}, headers=h)
    again = client.post("/api/notes", json={"title": "once", "tags": ["a"]}, headers=h)
    assert first.status_code == 201 and again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and "idempotent-replay" not in first.headers
    assert again.json() == first.json()
    assert client.post("/api/notes", json={"title": "twice"}, headers=h).status_code == 409
    assert client.get("/api/notes", headers=h).json()["total"] == 1
