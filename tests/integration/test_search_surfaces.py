# ruff: noqa: RUF001  (CJK punctuation is part of the test text)
"""Every search surface ranks through the new lexical leg and fusion (issue 21), through its REST route: a
natural-language question full of stop words, an exact identifier and a CJK query are found by the lexical leg,
every hit reports the same leg fields, and with the vector leg down the lexical leg answers alone (fail-open).
Wiki search: tests/integration/wiki/test_wiki_retrieval.py."""

from __future__ import annotations

from typing import Any

import pytest

from agentmate.retrieval.embedders import EmbeddingError

LEG_FIELDS = {"channels", "lexical_score", "vector_score", "lexical_matched"}

TEXTS = {
    "group": "Caroline went to an LGBTQ support group on Tuesday and found it moving.",
    "ticket": "Incident INC-48213 was closed after the billing database failover.",
    "tokyo": "下周我们去东京出差，住在新宿的酒店。",
    "beach": "Melanie took the kids to the beach last weekend.",
}
QUERIES = [  # (query, the text it must find first through the lexical leg)
    ("When did Caroline go to the support group?", "group"),
    ("what was INC-48213 about", "ticket"),
    ("东京出差住哪里", "tokyo"),
]


class BrokenEmbedder:
    name = "broken"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("model unavailable (test)")


def _memory(client: Any, account: Any) -> tuple[dict[str, str], Any]:
    h = account.headers("memory:rw")
    ids = {}
    for key, text in TEXTS.items():
        r = client.post(
            "/api/memory/entries",
            json={
                "memory_type": "episodic",
                "content": text,
                "evidence": [{"source_type": "test", "source_id": key}],
            },
            headers=h,
        )
        assert r.status_code == 201, r.text
        ids[r.json()["id"]] = key

    def search(query: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
        r = client.post("/api/memory/search", json={"query": query, "top_k": 4}, headers=h)
        assert r.status_code == 200, r.text
        return [(ids[i["entry"]["id"]], i) for i in r.json()["items"]], r.json()

    return ids, search


def _knowledge(client: Any, account: Any) -> tuple[dict[str, str], Any]:
    h = account.headers("knowledge:rw")
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "surfaces"},
        headers=h,
    ).json()
    files = [{"path": "KNOWLEDGE.yaml", "content": "name: surfaces\ndescription: search surface test\n"}]
    files += [{"path": f"{k}.md", "content": f"# {k}\n\n{t}\n"} for k, t in TEXTS.items()]
    assert (
        client.post(
            f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h
        ).status_code
        == 201
    )
    assert client.post("/api/knowledge/index", json={"source_id": src["id"]}, headers=h).status_code == 200

    def search(query: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
        r = client.post("/api/knowledge/search", json={"query": query, "top_k": 4}, headers=h)
        assert r.status_code == 200, r.text
        return [(i["path"].removesuffix(".md"), i) for i in r.json()["items"]], r.json()

    return {}, search


def _skills(client: Any, account: Any) -> tuple[dict[str, str], Any]:
    h = account.headers("skills:rw")
    for key, text in TEXTS.items():
        body = f"---\nname: {key}\ndescription: {text}\n---\n\n# {key}\n\n{text}\n"
        r = client.post(
            "/api/skills/versions",
            json={"skill_name": key, "version": "1", "content": body, "activate": True},
            headers=h,
        )
        assert r.status_code == 201, r.text
    assert client.post("/api/skills/index", json={}, headers=h).status_code == 200

    def search(query: str) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
        r = client.post("/api/skills/search", json={"query": query, "top_k": 4}, headers=h)
        assert r.status_code == 200, r.text
        return [(i["skill_name"], i) for i in r.json()["items"]], r.json()

    return {}, search


SURFACES = {"memory": _memory, "knowledge": _knowledge, "skills": _skills}


@pytest.mark.parametrize("surface", SURFACES)
def test_each_surface_finds_natural_language_identifier_and_cjk_queries_lexically(client, account, surface):
    _, search = SURFACES[surface](client, account)
    for query, expected in QUERIES:
        hits, body = search(query)
        assert hits, (surface, query)
        first, item = hits[0]
        assert first == expected, (surface, query, [k for k, _ in hits])
        assert "lexical" in item["channels"] and item["lexical_score"] > 0
        assert all(LEG_FIELDS <= set(i) for _, i in hits)
        assert body["degraded"] == []


@pytest.mark.parametrize("surface", SURFACES)
def test_each_surface_fails_open_to_the_lexical_leg(
    client, account, surface, make_retrieval, serve_retrieval
):
    _, search = SURFACES[surface](client, account)  # indexed with the working embedder
    serve_retrieval(make_retrieval(embedder=BrokenEmbedder()))
    hits, body = search("When did Caroline go to the support group?")
    assert hits[0][0] == "group" and hits[0][1]["channels"] == ["lexical"]
    assert [d["leg"] for d in body["degraded"]] == ["vector"]


@pytest.mark.parametrize("surface", ["skills", "knowledge", "memory"])
def test_min_similarity_keeps_hits_holding_every_term_and_drops_weak_vector_only_ones(
    client, account, surface
):
    _, search = SURFACES[surface](client, account)
    hits, _ = search("INC-48213")
    assert hits[0][0] == "ticket" and hits[0][1]["lexical_matched"] is True
    route, scope = {
        "memory": ("/api/memory/search", "memory:r"),
        "knowledge": ("/api/knowledge/search", "knowledge:r"),
        "skills": ("/api/skills/search", "skills:r"),
    }[surface]
    r = client.post(
        route, json={"query": "INC-48213", "top_k": 4, "min_similarity": 0.99}, headers=account.headers(scope)
    )
    assert r.status_code == 200, r.text
    kept = r.json()["items"]
    assert len(kept) == 1 and kept[0]["lexical_matched"] is True
    assert r.json()["filtered_by_min_similarity"] >= 1
