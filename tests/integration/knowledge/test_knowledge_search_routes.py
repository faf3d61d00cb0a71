"""Knowledge index/search/links over REST: scopes, validation naming the field, Cache-Control, the catalog's index
status, and tenant isolation of each route with another account's ids."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.knowledge.text_corpus import files

INDEX, SEARCH = "/api/knowledge/index", "/api/knowledge/search"


def _seed(client: Any, acc: Any, path: str = "product/guide", package: str = "en") -> dict[str, Any]:
    h = acc.headers("knowledge:rw")
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": path},
        headers=h,
    ).json()
    body = {"files": [f.model_dump(exclude_none=True) for f in files(package)]}
    pushed = client.post(f"/api/knowledge/sources/{src['id']}/snapshots", json=body, headers=h)
    assert pushed.status_code == 201, pushed.text
    rev = pushed.json()["revision"]["id"]
    docs = client.get(f"/api/knowledge/revisions/{rev}/documents", headers=h, params={"limit": 100}).json()
    return {"source_id": src["id"], "revision_id": rev, "docs": {d["path"]: d["id"] for d in docs["items"]}}


@pytest.fixture
def seeded(client, account, make_retrieval, serve_retrieval) -> dict[str, Any]:
    serve_retrieval(make_retrieval())
    ids = _seed(client, account)
    r = client.post(INDEX, json={"source_id": ids["source_id"]}, headers=account.headers("knowledge:rw"))
    assert r.status_code == 200, r.text
    ids["report"] = r.json()
    return ids


def test_index_search_links_over_rest(client, account, seeded):
    item = seeded["report"]["items"][0]
    assert (item["status"], item["chunks"], item["dangling_links"], item["escaping_links"]) == (
        "indexed",
        7,
        3,
        1,
    )
    h = account.headers("knowledge:r")
    r = client.post(SEARCH, json={"query": "pro plan priority support", "top_k": 3}, headers=h)
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-store"
    body = r.json()
    assert body["query_id"] and body["degraded"] == [] and "content" not in body["items"][0]
    assert body["items"][0]["citation"] == "guide/billing.md # Billing > Plans"
    links = client.get(f"/api/knowledge/documents/{seeded['docs']['guide/billing.md']}/links", headers=h)
    assert links.status_code == 200 and links.headers["cache-control"] == "private, no-store"
    assert [(i["direction"], i["path"]) for i in links.json()["items"]] == [
        ("outgoing", "guide/setup.md"),
        ("incoming", "guide/setup.md"),
    ]
    card = client.get("/api/knowledge/catalog", headers=h).json()["items"][0]
    assert card["index_status"] == "indexed"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": ""}, "query"),
        ({"query": "x" * 501}, "query"),
        ({"query": "x", "top_k": 21}, "top_k"),
        ({"query": "x", "top_k": "5"}, "top_k"),
        ({"query": "x", "source_ids": ["not-a-uuid"]}, "source_ids[0]"),
        (
            {"query": "x", "source_ids": [f"00000000-0000-0000-0000-{i:012d}" for i in range(17)]},
            "source_ids",
        ),
        ({"query": "x", "include_content": "yes"}, "include_content"),
        ({"query": "x", "min_similarity": 2}, "min_similarity"),
        ({"query": "x\x00"}, "query"),
        ({"q": "x"}, "q"),
    ],
)
def test_bad_search_input_is_a_400_naming_the_field(client, account, body, field):
    r = client.post(SEARCH, json=body, headers=account.headers("knowledge:r"))
    assert r.status_code == 400, r.text
    assert field in [e["field"] for e in r.json()["errors"]]


def test_scopes(client, account, seeded):
    doc = seeded["docs"]["guide/setup.md"]
    assert client.post(INDEX, json={}, headers=account.headers("knowledge:r")).status_code == 403
    assert client.post(SEARCH, json={"query": "x"}, headers=account.headers("skills:r")).status_code == 403
    assert (
        client.get(f"/api/knowledge/documents/{doc}/links", headers=account.headers("memory:r")).status_code
        == 403
    )
    assert client.post(SEARCH, json={"query": "x"}).status_code == 401


def test_each_route_refuses_another_accounts_ids(client, account, other_account, seeded):
    h = other_account.headers("knowledge:rw")
    r = client.post(INDEX, json={"source_id": seeded["source_id"]}, headers=h)
    assert r.status_code == 404
    r = client.get(f"/api/knowledge/documents/{seeded['docs']['guide/setup.md']}/links", headers=h)
    assert r.status_code == 404 and "Install" not in r.text
    found = client.post(
        SEARCH, json={"query": "pro plan", "source_ids": [seeded["source_id"]]}, headers=h
    ).json()
    assert found["items"] == [] and "none of source_ids" in found["note"]
    assert client.post(SEARCH, json={"query": "pro plan"}, headers=h).json()["items"] == []
    assert client.post(INDEX, json={}, headers=h).json()["items"] == []


def test_search_hits_carry_at_most_16_link_neighbours(client, account, make_retrieval, serve_retrieval):
    """The 16-neighbour cap (issue 23 loose end): a hub linking to 20 documents lists its first 16 outgoing links
    in link order; a target 20 documents link to lists its first 16 incoming links in linking path order."""
    serve_retrieval(make_retrieval())
    h = account.headers("knowledge:rw")
    leaves = [f"d{i:02d}.md" for i in range(1, 21)]
    package = {
        "KNOWLEDGE.yaml": "name: Hub\n",
        "hub.md": "# Hub\n\nhubword " + " ".join(f"[{p}]({p})" for p in leaves) + "\n",
        "target.md": "# Target\n\ntargetword is linked from every leaf.\n",
        **{p: f"# Leaf {p}\n\nleafword [target](target.md)\n" for p in leaves},
    }
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": "kb/hub"},
        headers=h,
    ).json()
    files = [{"path": p, "content": c} for p, c in package.items()]
    assert (
        client.post(
            f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h
        ).status_code
        == 201
    )
    assert client.post(INDEX, json={"source_id": src["id"]}, headers=h).status_code == 200

    def hit(query: str, path: str) -> dict[str, Any]:
        """The hit for ``path`` (the cap is under test here, not the ranking: take it wherever it ranks)."""
        found = client.post(SEARCH, json={"query": query, "top_k": 5}, headers=h).json()
        by_path = {i["path"]: i for i in found["items"]}
        assert path in by_path, found
        return by_path[path]

    hub = hit("hubword", "hub.md")
    assert [(n["direction"], n["path"]) for n in hub["links"]] == [("outgoing", p) for p in leaves[:16]]
    target = hit("targetword", "target.md")
    assert [(n["direction"], n["path"]) for n in target["links"]] == [("incoming", p) for p in leaves[:16]]
    # the document links route is not capped: all 20 of each
    links = client.get(
        f"/api/knowledge/documents/{hub['document_id']}/links", headers=h, params={"limit": 100}
    )
    assert links.json()["total"] == 20
