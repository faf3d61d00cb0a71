"""Skill execution records through the HTTP API: versions (publish, hash rules, activation) and logs (version
binding, filters, stats, signals), plus tenant isolation."""

from __future__ import annotations

import hashlib
import uuid

import psycopg
import pytest

BODY = "---\nname: web-research\ndescription: Research a question on the web\n---\n# Web research\nSearch, read, cite.\n"


def _publish(client, h, **over):
    body = {"skill_name": "web-research", "version": "1.0.0", "content": BODY, **over}
    return client.post("/api/skills/versions", json=body, headers=h)


def test_publish_computes_the_content_hash_and_refuses_a_mismatching_one(client, account):
    h = account.headers("skills:rw")
    # When a version is published without a hash
    r = _publish(client, h)
    assert r.status_code == 201, r.text
    v = r.json()
    # Then the server computed sha256(content), kept the body verbatim, and it is not active yet
    assert v["content_hash"] == hashlib.sha256(BODY.encode()).hexdigest()
    assert v["package_hash"] == v["content_hash"]
    assert v["content"] == BODY and v["is_active"] is False and v["created"] is True
    # And a supplied hash that does not match the body is a 400 naming content_hash
    r = _publish(client, h, version="1.0.1", content=BODY + "x", content_hash="0" * 64)
    assert r.status_code == 400
    assert [e["field"] for e in r.json()["errors"]] == ["content_hash"]
    # And a matching supplied hash (any case) is accepted
    other = BODY + "more\n"
    r = _publish(
        client,
        h,
        version="1.1.0",
        content=other,
        content_hash=hashlib.sha256(other.encode()).hexdigest().upper(),
    )
    assert r.status_code == 201, r.text


def test_republishing_the_same_body_and_label_is_a_no_op_but_label_or_body_reuse_conflicts(client, account):
    h = account.headers("skills:rw")
    first = _publish(client, h).json()
    # Same body, same label: the existing version comes back with 200
    again = _publish(client, h)
    assert again.status_code == 200 and again.json()["id"] == first["id"] and again.json()["created"] is False
    assert again.headers["x-idempotent-replay"] == "true"
    # Same label, different body: 409
    r = _publish(client, h, content=BODY + "changed")
    assert r.status_code == 409 and r.json()["existing_version_id"] == first["id"]
    # Same body, different label: 409
    r = _publish(client, h, version="9.9.9")
    assert r.status_code == 409 and r.json()["existing_version_id"] == first["id"]


def test_exactly_one_version_per_skill_is_active_and_active_lookup_follows_activation(client, account):
    h = account.headers("skills:rw")
    v1 = _publish(client, h, activate=True).json()
    v2 = _publish(client, h, version="2.0.0", content=BODY + "v2").json()
    other_skill = _publish(client, h, skill_name="other", activate=True).json()
    assert v1["is_active"] and not v2["is_active"]
    r = client.get("/api/skills/versions/active", params={"skill_name": "web-research"}, headers=h)
    assert r.status_code == 200 and r.json()["id"] == v1["id"] and r.json()["content"] == BODY
    # When v2 is activated
    r = client.post(f"/api/skills/versions/{v2['id']}/activate", headers=h)
    assert r.status_code == 200 and r.json()["is_active"] is True
    # Then it is the only active version of its skill; the other skill keeps its own active version
    assert (
        client.get("/api/skills/versions/active", params={"skill_name": "web-research"}, headers=h).json()[
            "id"
        ]
        == v2["id"]
    )
    listing = client.get(
        "/api/skills/versions", params={"skill_name": "web-research", "active": "true"}, headers=h
    ).json()
    assert [v["id"] for v in listing["items"]] == [v2["id"]] and "content" not in listing["items"][0]
    assert (
        client.get("/api/skills/versions/active", params={"skill_name": "other"}, headers=h).json()["id"]
        == other_skill["id"]
    )
    # And activating again is idempotent
    assert client.post(f"/api/skills/versions/{v2['id']}/activate", headers=h).json()["is_active"] is True
    # And unknown ids / skills without an active version are 404
    assert client.post(f"/api/skills/versions/{uuid.uuid4()}/activate", headers=h).status_code == 404
    assert (
        client.get("/api/skills/versions/active", params={"skill_name": "nope"}, headers=h).status_code == 404
    )
    assert client.get("/api/skills/versions/active", headers=h).status_code == 400


