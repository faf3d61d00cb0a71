"""No duplicate memories by accident, and forgetting: dedup on normalised content (also under concurrency), retire
(archive/invalidate), delete for good (tombstone, relinked supersede chains), forget a scope, export a scope."""

from __future__ import annotations

import json
import threading
from typing import Any

import psycopg

ENTRIES = "/api/memory/entries"


def _store(client: Any, h: dict[str, str], content: str, source: str = "t", **over: Any) -> Any:
    body = {
        "memory_type": "semantic",
        "content": content,
        "scope_type": "repository",
        "scope_key": "octo/widgets",
        "evidence": [{"source_type": "test", "source_id": source}],
        **over,
    }
    return client.post(ENTRIES, json=body, headers=h)


def _count(owner_url: str, sql: str, *params: Any) -> int:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(sql, params).fetchone()
    return row[0] if row else 0


# -- dedup -------------------------------------------------------------------------------------------------------


def test_a_retried_store_returns_the_existing_entry_with_the_new_evidence(client, account):
    h = account.headers("memory:rw")
    first = _store(client, h, "The build uses  make\n and gcc.", title="build")
    assert first.status_code == 201 and first.json()["deduplicated"] is False
    # NFC, whitespace runs and surrounding whitespace do not matter; title and metadata are not compared
    again = _store(client, h, "  The build uses make and gcc. ", source="u", title="other", metadata={"x": 1})
    assert again.status_code == 200, again.text
    body = again.json()
    assert body["deduplicated"] is True and body["id"] == first.json()["id"] and body["title"] == "build"
    assert [e["source_id"] for e in body["evidence"]] == ["t", "u"]
    assert "Idempotent-Replay" not in again.headers
    # the same evidence again adds nothing
    third = _store(client, h, "The build uses make and gcc.", source="u")
    assert third.status_code == 200 and [e["source_id"] for e in third.json()["evidence"]] == ["t", "u"]
    listed = client.get(ENTRIES, params={"scope_type": "repository", "scope_key": "octo/widgets"}, headers=h)
    assert listed.json()["total"] == 1


def test_case_type_scope_and_status_keep_memories_apart(client, account):
    h = account.headers("memory:rw")
    base = _store(client, h, "Deploys run on Fridays.")
    assert base.status_code == 201
    for variant in (
        _store(client, h, "deploys run on Fridays."),  # case is kept
        _store(client, h, "Deploys run on Fridays.", memory_type="procedural"),
        _store(client, h, "Deploys run on Fridays.", scope_key="octo/gadgets"),
        _store(client, h, "Deploys run on Fridays.", status="pending"),  # only active entries dedup
    ):
        assert variant.status_code == 201 and variant.json()["deduplicated"] is False, variant.text
    # composed and decomposed é are the same content after NFC
    assert _store(client, h, "Caf\u00e9 opens at 8.").status_code == 201
    same = _store(client, h, "Cafe\u0301 opens at 8.")
    assert same.status_code == 200 and same.json()["deduplicated"] is True


def test_an_explicit_idempotency_key_keeps_replay_semantics(client, account):
    h = account.headers("memory:rw")
    keyed = {**h, "Idempotency-Key": "k-1"}
    first = _store(client, keyed, "Tests run with pytest.")
    assert first.status_code == 201
    replay = _store(client, keyed, "Tests run with pytest.")
    assert replay.status_code == 201 and replay.headers["Idempotent-Replay"] == "true"
    assert replay.json()["id"] == first.json()["id"] and replay.json()["deduplicated"] is False
    changed = _store(client, keyed, "Tests run with nose.")
    assert changed.status_code == 409
    # a new key with duplicate content is deduplicated (200), and its replay says so again
    other = {**h, "Idempotency-Key": "k-2"}
    dup = _store(client, other, "Tests run with pytest.", source="v")
    assert (
        dup.status_code == 200
        and dup.json()["deduplicated"] is True
        and dup.json()["id"] == first.json()["id"]
    )
    dup_replay = _store(client, other, "Tests run with pytest.", source="v")
    assert dup_replay.status_code == 200 and dup_replay.headers["Idempotent-Replay"] == "true"


