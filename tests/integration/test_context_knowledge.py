"""The context pack's KNOWLEDGE layer (issue 14) through POST /api/context/pack over an indexed corpus of our own:
items cited ``path # heading_path`` with traceable refs, domain/source filters that only narrow, the layer's budget,
a failing leg as a note (never an error), and tenant isolation."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.principal import Principal
from agentmate.knowledge.search import index
from agentmate.knowledge.search.schemas import KnowledgeIndexRequest
from agentmate.knowledge.sources import service
from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush
from agentmate.packages.schemas import SourceInput
from agentmate.packages.service import Actor
from agentmate.retrieval import repository as retrieval_repo
from agentmate.retrieval.embedders import EmbeddingError
from tests.integration.knowledge.text_corpus import big_document, files

PACK = "/api/context/pack"


class BrokenEmbedder:
    name = "broken-embedder"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("embedding endpoint unreachable (test)")


@pytest.fixture
def kb(account, make_retrieval, serve_retrieval) -> dict[str, Any]:
    rt = serve_retrieval(make_retrieval())
    p = Principal(UUID(account.account_id), UUID(account.user_id), "jwt")
    actor, db = Actor(p.account_id, p.user_id), get_database()
    out = {}
    for path, package, extra in (
        ("product/guide", "en", {"big.md": big_document()}),
        ("support/faq", "zh", None),
    ):
        src = service.register_source(
            db, actor, SourceInput(type="local", repository_url="file:///kb", package_path=path)
        ).source
        out[package] = service.push_snapshot(
            db, actor, src.id, KnowledgeSnapshotPush(files=files(package, extra))
        )
    index.index_active(db, rt, p, KnowledgeIndexRequest())
    return out


def _pack(client: Any, headers: dict[str, str], **body: Any) -> dict[str, Any]:
    r = client.post(PACK, json={"layers": ["KNOWLEDGE"], **body}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()


def _layer(out: dict[str, Any]) -> dict[str, Any]:
    return next(layer for layer in out["layers"] if layer["layer"] == "KNOWLEDGE")


def test_knowledge_items_carry_citation_ref_and_body(client, account, kb):
    out = _pack(
        client,
        account.headers("memory:r", "knowledge:r"),
        task="answer a billing question",
        query="priority support invoices pro plan",
        render=True,
    )
    knowledge = _layer(out)
    top = knowledge["items"][0]
    assert (top["source"], top["citation"]) == ("knowledge", "guide/billing.md # Billing > Plans")
    assert top["title"] == "product-guide · Billing > Plans"
    assert top["ref"].startswith("knowledge_chunk:") and top["ref"].endswith("/chunk-0001")
    assert top["content"] == "## Plans\n\nThe pro plan includes priority support and invoices in PDF.\n"
    assert knowledge["note"] is None and out.get("warnings") in (None, [])
    assert (
        "[KNOWLEDGE]\n- knowledge · product-guide · Billing > Plans · guide/billing.md # Billing > Plans"
        in out["rendered"]
    )
    chinese = _layer(
        _pack(client, account.headers("memory:r", "knowledge:r"), task="三十天内可以申请全额退款")
    )
    assert chinese["items"][0]["citation"] == "退款.md # 退款政策"


def test_domain_and_source_filters_only_narrow(client, account, kb):
    h = account.headers("memory:r", "knowledge:r")
    support = _layer(_pack(client, h, task="退款 billing plans", knowledge_domain="support", top_k=10))
    assert support["items"] and {i["citation"].split(" # ")[0] for i in support["items"]} <= {
        "退款.md",
        "发票.md",
    }
    crossed = _layer(
        _pack(
            client,
            h,
            task="退款 billing plans",
            knowledge_domain="support",
            knowledge_source_ids=[str(kb["en"].source.id)],
        )
    )
    assert crossed["items"] == [] and "among source_ids" in crossed["note"]
    only_en = _layer(
        _pack(client, h, task="退款 billing plans", knowledge_source_ids=[str(kb["en"].source.id)])
    )
    assert only_en["items"] and all(not i["citation"].startswith(("退款", "发票")) for i in only_en["items"])


def test_the_layer_budget_holds_on_a_large_chunk(client, account, kb):
    out = _pack(
        client,
        account.headers("memory:r", "knowledge:r"),
        task="oversized section quotas limits",
        max_chars=500,
        top_k=3,
    )
    knowledge = _layer(out)
    assert knowledge["char_budget"] == 500 and knowledge["chars_used"] <= 500
    assert knowledge["truncated"] and knowledge["items"][0]["truncated"]
    assert knowledge["items"][0]["citation"] == "big.md # Limits"
    assert sum(len(i["content"]) for i in knowledge["items"]) == knowledge["chars_used"]
    assert len(knowledge["items"]) + knowledge["dropped"] == 3


def test_a_failing_leg_is_a_note_and_both_failing_is_an_empty_layer(
    client, account, kb, make_retrieval, serve_retrieval, monkeypatch
):
    h = account.headers("memory:r", "knowledge:r")
    serve_retrieval(make_retrieval(embedder=BrokenEmbedder()))
    out = _pack(client, h, task="pro plan priority support")
    knowledge = _layer(out)
    assert knowledge["items"] and knowledge["note"].startswith(
        "search degraded: vector leg: embedding failed"
    )
    assert any(w.startswith("KNOWLEDGE: search degraded") for w in out["warnings"])

    def broken(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout (test)")

    monkeypatch.setattr(retrieval_repo, "lexical_search", broken)
    out = _pack(client, h, task="pro plan priority support")
    knowledge = _layer(out)
    assert knowledge["items"] == [] and knowledge["note"].startswith("failed: search is unavailable")
    assert any(w.startswith("KNOWLEDGE: failed") for w in out["warnings"])


def test_another_account_gets_no_knowledge(client, other_account, kb):
    knowledge = _layer(
        _pack(
            client,
            other_account.headers("memory:r", "knowledge:r"),
            task="pro plan",
            knowledge_source_ids=[str(kb["en"].source.id)],
        )
    )
    assert knowledge["items"] == [] and "none of source_ids" in knowledge["note"]
    assert (
        _layer(_pack(client, other_account.headers("memory:r", "knowledge:r"), task="pro plan"))["items"]
        == []
    )
