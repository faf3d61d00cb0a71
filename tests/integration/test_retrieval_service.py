"""The retrieval core against real Postgres and the embedded vector engine: indexing states, re-index skipping,
pending rows invisible, failed rows lexical-only, stale vectors dropped, fail-open search, and the vector index
never returning another account's points."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import ServiceUnavailable
from agentmate.retrieval import lexical, service
from agentmate.retrieval import repository as repo
from agentmate.retrieval.embedded_index import EmbeddedIndex
from agentmate.retrieval.embedders import EmbeddingError, HashingEmbedder
from agentmate.retrieval.service import Retrieval

NS = "testdocs"


class CountingEmbedder:
    """Wraps an embedder and counts texts embedded."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


class BrokenEmbedder:
    name = "broken"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("model unavailable (test)")


@pytest.fixture
def retrieval(make_retrieval: Any) -> Retrieval:
    """This test's own retrieval: the offline embedder and a fresh in-memory vector index."""
    return make_retrieval()


@pytest.fixture
def counting(offline_embedder: Any) -> CountingEmbedder:
    return CountingEmbedder(offline_embedder)


def _doc(source_id: str, content: str, **metadata: Any) -> service.DocumentIn:
    return service.DocumentIn(
        namespace=NS, source_type="note", source_id=source_id, title="", content=content, metadata=metadata
    )


def _ids(result: service.SearchResult) -> list[str]:
    return [h.document["source_id"] for h in result.hits]


def _search(retrieval: Retrieval, account_id: UUID, text: str, **kw: Any) -> service.SearchResult:
    return retrieval.search(
        get_database(), account_id, service.Query(namespace=NS, text=text, top_k=kw.pop("top_k", 5), **kw)
    )


def test_candidate_limit_is_clamped_between_20_and_50():
    assert [service.candidate_limit(k) for k in (1, 5, 8, 12, 13, 50)] == [20, 20, 32, 48, 50, 50]


def test_indexing_marks_rows_indexed_and_skips_unchanged_documents(
    account, counting, make_retrieval, owner_url
):
    db, acc, retrieval = get_database(), UUID(account.account_id), make_retrieval(embedder=counting)
    first = retrieval.index_document(db, acc, _doc("n1", "Otters hold hands while sleeping.", kind="fact"))
    assert first.status == "indexed" and first.error is None
    assert counting.texts == ["Otters hold hands while sleeping."]
    # The same document again is not re-embedded
    assert (
        retrieval.index_document(db, acc, _doc("n1", "Otters hold hands while sleeping.", kind="fact")).status
        == "indexed"
    )
    assert len(counting.texts) == 1
    # Changed metadata or content is
    retrieval.index_document(db, acc, _doc("n1", "Otters hold hands while sleeping.", kind="trivia"))
    assert len(counting.texts) == 2
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT status, embedding_model, embedding_dimension, lexical_text, indexed_at "
            "FROM retrieval_documents WHERE id = %s",
            (first.document_id,),
        ).fetchone()
    assert row[0] == "indexed" and row[1] == counting.name and row[2] == counting.dimensions
    assert row[3] == lexical.projection("", "Otters hold hands while sleeping.") and row[4] is not None


def test_a_failed_row_serves_the_lexical_leg_only(account, make_retrieval):
    db, acc, index = get_database(), UUID(account.account_id), EmbeddedIndex()
    broken = make_retrieval(embedder=BrokenEmbedder(), index=index)
    r = broken.index_document(db, acc, _doc("f1", "Axolotls regrow their limbs."))
    assert r.status == "failed" and "model unavailable" in (r.error or "")
    working = make_retrieval(index=index)  # the vector leg works again, but the row has no vector
    result = _search(working, acc, "axolotls regrow limbs")
    assert _ids(result) == ["f1"] and result.hits[0].channels == ("lexical",) and result.degraded == []
    index.close()


