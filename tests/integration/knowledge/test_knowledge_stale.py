"""Knowledge says when it is stale (issue 23 item 2): after a push that changes a document, search and the context
pack's KNOWLEDGE layer list the source in ``stale`` (its active revision is not the indexed one) instead of serving
the old text silently; a push with ``index: true`` indexes the new revision in the same request."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.knowledge.test_knowledge_search_routes import INDEX, SEARCH, _seed
from tests.integration.knowledge.text_corpus import files

NEW_PLANS = "# Billing\n\n## Plans\n\nThe pro plan now includes phone support and quarterly invoices.\n"
QUERY = "pro plan priority support phone invoices"


def _push(client: Any, acc: Any, source_id: str, **extra: Any) -> Any:
    body = {
        "files": [f.model_dump(exclude_none=True) for f in files("en", {"guide/billing.md": NEW_PLANS})],
        **extra,
    }
    return client.post(
        f"/api/knowledge/sources/{source_id}/snapshots", json=body, headers=acc.headers("knowledge:rw")
    )


@pytest.fixture
def indexed(client, account, make_retrieval, serve_retrieval) -> dict[str, Any]:
    serve_retrieval(make_retrieval())
    ids = _seed(client, account)
    r = client.post(INDEX, json={"source_id": ids["source_id"]}, headers=account.headers("knowledge:rw"))
    assert r.status_code == 200, r.text
    return ids


def _search(client: Any, acc: Any, **body: Any) -> dict[str, Any]:
    r = client.post(
        SEARCH, json={"query": QUERY, "include_content": True, **body}, headers=acc.headers("knowledge:r")
    )
    assert r.status_code == 200, r.text
    return r.json()


def test_search_lists_a_source_pushed_since_its_index_run_as_stale(client, account, indexed):
    assert _search(client, account)["stale"] == []
    pushed = _push(client, account, indexed["source_id"])
    assert pushed.status_code == 201, pushed.text
    assert pushed.json()["index"] is None
    new_rev = pushed.json()["revision"]["id"]
    found = _search(client, account)
    assert found["stale"] == [
        {
            "source_id": indexed["source_id"],
            "name": "product-guide",
            "active_revision_id": new_rev,
            "indexed_revision_id": indexed["revision_id"],
            "indexed_at": found["stale"][0]["indexed_at"],
            "stale": True,
        }
    ]
    assert found["stale"][0]["indexed_at"] is not None
    # the hits are still the old revision's text, and now they say so
    assert {h["revision_id"] for h in found["items"]} == {indexed["revision_id"]}
    assert all("phone support" not in h["content"] for h in found["items"])
    # a filter that selects another source's only: not listed
    assert _search(client, account, domain="no-such-domain")["stale"] == []
    # indexing catches up
    r = client.post(INDEX, json={"source_id": indexed["source_id"]}, headers=account.headers("knowledge:rw"))
    assert r.status_code == 200, r.text
    found = _search(client, account)
    assert found["stale"] == [] and {h["revision_id"] for h in found["items"]} == {new_rev}


def test_a_never_indexed_source_is_stale_with_no_indexed_revision(
    client, account, make_retrieval, serve_retrieval
):
    serve_retrieval(make_retrieval())
    ids = _seed(client, account)
    found = _search(client, account)
    assert found["items"] == []
    assert [(s["source_id"], s["indexed_revision_id"], s["indexed_at"]) for s in found["stale"]] == [
        (ids["source_id"], None, None)
    ]


def test_push_with_index_true_indexes_the_new_revision(client, account, indexed):
    pushed = _push(client, account, indexed["source_id"], index=True)
    assert pushed.status_code == 201, pushed.text
    report = pushed.json()["index"]
    new_rev = pushed.json()["revision"]["id"]
    assert report["job"] is None and report["total"] == 1
    assert (report["items"][0]["source_id"], report["items"][0]["revision_id"]) == (
        indexed["source_id"],
        new_rev,
    )
    found = _search(client, account)
    assert found["stale"] == []
    assert any("phone support" in h["content"] for h in found["items"])
    assert {h["revision_id"] for h in found["items"]} == {new_rev}
    card = client.get("/api/knowledge/catalog", headers=account.headers("knowledge:r")).json()["items"][0]
    assert card["index_status"] == "indexed"


def test_index_flag_is_strict_and_named(client, account, indexed):
    r = _push(client, account, indexed["source_id"], index="yes")
    assert r.status_code == 400, r.text
    assert "index" in [e["field"] for e in r.json()["errors"]]
    r = client.post(
        f"/api/knowledge/sources/{indexed['source_id']}/sync",
        json={"index": 1},
        headers=account.headers("knowledge:rw"),
    )
    assert r.status_code == 400 and "index" in [e["field"] for e in r.json()["errors"]]


def test_pack_knowledge_layer_reports_stale_sources(client, account, indexed):
    pushed = _push(client, account, indexed["source_id"])
    assert pushed.status_code == 201
    r = client.post(
        "/api/context/pack",
        json={"layers": ["KNOWLEDGE"], "task": "answer a billing question", "query": QUERY},
        headers=account.headers("memory:r", "knowledge:r"),
    )
    assert r.status_code == 200, r.text
    out = r.json()
    layer = next(x for x in out["layers"] if x["layer"] == "KNOWLEDGE")
    assert [(s["source_id"], s["active_revision_id"], s["indexed_revision_id"]) for s in layer["stale"]] == [
        (indexed["source_id"], pushed.json()["revision"]["id"], indexed["revision_id"])
    ]
    assert layer["items"] and "stale: the chunk index of product-guide" in layer["note"]
    # the fix for both transports (an MCP caller has no REST route to call)
    assert "POST /api/knowledge/index, MCP knowledge_index_active" in layer["note"]
    assert any(w.startswith("KNOWLEDGE: ") and "stale" in w for w in out["warnings"])
    # once indexed: no stale block at all, no warning
    client.post(INDEX, json={"source_id": indexed["source_id"]}, headers=account.headers("knowledge:rw"))
    out = client.post(
        "/api/context/pack",
        json={"layers": ["KNOWLEDGE"], "task": "answer a billing question", "query": QUERY},
        headers=account.headers("memory:r", "knowledge:r"),
    ).json()
    layer = next(x for x in out["layers"] if x["layer"] == "KNOWLEDGE")
    assert "stale" not in layer and out["warnings"] == []
