"""Memory lifecycle through the HTTP API: supersede chains (cycles, replays, re-pointing, projection removal),
feedback signals and their counter projection, checkpoints (strict payload, content-derived key), resume, the
timeline and attribution resolutions."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from agentmate.memory.service.checkpoints import UNKNOWN_SESSION_NOTE

ENTRIES = "/api/memory/entries"
EVENTS = "/api/memory/events"


def _entry(client: Any, h: dict[str, str], content: str, **over: Any) -> dict[str, Any]:
    body = {
        "memory_type": "semantic",
        "content": content,
        "evidence": [{"source_type": "test", "source_id": "t"}],
        **over,
    }
    r = client.post(ENTRIES, json=body, headers=h)
    assert r.status_code == 201, r.text
    return r.json()


def _supersede(client: Any, h: dict[str, str], new: str, old: str) -> Any:
    return client.post(f"{ENTRIES}/{new}/supersede", json={"superseded_id": old}, headers=h)


def _projection_rows(owner_url: str, entry_id: str) -> int:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM retrieval_documents WHERE source_id = %s", (entry_id,)
        ).fetchone()
    return row[0] if row else 0


# -- supersede ---------------------------------------------------------------------------------------------------


def test_supersede_closes_the_old_entry_and_removes_its_projection(client, account, owner_url):
    h = account.headers("memory:rw")
    old = _entry(client, h, "The API rate limit is 100 requests per minute.")
    new = _entry(client, h, "The API rate limit is 500 requests per minute since March.")
    assert _projection_rows(owner_url, old["id"]) == 1
    r = _supersede(client, h, new["id"], old["id"])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["created"] is True and body["projection_removed"] == 1 and body["warning"] is None
    assert body["superseded"]["status"] == "superseded" and body["superseded"]["superseded_by"] == new["id"]
    assert body["superseded"]["valid_to"] is not None and body["superseding"]["id"] == new["id"]
    assert _projection_rows(owner_url, old["id"]) == 0
    got = client.get(f"{ENTRIES}/{old['id']}", headers=h).json()
    assert got["status"] == "superseded" and got["indexing"] == {
        "status": "missing",
        "document_id": None,
        "error": None,
        "waiting": 0,
    }
    # Search no longer returns the replaced entry; asking for superseded entries points at the list instead
    s = client.post(
        "/api/memory/search", json={"query": "API rate limit requests per minute"}, headers=h
    ).json()
    assert [i["entry"]["id"] for i in s["items"]] == [new["id"]]
    r = client.post("/api/memory/search", json={"query": "API rate limit", "status": "superseded"}, headers=h)
    assert (
        r.status_code == 400
        and "GET /api/memory/entries?status=superseded" in r.json()["errors"][0]["message"]
    )
    listed = client.get("/api/memory/entries", params={"status": "superseded"}, headers=h).json()
    assert [e["id"] for e in listed["items"]] == [old["id"]]


def test_supersede_replays_are_idempotent_and_re_pointing_conflicts(client, account):
    h = account.headers("memory:rw")
    a, b, c = (_entry(client, h, f"fact version {i}") for i in range(3))
    assert _supersede(client, h, b["id"], a["id"]).status_code == 200
    again = _supersede(client, h, b["id"], a["id"])
    assert (
        again.status_code == 200
        and again.json()["created"] is False
        and again.json()["projection_removed"] == 0
    )
    # Pointing the already replaced entry at a different replacement is a 409 naming the current one
    r = _supersede(client, h, c["id"], a["id"])
    assert r.status_code == 409 and r.json()["superseded_by"] == b["id"]
    # Extending the chain is fine: C replaces B which replaced A
    assert _supersede(client, h, c["id"], b["id"]).status_code == 200


def test_supersede_cycles_are_rejected(client, account):
    h = account.headers("memory:rw")
    a, b, c = (_entry(client, h, f"claim {i}") for i in range(3))
    assert _supersede(client, h, b["id"], a["id"]).status_code == 200  # a -> b
    assert _supersede(client, h, c["id"], b["id"]).status_code == 200  # b -> c
    # a replacing c would close the loop a -> b -> c -> a
    r = _supersede(client, h, a["id"], c["id"])
    assert r.status_code == 409 and "cycle" in r.json()["detail"]
    # a direct two-entry cycle too
    d, e = (_entry(client, h, f"other {i}") for i in range(2))
    assert _supersede(client, h, e["id"], d["id"]).status_code == 200
    assert _supersede(client, h, d["id"], e["id"]).status_code == 409
    # and self-replacement is a 400, unknown ids 404, malformed ids 400
    assert _supersede(client, h, d["id"], d["id"]).status_code == 400
    assert _supersede(client, h, d["id"], str(uuid.uuid4())).status_code == 404
    assert _supersede(client, h, str(uuid.uuid4()), d["id"]).status_code == 404
    assert (
        client.post(f"{ENTRIES}/{d['id']}/supersede", json={"superseded_id": "nope"}, headers=h).status_code
        == 400
    )
    r = client.post(
        f"{ENTRIES}/{d['id']}/supersede",
        json={"superseded_id": e["id"], "superseding_id": d["id"]},
        headers=h,
    )
    assert r.status_code == 400 and "path" in r.json()["errors"][0]["message"]


# -- feedback ----------------------------------------------------------------------------------------------------


def test_one_signal_of_each_kind_per_memory_per_session(client, account):
    h = account.headers("memory:rw")
    e = _entry(client, h, "Prefer ruff over flake8.")
    url = f"{ENTRIES}/{e['id']}/feedback"
    first = client.post(url, json={"signal": "useful", "session_id": "s1", "reason": "saved time"}, headers=h)
    assert first.status_code == 201 and first.json()["created"] is True
    assert first.json()["entry"]["useful_count"] == 1
    # A retry from the same session is the existing record, counters unchanged
    dup = client.post(url, json={"signal": "useful", "session_id": "s1", "reason": "again"}, headers=h)
    assert dup.status_code == 200 and dup.json()["created"] is False
    assert dup.headers["x-idempotent-replay"] == "true"
    assert dup.json()["feedback"]["id"] == first.json()["feedback"]["id"]
    assert dup.json()["feedback"]["reason"] == "saved time" and dup.json()["entry"]["useful_count"] == 1
    # The other kind from the same session, and the same kind from another session, both count
    assert client.post(url, json={"signal": "harmful", "session_id": "s1"}, headers=h).status_code == 201
    r = client.post(url, json={"signal": "useful", "session_id": "s2"}, headers=h)
    assert r.json()["entry"]["useful_count"] == 2 and r.json()["entry"]["harmful_count"] == 1
    # The log lists every signal, newest first
    log = client.get(url, headers=account.headers("memory:r")).json()
    assert log["total"] == 3 and [f["session_id"] for f in log["items"]] == ["s2", "s1", "s1"]
    assert client.get(url, params={"limit": 1}, headers=h).json()["items"][0]["session_id"] == "s2"


def test_feedback_validation_and_unknown_entries(client, account, other_account):
    h = account.headers("memory:rw")
    e = _entry(client, h, "x")
    r = client.post(f"{ENTRIES}/{e['id']}/feedback", json={"signal": "meh", "useful": True}, headers=h)
    assert r.status_code == 400
    errors = {x["field"]: x for x in r.json()["errors"]}
    assert errors["signal"]["allowed"] == ["useful", "harmful"]
    assert errors["useful"]["message"] == "unknown field (use signal: useful|harmful)"
    foreign_version = client.post(
        "/api/skills/versions",
        json={"skill_name": "s", "version": "1", "content": "c"},
        headers=other_account.headers("skills:rw"),
    ).json()["id"]
    r = client.post(
        f"{ENTRIES}/{e['id']}/feedback",
        json={"signal": "useful", "skill_version_id": foreign_version},
        headers=h,
    )
    assert r.status_code == 400
    # Unknown entries are 404 for the signal, the log and attribution (never a 500)
    missing = uuid.uuid4()
    assert (
        client.post(f"{ENTRIES}/{missing}/feedback", json={"signal": "useful"}, headers=h).status_code == 404
    )
    assert client.get(f"{ENTRIES}/{missing}/feedback", headers=h).status_code == 404
    assert client.get(f"{ENTRIES}/{missing}/attribution", headers=h).status_code == 404
    assert client.get(f"{ENTRIES}/not-a-uuid/attribution", headers=h).status_code == 400


# -- checkpoints / resume ----------------------------------------------------------------------------------------


def test_checkpoint_default_key_makes_unchanged_state_a_no_op(client, account, owner_url):
    h = account.headers("memory:rw")
    body = {
        "session_id": "cp-1",
        "goal": "Ship v2",
        "done": ["schema", " "],
        "next": ["api"],
        "open": [],
        "label": "after schema",
        "notes": "  remember the index  ",
    }
    first = client.post("/api/memory/checkpoints", json=body, headers=h)
    assert first.status_code == 201, first.text
    cp = first.json()["checkpoint"]
    assert cp["goal"] == "Ship v2" and cp["done"] == ["schema"] and cp["next"] == ["api"] and cp["open"] == []
    assert cp["notes"] == "remember the index" and cp["idempotency_key"].startswith("checkpoint:cp-1:")
    again = client.post("/api/memory/checkpoints", json=body, headers=h)
    assert again.status_code == 200 and again.json()["created"] is False
    assert again.json()["checkpoint"]["event_id"] == cp["event_id"] and again.json()["warning"] is None
    with psycopg.connect(owner_url) as conn:
        n = conn.execute(
            "SELECT count(*) FROM memory_events WHERE account_id = %s AND event_type = 'checkpoint'",
            (account.account_id,),
        ).fetchone()
    assert n == (1,)
    # The checkpoint is an ordinary journal event
    ev = client.get(f"{EVENTS}/{cp['event_id']}", headers=h).json()
    assert ev["event_type"] == "checkpoint" and ev["payload"]["goal"] == "Ship v2"
    # Changed state appends; going back to the first state says resume will not return it
    client.post("/api/memory/checkpoints", json={**body, "done": ["schema", "api"]}, headers=h)
    back = client.post("/api/memory/checkpoints", json=body, headers=h)
    assert back.status_code == 200 and "later" in back.json()["warning"]


def test_checkpoint_bodies_are_strict(client, account):
    r = client.post(
        "/api/memory/checkpoints",
        json={"session_id": "s", "goal": "", "next": "one string", "blocked_on": "review", "done": [1]},
        headers=account.headers("memory:rw"),
    )
    assert r.status_code == 400
    errors = {e["field"]: e for e in r.json()["errors"]}
    assert {"goal", "next", "blocked_on", "done[0]"} <= set(errors)
    assert errors["blocked_on"]["message"] == "unknown field (list blockers in open)"
    r = client.post("/api/memory/checkpoints", json={"goal": "g"}, headers=account.headers("memory:rw"))
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "session_id"


def test_resume_returns_the_checkpoint_and_everything_after_it(client, account):
    h = account.headers("memory:rw")
    sid = "resume-1"
    client.post(
        EVENTS,
        json={
            "event_type": "goal",
            "idempotency_key": "r0",
            "session_id": sid,
            "payload": {"text": "before"},
        },
        headers=h,
    )
    cp = client.post(
        "/api/memory/checkpoints",
        json={"session_id": sid, "goal": "Finish report", "next": ["charts"]},
        headers=h,
    ).json()["checkpoint"]
    client.post(
        EVENTS,
        json={
            "event_type": "action",
            "idempotency_key": "r1",
            "session_id": sid,
            "payload": {"text": "drew charts"},
        },
        headers=h,
    )
    client.post(
        "/api/skills/logs",
        json={"skill_name": "charts", "outcome": "success", "session_id": sid},
        headers=account.headers("skills:rw"),
    )
    client.post(
        EVENTS,
        json={"event_type": "note", "idempotency_key": "other", "session_id": "another", "payload": {"x": 1}},
        headers=h,
    )
    r = client.get(
        "/api/memory/resume", params={"session_id": sid}, headers=account.headers("memory:r")
    ).json()
    assert r["resolution"] == "checkpoint" and r["checkpoint"]["event_id"] == cp["event_id"]
    assert r["checkpoint"]["next"] == ["charts"] and r["truncated"] is False
    assert [(i["kind"], i.get("event_type")) for i in r["since_checkpoint"]] == [
        ("memory_event", "action"),
        ("skill_log", None),
    ]
    assert r["since_checkpoint"][0]["payload"] == {"text": "drew charts"}


def test_resume_without_a_checkpoint_is_journal_only_or_empty(client, account):
    h = account.headers("memory:rw")
    client.post(
        EVENTS,
        json={
            "event_type": "goal",
            "idempotency_key": "j1",
            "session_id": "jo",
            "payload": {"text": "start"},
        },
        headers=h,
    )
    r = client.get("/api/memory/resume", params={"session_id": "jo"}, headers=h).json()
    assert r["resolution"] == "journal_only" and r["checkpoint"] is None and len(r["since_checkpoint"]) == 1
    r = client.get("/api/memory/resume", params={"session_id": "nothing-here"}, headers=h).json()
    assert r == {
        "session_id": "nothing-here",
        "selected_by": "session_id",
        "resolution": "empty",
        "checkpoint": None,
        "since_checkpoint": [],
        "truncated": False,
        "note": UNKNOWN_SESSION_NOTE,
    }
    assert client.get("/api/memory/resume", headers=h).status_code == 400


# -- timeline / attribution --------------------------------------------------------------------------------------


def test_the_timeline_needs_an_anchor_and_counts_its_coverage(client, account):
    h = account.headers("memory:rw")
    sk = account.headers("skills:rw")
    version = client.post(
        "/api/skills/versions", json={"skill_name": "triage", "version": "1", "content": "c"}, headers=sk
    ).json()["id"]
    client.post(
        "/api/skills/logs",
        json={"skill_name": "triage", "outcome": "success", "session_id": "tl", "skill_version_id": version},
        headers=sk,
    )
    client.post(
        EVENTS,
        json={
            "event_type": "decision",
            "idempotency_key": "t1",
            "session_id": "tl",
            "skill_version_id": version,
            "payload": {"text": "close it"},
        },
        headers=h,
    )
    client.post(
        EVENTS,
        json={
            "event_type": "note",
            "idempotency_key": "t2",
            "session_id": "tl",
            "payload": {"text": "user note"},
        },
        headers=h,
    )
    assert client.get("/api/memory/timeline", headers=h).status_code == 400
    t = client.get("/api/memory/timeline", params={"session_id": "tl"}, headers=h).json()
    assert [i["kind"] for i in t["items"]] == ["skill_log", "memory_event", "memory_event"]
    assert (t["skill_log_count"], t["memory_event_count"], t["unattributed_count"]) == (1, 2, 1)
    assert t["truncated"] is False and t["items"][1]["skill_name"] == "triage"
    t = client.get("/api/memory/timeline", params={"session_id": "tl", "limit": 2}, headers=h).json()
    assert t["truncated"] is True and len(t["items"]) == 2
    t = client.get("/api/memory/timeline", params={"skill_version_id": version}, headers=h).json()
    assert t["total"] == 2 and t["unattributed_count"] == 0
    assert (
        client.get(
            "/api/memory/timeline", params={"skill_version_id": str(uuid.uuid4())}, headers=h
        ).status_code
        == 404
    )
    assert (
        client.get("/api/memory/timeline", params={"session_id": "tl", "limit": 501}, headers=h).status_code
        == 400
    )


def test_attribution_reports_how_far_the_chain_resolved(client, account):
    h = account.headers("memory:rw")
    version = client.post(
        "/api/skills/versions",
        json={"skill_name": "research", "version": "2.1", "content": "c"},
        headers=account.headers("skills:rw"),
    ).json()["id"]

    def event(key: str, **over: Any) -> str:
        r = client.post(
            EVENTS,
            json={"event_type": "outcome", "idempotency_key": key, "payload": {"k": key}, **over},
            headers=h,
        )
        return r.json()["id"]

    full = _entry(client, h, "a", source_event_id=event("a1", session_id="att", skill_version_id=version))
    session_only = _entry(client, h, "b", source_event_id=event("b1", session_id="att"))
    event_only = _entry(client, h, "c", source_event_id=event("c1"))
    none = _entry(client, h, "d")
    r = client.get(f"{ENTRIES}/{full['id']}/attribution", headers=h).json()
    assert r["resolution"] == "skill_version" and r["skill_version_id"] == version
    assert r["skill_name"] == "research" and r["skill_version"] == "2.1" and r["session_id"] == "att"
    assert len(r["session_timeline"]) == 2 and r["session_timeline_truncated"] is False
    r = client.get(f"{ENTRIES}/{session_only['id']}/attribution", headers=h).json()
    assert r["resolution"] == "session_only" and r["skill_version_id"] is None and r["session_timeline"]
    r = client.get(f"{ENTRIES}/{event_only['id']}/attribution", headers=h).json()
    assert r["resolution"] == "event_only" and r["source_event_id"] and r["session_timeline"] is None
    r = client.get(f"{ENTRIES}/{none['id']}/attribution", headers=h).json()
    assert r["resolution"] == "none" and r["source_event_id"] is None


def test_resume_keeps_the_most_recent_activity_when_truncated(client, account, monkeypatch):
    from agentmate.memory.service import checkpoints

    monkeypatch.setattr(checkpoints, "RESUME_LIMIT", 2)
    h = account.headers("memory:rw")
    client.post("/api/memory/checkpoints", json={"session_id": "tail", "goal": "g"}, headers=h)
    for i in range(4):
        client.post(
            EVENTS,
            json={
                "event_type": "action",
                "idempotency_key": f"tail-{i}",
                "session_id": "tail",
                "occurred_at": f"2999-01-01T00:00:0{i}Z",
                "payload": {"i": i},
            },
            headers=h,
        )
    r = client.get("/api/memory/resume", params={"session_id": "tail"}, headers=h).json()
    assert r["truncated"] is True and [i["payload"]["i"] for i in r["since_checkpoint"]] == [2, 3]


def test_session_views_are_tenant_isolated(client, account, other_account):
    h = account.headers("memory:rw")
    client.post("/api/memory/checkpoints", json={"session_id": "shared-name", "goal": "mine"}, headers=h)
    client.post(
        EVENTS,
        json={
            "event_type": "note",
            "idempotency_key": "iso",
            "session_id": "shared-name",
            "payload": {"x": 1},
        },
        headers=h,
    )
    h2 = other_account.headers("memory:rw")
    assert (
        client.get("/api/memory/resume", params={"session_id": "shared-name"}, headers=h2).json()[
            "resolution"
        ]
        == "empty"
    )
    assert (
        client.get("/api/memory/timeline", params={"session_id": "shared-name"}, headers=h2).json()["total"]
        == 0
    )
    # The other account's identical checkpoint is its own (same default key, separate journal)
    r = client.post("/api/memory/checkpoints", json={"session_id": "shared-name", "goal": "mine"}, headers=h2)
    assert r.status_code == 201
    assert (
        client.post(
            "/api/memory/checkpoints",
            json={"session_id": "s", "goal": "g"},
            headers=account.headers("memory:r"),
        ).status_code
        == 403
    )
