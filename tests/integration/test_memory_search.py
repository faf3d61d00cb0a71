"""Hybrid memory search through the HTTP API: both legs and their scores, fail-open degradation (vector leg down →
answer + degraded; both down → 503), hostile and CJK queries, filters, the bounded feedback adjustment, access
counting and tenant isolation."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from agentmate.retrieval import repository as retrieval_repo
from agentmate.retrieval.embedders import EmbeddingError

SEARCH = "/api/memory/search"
ENTRIES = "/api/memory/entries"


class BrokenEmbedder:
    name = "broken-embedder"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("embedding endpoint unreachable (test)")


@pytest.fixture
def vector_leg_down(make_retrieval, serve_retrieval) -> None:
    serve_retrieval(make_retrieval(embedder=BrokenEmbedder()))


@pytest.fixture
def lexical_leg_down(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout (test)")

    monkeypatch.setattr(retrieval_repo, "lexical_search", broken)


def _remember(client: Any, h: dict[str, str], content: str, **over: Any) -> dict[str, Any]:
    body = {
        "memory_type": "semantic",
        "content": content,
        "evidence": [{"source_type": "test", "source_id": "fixture"}],
        **over,
    }
    r = client.post(ENTRIES, json=body, headers=h)
    assert r.status_code == 201, r.text
    assert r.json()["indexing"]["status"] == "indexed"
    return r.json()


@pytest.fixture
def corpus(client: Any, account: Any) -> dict[str, dict[str, Any]]:
    h = account.headers("memory:rw")
    return {
        "deploy": _remember(
            client,
            h,
            "Production deploys use the blue-green pipeline with a manual approval step.",
            title="Deploy process",
            scope_type="repository",
            scope_key="acme/app",
        ),
        "db": _remember(
            client,
            h,
            "The billing service stores invoices in PostgreSQL 15 with row-level security.",
            title="Billing database",
            memory_type="procedural",
        ),
        "cat": _remember(client, h, "The office cat is called Miso and prefers tuna.", title="Office cat"),
        "cjk": _remember(client, h, "知识库的检索使用二元组投影。中文句子也能命中。", title="中文检索"),
    }


def _search(client: Any, account: Any, **body: Any) -> Any:
    return client.post(SEARCH, json=body, headers=account.headers("memory:r"))


def test_a_search_answers_from_both_legs_with_channels_and_per_leg_scores(client, account, corpus):
    r = _search(client, account, query="blue-green deploy pipeline")
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"items", "total", "degraded"} and body["degraded"] == []
    top = body["items"][0]
    assert top["entry"]["id"] == corpus["deploy"]["id"] and top["rank"] == 1
    assert top["channels"] == ["lexical", "vector"]
    assert top["lexical_score"] > 0 and 0 < top["vector_score"] <= 1
    assert top["retrieval_score"] == 1.0 and top["feedback_adjustment"] == 0 and top["score"] == 1.0
    assert top["hit_reason"] == "lexical+vector match in repository:acme/app"
    assert top["entry"]["evidence"][0]["source_type"] == "test"
    assert body["total"] == len(body["items"])


def test_a_paraphrase_is_found_by_the_vector_leg_alone(client, account, corpus):
    body = _search(client, account, query="kitten name").json()
    hit = next(i for i in body["items"] if i["entry"]["id"] == corpus["cat"]["id"])
    assert hit["channels"] == ["vector"] and hit["lexical_score"] is None and hit["retrieval_score"] <= 0.5


def test_cjk_text_matches_through_the_bigram_projection(client, account, corpus):
    body = _search(client, account, query="知识库检索").json()
    assert body["items"][0]["entry"]["id"] == corpus["cjk"]["id"]
    assert "lexical" in body["items"][0]["channels"]


def test_a_query_full_of_tsquery_metacharacters_is_never_a_syntax_error(client, account, corpus):
    for query in [
        "billing & | ! ( ) : * <-> '' \\ \"",
        "!!!",
        "':*",
        "(postgresql",
        "a:* & b:A",
        "&&&",
    ]:
        r = _search(client, account, query=query)
        assert r.status_code == 200, (query, r.text)
        assert r.json()["degraded"] == []
    # NUL is refused like everywhere (the schema's pattern), as a 400 naming the field, never a 500
    r = _search(client, account, query="\x00x")
    assert r.status_code == 400 and [e["field"] for e in r.json()["errors"]] == ["query"]
    body = _search(client, account, query="postgresql!!! & (billing)").json()
    assert body["items"][0]["entry"]["id"] == corpus["db"]["id"]


def test_a_failing_vector_leg_degrades_to_lexical_and_says_so(client, account, corpus, vector_leg_down):
    r = _search(client, account, query="blue-green pipeline")
    assert r.status_code == 200
    body = r.json()
    assert [i["entry"]["id"] for i in body["items"]] == [corpus["deploy"]["id"]]
    assert body["items"][0]["channels"] == ["lexical"] and body["items"][0]["vector_score"] is None
    assert body["items"][0]["retrieval_score"] == 0.5
    assert body["degraded"] == [
        {"leg": "vector", "reason": "embedding failed: embedding endpoint unreachable (test)"}
    ]


def test_a_failing_lexical_leg_degrades_to_vector_and_says_so(client, account, corpus, lexical_leg_down):
    body = _search(client, account, query="blue-green pipeline").json()
    assert body["items"][0]["entry"]["id"] == corpus["deploy"]["id"]
    assert body["items"][0]["channels"] == ["vector"]
    assert [d["leg"] for d in body["degraded"]] == ["lexical"]
    assert (
        "QueryCanceled" in body["degraded"][0]["reason"] and "statement" not in body["degraded"][0]["reason"]
    )


def test_both_legs_failing_is_a_503_problem_listing_both(
    client, account, corpus, vector_leg_down, lexical_leg_down
):
    r = _search(client, account, query="blue-green pipeline")
    assert r.status_code == 503
    assert r.headers["content-type"].startswith("application/problem+json")
    assert sorted(d["leg"] for d in r.json()["degraded"]) == ["lexical", "vector"]


def test_filters_narrow_both_legs(client, account, corpus):
    body = _search(client, account, query="deploys billing cat", memory_type="procedural").json()
    assert [i["entry"]["id"] for i in body["items"]] == [corpus["db"]["id"]]
    body = _search(
        client, account, query="deploy pipeline", scope_type="repository", scope_key="acme/app"
    ).json()
    assert {i["entry"]["id"] for i in body["items"]} == {corpus["deploy"]["id"]}
    body = _search(
        client, account, query="deploy pipeline", scope_type="project", scope_key="acme/app"
    ).json()
    assert body["items"] == []
    assert _search(client, account, query="x", scope_key="acme/app").status_code == 400
    assert _search(client, account, query="x", top_k=21).status_code == 400
    assert _search(client, account, query="   ").status_code == 400
    r = _search(client, account, q="x")
    assert r.status_code == 400 and any(
        e["message"] == "unknown field (use query)" for e in r.json()["errors"]
    )


def test_pending_entries_are_only_found_when_asked_for(client, account):
    h = account.headers("memory:rw")
    draft = _remember(client, h, "Draft: migrate the wombat cluster to ARM.", status="pending")
    assert _search(client, account, query="wombat cluster").json()["items"] == []
    body = _search(client, account, query="wombat cluster", status="pending").json()
    assert [i["entry"]["id"] for i in body["items"]] == [draft["id"]]


def test_feedback_nudges_the_score_within_the_bound(client, account):
    h = account.headers("memory:rw")
    a = _remember(client, h, "Use pnpm for the frontend monorepo installs.")
    b = _remember(client, h, "Use pnpm for the frontend monorepo builds.")
    # Many useful signals (one per session) for a, many harmful for b
    for i in range(30):
        assert (
            client.post(
                f"{ENTRIES}/{a['id']}/feedback", json={"signal": "useful", "session_id": f"s{i}"}, headers=h
            ).status_code
            == 201
        )
        client.post(
            f"{ENTRIES}/{b['id']}/feedback", json={"signal": "harmful", "session_id": f"s{i}"}, headers=h
        )
    items = {
        i["entry"]["id"]: i for i in _search(client, account, query="pnpm frontend monorepo").json()["items"]
    }
    up, down = items[a["id"]], items[b["id"]]
    # Then the adjustment is 0.15 * (u - h) / (u + h + 3), bounded by 0.15, reported beside the retrieval score
    assert up["feedback_adjustment"] == pytest.approx(0.15 * 30 / 33, abs=1e-6)
    assert down["feedback_adjustment"] == pytest.approx(-0.15 * 30 / 33, abs=1e-6)
    assert 0 < up["feedback_adjustment"] < 0.15 and -0.15 < down["feedback_adjustment"] < 0
    assert up["score"] == pytest.approx(min(1.0, up["retrieval_score"] + up["feedback_adjustment"]), abs=1e-6)
    assert down["score"] == pytest.approx(
        max(0.0, down["retrieval_score"] + down["feedback_adjustment"]), abs=1e-6
    )
    assert up["rank"] < down["rank"]


def test_search_counts_accesses(client, account):
    h = account.headers("memory:rw")
    e = _remember(client, h, "The staging database is reset every Sunday night.")
    first = _search(client, account, query="staging database reset").json()["items"][0]
    assert first["entry"]["access_count"] == 1 and first["entry"]["last_accessed_at"]
    second = _search(client, account, query="staging database reset").json()["items"][0]
    assert second["entry"]["access_count"] == 2
    assert client.get(f"{ENTRIES}/{e['id']}", headers=h).json()["access_count"] == 2


def test_another_accounts_memories_never_come_back(client, account, other_account, corpus):
    # The other account stores the same text; each account only ever sees its own entry
    mine = {
        i["entry"]["id"] for i in _search(client, account, query="blue-green deploy pipeline").json()["items"]
    }
    theirs_entry = _remember(
        client,
        other_account.headers("memory:rw"),
        "Production deploys use the blue-green pipeline with a manual approval step.",
    )
    theirs = _search(client, other_account, query="blue-green deploy pipeline").json()["items"]
    assert [i["entry"]["id"] for i in theirs] == [theirs_entry["id"]]
    assert theirs_entry["id"] not in {
        i["entry"]["id"] for i in _search(client, account, query="blue-green deploy pipeline").json()["items"]
    }
    assert corpus["deploy"]["id"] in mine
    assert client.post(SEARCH, json={"query": "x"}, headers=account.headers("skills:r")).status_code == 403


def test_search_hits_report_the_entrys_indexing_state(client, account):
    # Given an entry stored and indexed
    h = account.headers("memory:rw")
    r = client.post(
        "/api/memory/entries",
        headers=h,
        json={
            "content": "The deploy pipeline needs the staging database migrated first",
            "memory_type": "procedural",
            "evidence": [{"source_type": "url", "source_id": "https://example.com/x"}],
        },
    )
    assert r.status_code == 201, r.text
    # When a search finds it
    found = client.post("/api/memory/search", headers=h, json={"query": "staging database migrated"}).json()
    # Then the hit carries the same indexing state as GET /entries/{id}
    hit = next(i for i in found["items"] if i["entry"]["id"] == r.json()["id"])
    detail = client.get(f"/api/memory/entries/{r.json()['id']}", headers=h).json()
    assert hit["entry"]["indexing"]["status"] == detail["indexing"]["status"] == "indexed"
    assert hit["entry"]["indexing"]["document_id"] == detail["indexing"]["document_id"]


def test_min_similarity_drops_weak_vector_only_hits_but_keeps_lexical_matches(client, account, corpus):
    # An unrelated query: the vector leg still returns its nearest neighbours, at low similarity
    loose = _search(client, account, query="favourite pizza topping of the team").json()
    assert loose["items"] and all(not i["lexical_matched"] for i in loose["items"])
    assert "filtered_by_min_similarity" not in loose
    top = max(i["vector_score"] for i in loose["items"])
    strict = _search(
        client, account, query="favourite pizza topping of the team", min_similarity=top + 0.001
    ).json()
    assert strict["items"] == [] and strict["filtered_by_min_similarity"] == len(loose["items"])
    # A lexical match stays whatever its similarity
    lexical = _search(client, account, query="blue-green deploy pipeline", min_similarity=1).json()
    assert lexical["items"] and all(i["lexical_matched"] for i in lexical["items"])
    assert _search(client, account, query="x", min_similarity=1.5).status_code == 400


def test_searching_a_status_that_leaves_the_index_is_a_400_pointing_at_the_list(client, account):
    h = account.headers("memory:r")
    for status in ("invalidated", "Archived", "superseded", "expired"):
        r = client.post("/api/memory/search", json={"query": "deploy", "status": status}, headers=h)
        assert r.status_code == 400, r.text
        lowered = status.lower()
        assert r.json()["errors"] == [
            {
                "field": "status",
                "message": (
                    f"{lowered} entries are not in the search index (retired, superseded and expired memories leave "
                    f"search): list them with GET /api/memory/entries?status={lowered}, or read one by id (memory_get over "
                    "MCP)"
                ),
            }
        ]
    r = client.post("/api/memory/search", json={"query": "deploy", "status": "pending"}, headers=h)
    assert r.status_code == 200
