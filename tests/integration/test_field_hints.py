"""Hints belong to the model that owns the field (``field_hints``), and a missing enum field lists its values."""

from __future__ import annotations

from agentmate.memory.schemas import EVENT_TYPES


def _errors(r):
    assert r.status_code == 400, r.text
    return {e["field"]: e for e in r.json()["errors"]}


def test_a_memory_hint_is_not_given_to_a_todo(client, account):
    r = client.post("/api/todos", json={"title": "x", "content": "y"}, headers=account.headers("todos:rw"))
    assert _errors(r)["content"] == {
        "field": "content",
        "message": "unknown field",
        "allowed": ["description", "due_date", "priority", "status", "tags", "title"],
    }


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


FILE_FIELDS = ["content", "content_base64", "mime_type", "path", "sha256", "size_bytes"]


def test_a_snapshot_file_sent_with_name_and_body_is_pointed_at_path_and_content(client, account):
    # Given a local skill source and a knowledge source, a file sent as {name, body} (issue 23 item 7)
    h = account.headers("skills:rw", "knowledge:rw")
    skill = client.post(
        "/api/skills/sources",
        json={"type": "local", "repository_url": "file:///skills", "package_path": "hints/skill"},
        headers=h,
    )
    kb = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "hints/kb"},
        headers=h,
    )
    assert skill.status_code == 201 and kb.status_code == 201, (skill.text, kb.text)
    for url in (
        f"/api/skills/sources/{skill.json()['id']}/snapshots",
        f"/api/knowledge/sources/{kb.json()['id']}/snapshots",
    ):
        # When it is pushed
        r = client.post(url, json={"files": [{"name": "SKILL.md", "body": "# x"}]}, headers=h)
        # Then each unknown field names the field meant, the fix and the fields a file takes
        errors = _errors(r)
        assert errors["files[0].name"] == {
            "field": "files[0].name",
            "message": "unknown field (use path (the file's relative path inside the package))",
            "allowed": FILE_FIELDS,
            "likely_meant": "path",
        }
        assert errors["files[0].body"]["likely_meant"] == "content"
        assert (
            errors["files[0].body"]["message"]
            == "unknown field (use content (UTF-8 text; content_base64 for bytes))"
        )


def test_an_unknown_field_without_a_hint_asks_did_you_mean(client, account):
    h = account.headers("todos:rw", "notes:rw")
    r = client.post("/api/todos", json={"title": "x", "dueDate": None, "priorty": "high"}, headers=h)
    errors = _errors(r)
    assert errors["dueDate"]["message"] == "unknown field (did you mean due_date?)"
    assert errors["dueDate"]["likely_meant"] == "due_date"
    assert errors["priorty"]["message"] == "unknown field (did you mean priority?)"
    # A name close to nothing gets no guess, only the fields the model takes
    r = client.post("/api/todos", json={"title": "x", "zzzz": 1}, headers=h)
    assert "likely_meant" not in _errors(r)["zzzz"] and _errors(r)["zzzz"]["message"] == "unknown field"


def test_a_union_value_that_fits_no_member_is_one_error_with_the_allowed_range(client, account):
    # max_chars is 0 (the default) or 500..200000: "big" used to be two errors, max_chars.literal[0] and
    # max_chars.constrained-int, neither naming the range
    r = client.post(
        "/api/context/pack", json={"task": "t", "max_chars": "big"}, headers=account.headers("memory:r")
    )
    assert r.json()["errors"] == [
        {
            "field": "max_chars",
            "message": "must be an integer 500..200000 (0 or omitted = 12000)",
            "allowed": [0, "500..200000"],
        }
    ]


def test_an_unknown_query_parameter_carries_the_parameter_meant(client, account):
    r = client.get("/api/memory/events", params={"session": "s"}, headers=account.headers("memory:r"))
    error = _errors(r)["session"]
    assert (
        error["likely_meant"] == "session_id"
        and error["message"] == "unknown query parameter (use session_id)"
    )


def test_the_problem_schema_documents_likely_meant(client):
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["ProblemField"]
    meant = schema["properties"]["likely_meant"]
    assert meant["anyOf"][0]["type"] == "string" and "unknown field" in meant["description"]
