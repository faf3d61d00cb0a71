"""Durable memories through the HTTP API: provenance, evidence, strict bodies with hints, indexing outcomes
(including a failing embedder or vector index), listing, idempotent creates and tenant isolation."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from agentmate.retrieval.embedders import EmbeddingError
from agentmate.retrieval.vector_index import VectorIndexError

ENTRIES = "/api/memory/entries"


class BrokenEmbedder:
    name = "broken-embedder"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("embedding endpoint unreachable (test)")


class BrokenIndex:
    collection = "broken"

    def close(self) -> None:
        return None

    def ensure_collection(self, dimensions: int) -> None:
        return None

    def upsert(self, *args: Any, **kwargs: Any) -> None:
        raise VectorIndexError("vector store down (test)")

    def search(self, *args: Any, **kwargs: Any) -> list[Any]:
        raise VectorIndexError("vector store down (test)")

    def delete(self, *args: Any, **kwargs: Any) -> None:
        raise VectorIndexError("vector store down (test)")


@pytest.fixture
def broken_embedder(make_retrieval, serve_retrieval) -> None:
    serve_retrieval(make_retrieval(embedder=BrokenEmbedder()))


@pytest.fixture
def broken_index(make_retrieval, serve_retrieval) -> None:
    serve_retrieval(make_retrieval(index=BrokenIndex()))


def _entry(**over: Any) -> dict[str, Any]:
    return {
        "memory_type": "semantic",
        "title": "Deploys",
        "content": "Deploys go through the blue-green pipeline.",
        "evidence": [{"source_type": "url", "source_id": "https://wiki/deploys", "excerpt": "blue-green"}],
        **over,
    }


def _errors(r: Any) -> dict[str, dict[str, Any]]:
    return {e["field"]: e for e in r.json()["errors"]}


def test_an_entry_with_evidence_is_stored_indexed_and_read_back(client, account):
    h = account.headers("memory:rw")
    r = client.post(
        ENTRIES,
        json=_entry(
            scope_type="repository", scope_key="acme/app", importance=0.9, metadata={"team": "infra"}
        ),
        headers=h,
    )
    assert r.status_code == 201, r.text
    entry = r.json()
    assert entry["status"] == "active" and entry["extraction_method"] == "explicit"
    assert entry["indexing"]["status"] == "indexed" and "error" not in entry["indexing"]
    assert [(e["source_type"], e["source_id"]) for e in entry["evidence"]] == [
        ("url", "https://wiki/deploys")
    ]
    got = client.get(f"{ENTRIES}/{entry['id']}", headers=account.headers("memory:r")).json()
    assert got["evidence"][0]["excerpt"] == "blue-green" and got["metadata"] == {"team": "infra"}
    assert got["indexing"]["status"] == "indexed" and got["useful_count"] == 0


def test_an_entry_needs_a_source_event_or_evidence(client, account, other_account):
    h = account.headers("memory:rw")
    r = client.post(ENTRIES, json=_entry(evidence=[]), headers=h)
    assert r.status_code == 400 and "evidence" in _errors(r)
    # A source event of this account is enough
    ev = client.post(
        "/api/memory/events",
        json={"event_type": "decision", "idempotency_key": "d1", "payload": {"text": "use blue-green"}},
        headers=h,
    ).json()
    r = client.post(ENTRIES, json=_entry(evidence=[], source_event_id=ev["id"]), headers=h)
    assert r.status_code == 201 and r.json()["source_event_id"] == ev["id"]
    # An unknown or foreign event is a 400 on source_event_id
    foreign = client.post(
        "/api/memory/events",
        json={"event_type": "note", "idempotency_key": "f1", "payload": {"x": 1}},
        headers=other_account.headers("memory:rw"),
    ).json()
    for bad in (foreign["id"], str(uuid.uuid4())):
        r = client.post(ENTRIES, json=_entry(evidence=[], source_event_id=bad), headers=h)
        assert r.status_code == 400 and "source_event_id" in _errors(r)


def test_wrong_vocabulary_gets_hints_and_every_bad_field_is_named(client, account):
    r = client.post(
        ENTRIES,
        json={
            "memory_type": "fact",
            "content": "",
            "type": "semantic",
            "status": "superseded",
            "confidence": 2,
            "tags": ["x"],
            "evidence": [{"kind": "url", "ref": "https://x", "note": "see"}],
        },
        headers=account.headers("memory:rw"),
    )
    assert r.status_code == 400
    errors = _errors(r)
    assert errors["memory_type"]["allowed"] == ["semantic", "episodic", "procedural"]
    assert errors["status"]["allowed"] == ["active", "pending"]
    assert errors["type"]["message"] == "unknown field (use memory_type)"
    assert errors["tags"]["message"] == "unknown field (put tags inside metadata)"
    assert errors["evidence[0].kind"]["message"] == "unknown field (evidence uses source_type/source_id)"
    assert errors["evidence[0].ref"]["message"] == "unknown field (evidence uses source_type/source_id)"
    assert errors["evidence[0].note"]["message"] == "unknown field (use excerpt)"
    assert {"content", "confidence", "evidence[0].source_type", "evidence[0].source_id"} <= set(errors)


def test_scope_and_validity_rules(client, account):
    h = account.headers("memory:rw")
    r = client.post(ENTRIES, json=_entry(scope_type="project"), headers=h)
    assert r.status_code == 400 and "scope_key" in _errors(r)
    r = client.post(
        ENTRIES, json=_entry(valid_from="2026-01-02T00:00:00Z", valid_to="2026-01-01T00:00:00Z"), headers=h
    )
    assert r.status_code == 400 and "valid_to" in _errors(r)


def test_a_failing_embedder_still_stores_the_memory_and_reports_indexing_failed(
    client, account, broken_embedder
):
    r = client.post(
        ENTRIES, json=_entry(content="Quokkas live on Rottnest island."), headers=account.headers("memory:rw")
    )
    assert r.status_code == 201, r.text
    assert r.json()["indexing"]["status"] == "failed"
    assert "embedding" in r.json()["indexing"]["error"]
    # And the memory is durable and still found through the lexical leg (the vector leg is down too)
    got = client.get(f"{ENTRIES}/{r.json()['id']}", headers=account.headers("memory:r")).json()
    assert got["indexing"]["status"] == "failed"
    s = client.post(
        "/api/memory/search", json={"query": "quokkas rottnest"}, headers=account.headers("memory:r")
    )
    assert s.status_code == 200
    assert [i["entry"]["id"] for i in s.json()["items"]] == [r.json()["id"]]
    assert s.json()["items"][0]["channels"] == ["lexical"]
    assert [d["leg"] for d in s.json()["degraded"]] == ["vector"]


def test_a_failing_vector_index_still_stores_the_memory_and_reports_indexing_failed(
    client, account, broken_index
):
    r = client.post(ENTRIES, json=_entry(), headers=account.headers("memory:rw"))
    assert r.status_code == 201
    assert r.json()["indexing"]["status"] == "failed"
    assert r.json()["indexing"]["error"]


def test_entry_creates_honour_the_idempotency_key_header(client, account, owner_url):
    h = {**account.headers("memory:rw"), "Idempotency-Key": "entry-1"}
    first = client.post(ENTRIES, json=_entry(), headers=h)
    again = client.post(ENTRIES, json=_entry(), headers=h)
    assert first.status_code == again.status_code == 201
    assert again.headers["idempotent-replay"] == "true" and again.json()["id"] == first.json()["id"]
    assert again.json()["indexing"]["status"] == "indexed"
    assert client.post(ENTRIES, json=_entry(content="different"), headers=h).status_code == 409
    with psycopg.connect(owner_url) as conn:
        n = conn.execute(
            "SELECT count(*) FROM memory_entries WHERE account_id = %s", (account.account_id,)
        ).fetchone()
    assert n == (1,)


def test_entries_list_with_filters_ordered_by_importance(client, account):
    h = account.headers("memory:rw")
    low = client.post(ENTRIES, json=_entry(importance=0.2), headers=h).json()
    high = client.post(ENTRIES, json=_entry(importance=0.9, memory_type="procedural"), headers=h).json()
    pending = client.post(
        ENTRIES, json=_entry(status="pending", scope_type="agent", scope_key="bot-1"), headers=h
    ).json()
    r = client.get(ENTRIES, headers=h).json()
    assert r["total"] == 3 and r["items"][0]["id"] == high["id"]
    assert [
        e["id"] for e in client.get(ENTRIES, params={"memory_type": "procedural"}, headers=h).json()["items"]
    ] == [high["id"]]
    assert [
        e["id"] for e in client.get(ENTRIES, params={"status": "pending"}, headers=h).json()["items"]
    ] == [pending["id"]]
    r = client.get(ENTRIES, params={"scope_type": "agent", "scope_key": "bot-1"}, headers=h).json()
    assert [e["id"] for e in r["items"]] == [pending["id"]]
    assert (
        client.get(ENTRIES, params={"limit": 1, "offset": 2}, headers=h).json()["items"][0]["id"] == low["id"]
    )
    assert client.get(ENTRIES, params={"status": "gone"}, headers=h).status_code == 400
    assert client.get(ENTRIES, params={"limit": 0}, headers=h).status_code == 400


def test_entries_are_scoped_and_tenant_isolated(client, account, other_account):
    entry = client.post(ENTRIES, json=_entry(), headers=account.headers("memory:rw")).json()
    assert client.post(ENTRIES, json=_entry(), headers=account.headers("memory:r")).status_code == 403
    h2 = other_account.headers("memory:rw")
    eid = entry["id"]
    assert client.get(f"{ENTRIES}/{eid}", headers=h2).status_code == 404
    assert client.get(ENTRIES, headers=h2).json()["total"] == 0
    assert client.get(f"{ENTRIES}/{eid}/attribution", headers=h2).status_code == 404
    assert client.get(f"{ENTRIES}/{eid}/feedback", headers=h2).status_code == 404
    assert client.post(f"{ENTRIES}/{eid}/feedback", json={"signal": "harmful"}, headers=h2).status_code == 404
    mine = client.post(ENTRIES, json=_entry(), headers=h2).json()
    assert (
        client.post(f"{ENTRIES}/{mine['id']}/supersede", json={"superseded_id": eid}, headers=h2).status_code
        == 404
    )
    assert (
        client.post(f"{ENTRIES}/{eid}/supersede", json={"superseded_id": mine["id"]}, headers=h2).status_code
        == 404
    )
    s = client.post("/api/memory/search", json={"query": "blue-green pipeline deploys"}, headers=h2).json()
    assert [i["entry"]["id"] for i in s["items"]] == [mine["id"]]