def test_concurrent_identical_stores_make_one_entry(client, account, owner_url):
    h = account.headers("memory:rw")
    barrier = threading.Barrier(6)
    results: list[Any] = []

    def store(i: int) -> None:
        barrier.wait()
        results.append(_store(client, h, "Concurrency: one memory only.", source=f"s{i}"))

    threads = [threading.Thread(target=store, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in results) == [200] * 5 + [201], [r.text for r in results]
    assert len({r.json()["id"] for r in results}) == 1
    entry_id = results[0].json()["id"]
    assert (
        _count(owner_url, "SELECT count(*) FROM memory_entries WHERE account_id = %s", account.account_id)
        == 1
    )
    assert _count(owner_url, "SELECT count(*) FROM memory_evidence WHERE memory_id = %s", entry_id) == 6


def test_the_database_refuses_a_second_active_duplicate(owner_url, client, account):
    h = account.headers("memory:rw")
    entry = _store(client, h, "Only one of me.").json()
    with psycopg.connect(owner_url) as conn:
        try:
            conn.execute(
                """INSERT INTO memory_entries (account_id, scope_type, scope_key, memory_type, content, content_hash)
                   VALUES (%s, 'repository', 'octo/widgets', 'semantic', ' Only  one of me. ', 'h')""",
                (account.account_id,),
            )
        except psycopg.errors.UniqueViolation as exc:
            assert exc.diag.constraint_name == "memory_entries_active_content_key"
        else:  # pragma: no cover - the assertion below reports it
            raise AssertionError("a duplicate active entry was accepted")
    assert entry["deduplicated"] is False


# -- retire ------------------------------------------------------------------------------------------------------


def test_retiring_closes_the_window_removes_the_projection_and_journals_it(client, account, owner_url):
    h = account.headers("memory:rw")
    entry = _store(client, h, "The staging URL is staging.example.com.").json()
    assert (
        _count(owner_url, "SELECT count(*) FROM retrieval_documents WHERE source_id = %s", entry["id"]) == 1
    )
    r = client.patch(
        f"{ENTRIES}/{entry['id']}", json={"status": "invalidated", "reason": "wrong host"}, headers=h
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["changed"] is True and body["projection_removed"] == 1 and body["warning"] is None
    assert body["entry"]["status"] == "invalidated" and body["entry"]["status_reason"] == "wrong host"
    assert body["entry"]["valid_to"] is not None
    assert (
        _count(owner_url, "SELECT count(*) FROM retrieval_documents WHERE source_id = %s", entry["id"]) == 0
    )
    event = client.get(f"/api/memory/events/{body['event_id']}", headers=h).json()
    assert event["event_type"] == "memory_retired" and event["scope_key"] == "octo/widgets"
    assert event["payload"] == {
        "entry_id": entry["id"],
        "from": "active",
        "status": "invalidated",
        "reason": "wrong host",
    }
    found = client.post("/api/memory/search", json={"query": "staging URL"}, headers=h).json()
    assert found["items"] == []
    # the same status again changes nothing; retired content can be stored afresh
    again = client.patch(f"{ENTRIES}/{entry['id']}", json={"status": "invalidated", "reason": "x"}, headers=h)
    assert again.json()["changed"] is False and again.json()["event_id"] is None
    assert _store(client, h, "The staging URL is staging.example.com.").status_code == 201


def test_retire_validates_its_body_and_refuses_a_superseded_entry(client, account):
    h = account.headers("memory:rw")
    old = _store(client, h, "v1").json()
    new = _store(client, h, "v2").json()
    r = client.patch(f"{ENTRIES}/{old['id']}", json={"status": "active", "reason": "x"}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "status"
    r = client.patch(f"{ENTRIES}/{old['id']}", json={"status": "archived"}, headers=h)
    assert r.status_code == 400 and r.json()["errors"][0]["field"] == "reason"
    r = client.patch(
        f"{ENTRIES}/{old['id']}", json={"status": "archived", "reason": "x", "content": "y"}, headers=h
    )
    assert r.status_code == 400 and "supersede" in r.json()["errors"][0]["message"]
    assert (
        client.post(
            f"{ENTRIES}/{new['id']}/supersede", json={"superseded_id": old["id"]}, headers=h
        ).status_code
        == 200
    )
    r = client.patch(f"{ENTRIES}/{old['id']}", json={"status": "archived", "reason": "x"}, headers=h)
    assert r.status_code == 409
    missing = client.patch(
        f"{ENTRIES}/00000000-0000-4000-8000-000000000000",
        json={"status": "archived", "reason": "x"},
        headers=h,
    )
    assert missing.status_code == 404


# -- delete ------------------------------------------------------------------------------------------------------


def test_delete_removes_everything_but_a_tombstone(client, account, owner_url):
    h = account.headers("memory:rw")
    entry = _store(client, h, "A secret-ish fact to forget.").json()
    assert (
        client.post(f"{ENTRIES}/{entry['id']}/feedback", json={"signal": "useful"}, headers=h).status_code
        == 201
    )
    r = client.delete(f"{ENTRIES}/{entry['id']}", headers=h)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["evidence_deleted"], body["feedback_deleted"], body["projection_removed"]) == (1, 1, 1)
    assert body["relinked"] == []
    for table, column in (
        ("memory_entries", "id"),
        ("memory_evidence", "memory_id"),
        ("memory_feedback", "memory_id"),
        ("retrieval_documents", "source_id"),
    ):
        cast = "::text" if table == "retrieval_documents" else ""
        assert _count(owner_url, f"SELECT count(*) FROM {table} WHERE {column}{cast} = %s", entry["id"]) == 0
    tomb = client.get(f"/api/memory/events/{body['tombstone_event_id']}", headers=h).json()
    assert tomb["event_type"] == "memory_forgotten" and tomb["payload"] == {"entry_id": entry["id"]}
    assert "forget" not in json.dumps(tomb)  # the content is gone: the tombstone keeps the id and the time
    assert client.get(f"{ENTRIES}/{entry['id']}", headers=h).status_code == 404
    assert client.delete(f"{ENTRIES}/{entry['id']}", headers=h).status_code == 404


def test_deleting_a_link_of_a_supersede_chain_relinks_and_reports_it(client, account):
    h = account.headers("memory:rw")
    a, b, c = (_store(client, h, f"rate limit v{i}").json() for i in (1, 2, 3))
    assert (
        client.post(f"{ENTRIES}/{b['id']}/supersede", json={"superseded_id": a["id"]}, headers=h).status_code
        == 200
    )
    assert (
        client.post(f"{ENTRIES}/{c['id']}/supersede", json={"superseded_id": b["id"]}, headers=h).status_code
        == 200
    )
    body = client.delete(f"{ENTRIES}/{b['id']}", headers=h).json()
    assert body["relinked"] == [{"entry_id": a["id"], "superseded_by": c["id"]}]
    got = client.get(f"{ENTRIES}/{a['id']}", headers=h).json()
    assert got["status"] == "superseded" and got["superseded_by"] == c["id"]
    assert got["superseded_by_deleted"] == b["id"]
    # deleting the head leaves the chain pointing nowhere, and says so
    body = client.delete(f"{ENTRIES}/{c['id']}", headers=h).json()
    assert body["relinked"] == [{"entry_id": a["id"], "superseded_by": None}]
    got = client.get(f"{ENTRIES}/{a['id']}", headers=h).json()
    assert got["superseded_by"] is None and got["superseded_by_deleted"] == c["id"]


# -- forget a scope / export -------------------------------------------------------------------------------------


def test_export_then_forget_a_scope(client, account, other_account):
    h = account.headers("memory:rw")
    kept = _store(client, h, "elsewhere", scope_key="octo/gadgets").json()
    ids = sorted(_store(client, h, f"widget fact {i}").json()["id"] for i in range(3))
    victim = other_account.headers("memory:rw")
    theirs = _store(client, victim, "their widget fact").json()
    r = client.get(
        "/api/memory/export", params={"scope_type": "repository", "scope_key": "octo/widgets"}, headers=h
    )
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    assert r.headers["cache-control"] == "private, no-store"
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert [x["id"] for x in lines] == ids and all(x["evidence"][0]["source_id"] == "t" for x in lines)

    params = {"scope_type": "repository", "scope_key": "octo/widgets"}
    refused = client.delete(ENTRIES, params={**params, "confirm": "false"}, headers=h)
    assert refused.status_code == 400 and refused.json()["errors"][0]["field"] == "confirm"
    for loose in ("yes", "1", "on", "TRUE"):  # a destructive call takes exactly true
        r = client.delete(ENTRIES, params={**params, "confirm": loose}, headers=h)
        assert r.status_code == 400 and r.json()["errors"] == [
            {"field": "confirm", "message": "must be one of the allowed values", "allowed": ["true", "false"]}
        ]
    r = client.delete(ENTRIES, params={**params, "confirm": "true"}, headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["deleted"] == 3 and r.json()["projection_removed"] == 3
    assert client.get(ENTRIES, params=params, headers=h).json()["total"] == 0
    assert client.get(f"{ENTRIES}/{kept['id']}", headers=h).status_code == 200
    assert client.get(f"{ENTRIES}/{theirs['id']}", headers=victim).status_code == 200
    assert client.get("/api/memory/export", params=params, headers=h).text == ""
    missing = client.delete(ENTRIES, params={"scope_type": "repository", "confirm": "true"}, headers=h)
    assert missing.status_code == 400 and missing.json()["errors"][0]["field"] == "scope_key"


def test_export_pages_through_every_entry(client, account, monkeypatch):
    from agentmate.memory.service import forget

    monkeypatch.setattr(forget, "EXPORT_PAGE", 2)
    h = account.headers("memory:rw")
    ids = sorted(_store(client, h, f"paged fact {i}").json()["id"] for i in range(5))
    r = client.get(
        "/api/memory/export", params={"scope_type": "repository", "scope_key": "octo/widgets"}, headers=h
    )
    assert r.status_code == 200 and "Nearest-Scopes" not in r.headers
    assert [json.loads(line)["id"] for line in r.text.splitlines()] == ids


def test_an_empty_export_or_forget_of_a_mistyped_scope_names_the_nearest(client, account):
    h = account.headers("memory:rw")
    _store(client, h, "a widget fact")
    wrong = {"scope_type": "repository", "scope_key": "Octo/Widgets/"}
    r = client.get("/api/memory/export", params=wrong, headers=h)
    assert r.status_code == 200 and r.text == ""
    assert json.loads(r.headers["Nearest-Scopes"]) == [
        {"scope_type": "repository", "scope_key": "octo/widgets"}
    ]
    r = client.delete(ENTRIES, params={**wrong, "confirm": "true"}, headers=h)
    assert r.status_code == 200 and r.json()["deleted"] == 0
    assert r.json()["nearest_scopes"] == [{"scope_type": "repository", "scope_key": "octo/widgets"}]
    # a scope that has entries says nothing of the kind
    r = client.delete(
        ENTRIES,
        params={"scope_type": "repository", "scope_key": "octo/widgets", "confirm": "true"},
        headers=h,
    )
    assert r.json()["deleted"] == 1 and "nearest_scopes" not in r.json()


def test_a_duplicate_store_from_another_event_keeps_that_event_as_evidence(client, account):
    h = account.headers("memory:rw")
    events = []
    for i in range(2):
        r = client.post(
            "/api/memory/events",
            json={
                "event_type": "observation",
                "idempotency_key": f"obs-{i}",
                "payload": {"text": "widgets build with make"},
            },
            headers=h,
        )
        events.append(r.json()["id"])
    body = {
        "memory_type": "semantic",
        "content": "Widgets build with make.",
        "scope_type": "repository",
        "scope_key": "octo/widgets",
    }
    first = client.post(ENTRIES, json={**body, "source_event_id": events[0]}, headers=h).json()
    assert first["evidence"] == []
    # the same event again adds nothing; another event is appended as memory_event evidence
    again = client.post(ENTRIES, json={**body, "source_event_id": events[0]}, headers=h).json()
    assert again["deduplicated"] is True and again["evidence"] == []
    other = client.post(ENTRIES, json={**body, "source_event_id": events[1]}, headers=h).json()
    assert other["id"] == first["id"] and other["source_event_id"] == events[0]
    assert [(e["source_type"], e["source_id"]) for e in other["evidence"]] == [("memory_event", events[1])]