def test_pending_rows_are_invisible_to_both_legs(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    with db.tenant(acc) as conn:
        repo.upsert_pending(
            conn,
            account_id=acc,
            doc={
                "namespace": NS,
                "source_type": "note",
                "source_id": "p1",
                "chunk_key": "default",
                "title": "",
                "content": "Narwhal tusks are teeth.",
                "content_hash": "h",
                "metadata": {},
                "lexical_text": lexical.projection("", "Narwhal tusks are teeth."),
            },
        )
    assert _ids(_search(retrieval, acc, "narwhal tusks teeth")) == []
    with db.tenant(acc) as conn:
        conn.execute(
            "UPDATE retrieval_documents SET status = 'failed' WHERE source_id = 'p1' AND account_id = %s",
            (acc,),
        )
    assert _ids(_search(retrieval, acc, "narwhal tusks teeth")) == ["p1"]


def test_rows_without_a_projection_are_invisible_lexically_until_rebuilt(account, retrieval, owner_url):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_document(db, acc, _doc("e1", "Pangolins are covered in keratin scales."))
    with psycopg.connect(owner_url) as conn:
        conn.execute("UPDATE retrieval_documents SET lexical_text = '' WHERE account_id = %s", (acc,))
    result = _search(retrieval, acc, "pangolins keratin scales")
    assert all(h.channels == ("vector",) for h in result.hits)


def test_stale_vectors_of_deleted_rows_are_never_served(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_document(db, acc, _doc("s1", "Tardigrades survive in outer space."))
    with db.tenant(acc) as conn:
        points = service.remove_source(conn, acc, namespace=NS, source_type="note", source_id="s1")
    assert len(points) == 1
    # The vector point still exists (not removed yet), but search hydrates only indexed rows
    assert _ids(_search(retrieval, acc, "tardigrades outer space")) == []
    assert retrieval.vector_index().count(str(acc), NS) == 1
    assert retrieval.remove_points(acc, points) is None
    assert retrieval.vector_index().count(str(acc), NS) == 0


def test_the_vector_index_never_returns_another_accounts_points(account, other_account, retrieval):
    db = get_database()
    a, b = UUID(account.account_id), UUID(other_account.account_id)
    text = "Capybaras are the largest living rodents."
    ra = retrieval.index_document(db, a, _doc("same", text))
    rb = retrieval.index_document(db, b, _doc("same", text))
    assert ra.document_id != rb.document_id
    vector = retrieval.embedder().embed([text])[0]
    index = retrieval.vector_index()
    hits_a = index.search(str(a), NS, vector, 50)
    hits_b = index.search(str(b), NS, vector, 50)
    assert {h.payload["account_id"] for h in hits_a} == {str(a)}
    assert {h.payload["account_id"] for h in hits_b} == {str(b)}
    assert not {h.id for h in hits_a} & {h.id for h in hits_b}
    # Through the service each account gets only its own document
    assert [h.document["id"] for h in _search(retrieval, a, text).hits] == [ra.document_id]
    assert [h.document["id"] for h in _search(retrieval, b, text).hits] == [rb.document_id]


def test_metadata_filters_apply_to_both_legs(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_documents(
        db,
        acc,
        [
            _doc("m1", "Wombat poop is cube shaped.", status="active"),
            _doc("m2", "Wombat burrows are long.", status="archived"),
        ],
    )
    assert _ids(_search(retrieval, acc, "wombat", metadata={"status": "archived"})) == ["m2"]
    assert set(_ids(_search(retrieval, acc, "wombat"))) == {"m1", "m2"}
    assert _ids(_search(retrieval, acc, "wombat", source_type="other")) == []


def test_both_legs_down_raise_service_unavailable(account, make_retrieval, monkeypatch):
    acc, broken = UUID(account.account_id), make_retrieval(embedder=BrokenEmbedder())

    def fail(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise psycopg.errors.QueryCanceled("test")

    monkeypatch.setattr(repo, "lexical_search", fail)
    with pytest.raises(ServiceUnavailable) as info:
        _search(broken, acc, "anything at all")
    assert {d["leg"] for d in info.value.extra["degraded"]} == {"lexical", "vector"}


def test_a_query_without_tokens_skips_the_lexical_leg_without_degrading(account, retrieval):
    result = _search(retrieval, UUID(account.account_id), "!!! ??? ...")
    assert result.degraded == [] and result.hits == []


def test_search_runs_the_callback_in_the_same_tenant_transaction(account, retrieval):
    db, acc = get_database(), UUID(account.account_id)
    retrieval.index_document(db, acc, _doc("t1", "Koalas sleep twenty hours a day."))

    def then(conn: Any, result: service.SearchResult) -> tuple[str, list[str]]:
        setting = conn.execute("SELECT current_setting('app.account_id') AS a").fetchone()["a"]
        return setting, _ids(result)

    pending = retrieval.begin_search(acc, service.Query(namespace=NS, text="koalas sleep", top_k=3))
    with db.tenant(acc, pipeline=True) as conn:
        got = then(conn, pending.complete(conn))
    assert got == (
        str(acc),
        ["t1"],
    )


def test_a_hashing_embedder_can_replace_the_default(account, make_retrieval):
    retrieval = make_retrieval(embedder=HashingEmbedder(64))
    db, acc = get_database(), UUID(account.account_id)
    assert retrieval.index_document(db, acc, _doc(str(uuid4()), "Hashing works offline.")).status == "indexed"
    assert _search(retrieval, acc, "hashing offline").hits[0].channels == ("lexical", "vector")
    assert retrieval.vector_index().count(str(acc), NS) == 1


def test_the_query_log_reads_back_as_a_typed_row_and_only_in_its_own_account(account, other_account):
    # Given a logged query (what knowledge search records)
    db, acc, other = get_database(), UUID(account.account_id), UUID(other_account.account_id)
    hit = {"document_id": str(uuid4()), "score": 0.5}
    degraded = [{"leg": "vector", "reason": "embedder down"}]
    with db.tenant(acc) as conn:
        query_id = repo.record_query(
            conn,
            account_id=acc,
            user_id=None,
            key_id=None,
            namespace="knowledge",
            query="deploy order",
            filters={"domain": "ops"},
            top_k=5,
            hits=[hit],
            degraded=degraded,
        )
        # When it is read back, Then every column is there as written (hit_count derived)
        row = repo.get_query(conn, account_id=acc, query_id=query_id)
    assert row is not None
    assert {k: v for k, v in row.items() if k != "created_at"} == {
        "id": query_id,
        "namespace": "knowledge",
        "query": "deploy order",
        "filters": {"domain": "ops"},
        "top_k": 5,
        "hits": [hit],
        "hit_count": 1,
        "degraded": degraded,
    }
    # and another account cannot read it
    with db.tenant(other) as conn:
        assert repo.get_query(conn, account_id=other, query_id=query_id) is None