def test_the_database_refuses_a_second_active_version(client, account, owner_url):
    h = account.headers("skills:rw")
    v1 = _publish(client, h, activate=True).json()
    v2 = _publish(client, h, version="2", content="other").json()
    with psycopg.connect(owner_url) as conn, pytest.raises(psycopg.errors.UniqueViolation):
        conn.execute("UPDATE skill_versions SET is_active = true WHERE id = %s", (v2["id"],))
    assert v1["is_active"]


def test_a_log_bound_to_a_version_takes_its_label_and_must_match_account_and_skill(
    client, account, other_account
):
    h = account.headers("skills:rw")
    v = _publish(client, h).json()
    # When a log names the version id and a different legacy label
    r = client.post(
        "/api/skills/logs",
        json={
            "skill_name": "web-research",
            "skill_version": "old-label",
            "skill_version_id": v["id"],
            "outcome": "success",
            "tool_calls": [{"name": "fetch"}],
            "duration_ms": 1200,
        },
        headers=h,
    )
    assert r.status_code == 201, r.text
    # Then the label is the version's own
    assert r.json()["skill_version"] == "1.0.0" and r.json()["skill_version_id"] == v["id"]
    # And a version of another skill is refused, naming the field
    other = _publish(client, h, skill_name="other-skill").json()
    r = client.post(
        "/api/skills/logs",
        json={"skill_name": "web-research", "skill_version_id": other["id"], "outcome": "success"},
        headers=h,
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "skill_version_id"
    assert "other-skill" in r.json()["errors"][0]["message"]
    # And another account's version is unknown here
    foreign = _publish(client, other_account.headers("skills:rw")).json()
    r = client.post(
        "/api/skills/logs",
        json={"skill_name": "web-research", "skill_version_id": foreign["id"], "outcome": "success"},
        headers=h,
    )
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "skill_version_id"
    # And an unbound log without a label is "unknown"
    r = client.post("/api/skills/logs", json={"skill_name": "web-research", "outcome": "failure"}, headers=h)
    assert r.json()["skill_version"] == "unknown" and r.json()["skill_version_id"] is None


def test_log_validation_lists_bad_fields_with_allowed_outcomes(client, account):
    r = client.post(
        "/api/skills/logs",
        json={"skill_name": "", "outcome": "great", "duration_ms": -1, "extra": 1},
        headers=account.headers("skills:rw"),
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert set(errors) == {"skill_name", "outcome", "duration_ms", "extra"}
    assert errors["outcome"]["allowed"] == ["success", "failure", "partial", "user_corrected"]


def test_log_creates_honour_the_idempotency_key_header(client, account):
    h = {**account.headers("skills:rw"), "Idempotency-Key": "log-1"}
    body = {"skill_name": "s", "outcome": "success"}
    first = client.post("/api/skills/logs", json=body, headers=h)
    again = client.post("/api/skills/logs", json=body, headers=h)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"] and again.headers["idempotent-replay"] == "true"
    assert client.post("/api/skills/logs", json={**body, "outcome": "failure"}, headers=h).status_code == 409


def test_logs_filter_and_paginate_newest_first(client, account):
    h = account.headers("skills:rw")
    for i, outcome in enumerate(["success", "failure", "success", "partial"]):
        client.post(
            "/api/skills/logs",
            json={
                "skill_name": "a" if i < 3 else "b",
                "outcome": outcome,
                "agent_id": f"agent-{i % 2}",
                "session_id": "s1",
            },
            headers=h,
        )
    r = client.get("/api/skills/logs", params={"skill_name": "a"}, headers=h).json()
    assert r["total"] == 3 and [x["outcome"] for x in r["items"]] == ["success", "failure", "success"]
    r = client.get("/api/skills/logs", params={"outcome": "success", "agent_id": "agent-0"}, headers=h).json()
    assert r["total"] == 2
    r = client.get("/api/skills/logs", params={"limit": 1, "offset": 1}, headers=h).json()
    assert r["total"] == 4 and len(r["items"]) == 1
    assert client.get("/api/skills/logs", params={"outcome": "meh"}, headers=h).status_code == 400


def test_stats_report_counts_trigger_rate_outcomes_and_versions(client, account):
    h = account.headers("skills:rw")
    v = _publish(client, h).json()
    runs = [
        ("success", True, 100),
        ("success", True, 300),
        ("failure", True, None),
        ("user_corrected", False, 50),
    ]
    for outcome, triggered, duration in runs:
        client.post(
            "/api/skills/logs",
            json={
                "skill_name": "web-research",
                "outcome": outcome,
                "was_triggered": triggered,
                "duration_ms": duration,
                "skill_version_id": v["id"] if triggered else None,
            },
            headers=h,
        )
    s = client.get("/api/skills/stats", params={"skill_name": "web-research"}, headers=h).json()
    assert s["total_runs"] == 4 and s["triggered_runs"] == 3 and s["not_triggered_runs"] == 1
    assert s["trigger_rate"] == 0.75 and s["success_rate"] == 0.5 and s["correction_rate"] == 0.25
    assert s["outcomes"] == {"success": 2, "failure": 1, "partial": 0, "user_corrected": 1}
    assert s["avg_duration_ms"] == 150 and s["last_run_at"] is not None
    by_version = {b["skill_version"]: b for b in s["by_version"]}
    assert by_version["1.0.0"]["total_runs"] == 3 and by_version["unknown"]["total_runs"] == 1
    empty = client.get("/api/skills/stats", params={"skill_name": "never-ran"}, headers=h).json()
    assert empty["total_runs"] == 0 and empty["trigger_rate"] == 0


def test_signals_are_the_recent_failures_partials_and_corrections(client, account):
    h = account.headers("skills:rw")
    for outcome in ["failure", "success", "user_corrected", "partial", "success"]:
        client.post(
            "/api/skills/logs",
            json={"skill_name": "s", "outcome": outcome, "failure_reason": f"why {outcome}"},
            headers=h,
        )
    r = client.get("/api/skills/signals", params={"skill_name": "s", "limit": 2}, headers=h).json()
    assert r["total"] == 3 and [x["outcome"] for x in r["items"]] == ["partial", "user_corrected"]
    assert (
        client.get("/api/skills/signals", params={"skill_name": "s", "limit": 51}, headers=h).status_code
        == 400
    )


def test_skill_records_are_scoped_and_tenant_isolated(client, account, other_account):
    # A read-only key cannot write; a memory key cannot read skills
    assert _publish(client, account.headers("skills:r")).status_code == 403
    assert client.get("/api/skills/logs", headers=account.headers("memory:rw")).status_code == 403
    v = _publish(client, account.headers("skills:rw"), activate=True).json()
    client.post(
        "/api/skills/logs",
        json={"skill_name": "web-research", "outcome": "success"},
        headers=account.headers("skills:rw"),
    )
    h2 = other_account.headers("skills:rw")
    # The other account sees none of it
    assert client.get(f"/api/skills/versions/{v['id']}", headers=h2).status_code == 404
    assert client.post(f"/api/skills/versions/{v['id']}/activate", headers=h2).status_code == 404
    assert client.get("/api/skills/versions", headers=h2).json()["total"] == 0
    assert client.get("/api/skills/logs", headers=h2).json()["total"] == 0
    assert (
        client.get(
            "/api/skills/versions/active", params={"skill_name": "web-research"}, headers=h2
        ).status_code
        == 404
    )
    assert (
        client.get("/api/skills/stats", params={"skill_name": "web-research"}, headers=h2).json()[
            "total_runs"
        ]
        == 0
    )
    # And the same label can be published independently there
    assert _publish(client, h2).status_code == 201
