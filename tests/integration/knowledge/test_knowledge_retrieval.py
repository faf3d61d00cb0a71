"""Knowledge K2 retrieval on real Postgres and the embedded vector engine: index the hand-written corpus (English and
Chinese), its chunk rows and link graph (dangling kept, escaping dropped, orphans), re-index removing earlier
revisions, hybrid search in both languages with provenance, the query log, filters that only narrow,
min_similarity, fail-open, and tenant isolation."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.core.errors import Conflict, NotFound, ServiceUnavailable
from agentmate.core.pagination import PageParams
from agentmate.core.principal import Principal
from agentmate.knowledge.search import index
from agentmate.knowledge.search import service as search
from agentmate.knowledge.search.schemas import KnowledgeIndexRequest, KnowledgeSearchRequest
from agentmate.knowledge.sources import service
from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush
from agentmate.packages.schemas import SourceInput
from agentmate.packages.service import Actor
from agentmate.retrieval import repository as retrieval_repo
from agentmate.retrieval.embedders import EmbeddingError
from tests.integration.knowledge.text_corpus import big_document, files


class BrokenEmbedder:
    name = "broken-embedder"
    dimensions = 256

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise EmbeddingError("embedding endpoint unreachable (test)")


def _principal(acc: Any) -> Principal:
    return Principal(UUID(acc.account_id), UUID(acc.user_id), "jwt")


def _source(p: Principal, package_path: str, package: str, extra: dict[str, str] | None = None) -> Any:
    actor = Actor(p.account_id, p.user_id)
    src = service.register_source(
        get_database(),
        actor,
        SourceInput(type="local", repository_url="file:///kb", package_path=package_path),
    ).source
    return service.push_snapshot(
        get_database(), actor, src.id, KnowledgeSnapshotPush(files=files(package, extra))
    )


@pytest.fixture
def rt(make_retrieval):
    return make_retrieval()


@pytest.fixture
def me(account) -> Principal:
    return _principal(account)


@pytest.fixture
def kb(me, rt) -> dict[str, Any]:
    en = _source(me, "product/guide", "en", {"big.md": big_document()})
    zh = _source(me, "support/faq", "zh")
    report = index.index_active(get_database(), rt, me, KnowledgeIndexRequest())
    return {"en": en, "zh": zh, "report": report}


def _search(rt, p, **body) -> Any:
    return search.search(get_database(), rt, p, KnowledgeSearchRequest(**body))


def _rows(owner_url: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(owner_url) as conn:
        return conn.execute(sql, args).fetchall()


def test_index_reports_chunks_links_and_state(kb, owner_url):
    items = {i.name: i for i in kb["report"].items}
    en, zh = items["product-guide"], items["support-faq"]
    # en: setup.md 4 chunks, billing.md 2 sections (1 chunk each), orphan.md 1, big.md 2 (oversized, packed)
    assert (en.status, en.documents, en.chunks, en.failed_chunks, en.truncated_documents) == (
        "indexed",
        4,
        4 + 2 + 1 + 2,
        0,
        0,
    )
    # setup.md: billing (ok), img/flow.png, missing.md, config/settings.md (dangling x3), 1 escaping;
    # billing.md → setup.md (ok)
    assert (en.links, en.dangling_links, en.escaping_links) == (5, 3, 1)
    assert (zh.documents, zh.chunks, zh.links, zh.dangling_links) == (2, 2, 2, 0)
    assert kb["report"].total == 2 and kb["report"].indexed == 2
    big = _rows(
        owner_url,
        """SELECT c.chunk_key, c.heading_path, char_length(c.content), c.start_line, c.end_line
                              FROM knowledge_chunks c JOIN knowledge_documents d ON d.id = c.document_id
                              WHERE d.path = 'big.md' AND c.revision_id = %s ORDER BY c.ordinal""",
        kb["en"].revision.id,
    )
    assert big == [("chunk-0000", "Limits", 7650, 1, 18), ("chunk-0001", "Limits", 3819, 19, 25)]
    # the retrieval projection holds one row per chunk with its provenance
    meta = _rows(
        owner_url,
        """SELECT metadata FROM retrieval_documents WHERE namespace = 'knowledge'
                               AND metadata->>'path' = 'guide/setup.md' AND metadata->>'source_id' = %s
                               ORDER BY chunk_key""",
        str(kb["en"].source.id),
    )
    assert [m[0]["heading_path"] for m in meta] == ["", "Setup", "Setup > Deep step", "Setup > Configure"]
    assert meta[1][0]["knowledge_base"] == "product-guide"
    assert meta[1][0]["revision_id"] == str(kb["en"].revision.id)


def _doc_id(owner_url: str, revision_id: UUID, path: str) -> UUID:
    return _rows(
        owner_url,
        "SELECT id FROM knowledge_documents WHERE revision_id = %s AND path = %s",
        revision_id,
        path,
    )[0][0]


def test_document_links_in_both_directions_dangling_kept_orphans_empty(kb, me, owner_url):
    db, page = get_database(), PageParams(limit=20, offset=0)
    rev = kb["en"].revision.id
    setup = search.document_links(db, me, _doc_id(owner_url, rev, "guide/setup.md"), page)
    billing_id = _doc_id(owner_url, rev, "guide/billing.md")
    assert setup.indexed and setup.total == 5
    assert [(i.direction, i.path, i.document_id, i.kind) for i in setup.items] == [
        ("outgoing", "guide/billing.md", billing_id, "link"),
        ("outgoing", "img/flow.png", None, "image"),
        ("outgoing", "guide/missing.md", None, "link"),
        ("outgoing", "guide/config/settings.md", None, "link"),
        ("incoming", "guide/billing.md", billing_id, "link"),
    ]
    orphan = search.document_links(db, me, _doc_id(owner_url, rev, "orphan.md"), page)
    assert (orphan.items, orphan.total, orphan.indexed) == ([], 0, True)
    second = search.document_links(
        db, me, _doc_id(owner_url, rev, "guide/setup.md"), PageParams(limit=2, offset=4)
    )
    assert [i.direction for i in second.items] == ["incoming"] and second.total == 5
    with pytest.raises(NotFound):
        search.document_links(db, me, uuid4(), page)


def test_english_search_has_provenance_snippet_links_and_is_logged(kb, me, rt, owner_url):
    out = _search(rt, me, query="priority support invoices pro plan")
    top = out.items[0]
    assert (top.path, top.heading_path, top.citation) == (
        "guide/billing.md",
        "Billing > Plans",
        "guide/billing.md # Billing > Plans",
    )
    assert (top.source_id, top.revision_id, top.knowledge_base, top.domain) == (
        kb["en"].source.id,
        kb["en"].revision.id,
        "product-guide",
        "product",
    )
    assert top.chunk_key == "chunk-0001" and top.content is None and top.lexical_matched
    assert top.snippet == "## Plans\n\nThe pro plan includes priority support and invoices in PDF.\n"
    assert [(n.direction, n.path) for n in top.links] == [
        ("outgoing", "guide/setup.md"),
        ("incoming", "guide/setup.md"),
    ]
    logged = _rows(
        owner_url,
        "SELECT query, filters, hit_count, hits, degraded, namespace FROM retrieval_queries WHERE id = %s",
        out.query_id,
    )[0]
    assert logged[0] == "priority support invoices pro plan" and logged[2] == len(out.items)
    assert (
        logged[1] == {"top_k": 5, "include_content": False} and logged[4] == [] and logged[5] == "knowledge"
    )
    assert logged[3][0]["document_id"] == str(top.document_id) and logged[3][0]["chunk_key"] == "chunk-0001"
    full = _search(rt, me, query="priority support invoices pro plan", include_content=True, top_k=1)
    assert full.items[0].content == top.snippet  # a short chunk is fully visible in its snippet


def test_chinese_search_finds_the_chinese_documents(kb, me, rt):
    # both Chinese documents contain 退款; the words match whole bigrams, never single characters of others
    out = _search(rt, me, query="退款")
    assert {i.path for i in out.items if i.lexical_matched} == {"退款.md", "发票.md"}
    refund = _search(rt, me, query="三十天内可以申请全额退款")
    assert refund.items[0].path == "退款.md" and refund.items[0].heading_path == "退款政策"
    sentence = _search(rt, me, query="电子发票什么时候发送到邮箱")
    assert sentence.items[0].path == "发票.md"
    assert [(n.direction, n.path) for n in sentence.items[0].links] == [
        ("outgoing", "退款.md"),
        ("incoming", "退款.md"),
    ]


def test_code_in_fences_is_searchable_with_its_heading(kb, me, rt):
    out = _search(rt, me, query="tilde fence heading", source_ids=[kb["en"].source.id])
    assert out.items[0].heading_path == "Setup > Deep step"


def test_domain_narrows_source_ids_and_never_widens(kb, me, rt):
    en, zh = kb["en"].source.id, kb["zh"].source.id
    assert {i.source_id for i in _search(rt, me, query="退款 billing", domain="support").items} == {zh}
    both = _search(rt, me, query="退款 billing", source_ids=[en, zh], top_k=10)
    assert {i.source_id for i in both.items} == {en, zh}
    # domain ∩ source_ids: the product domain holds only en
    narrowed = _search(rt, me, query="退款 billing", source_ids=[zh], domain="product")
    assert narrowed.items == [] and "among source_ids" in (narrowed.note or "")
    nothing = _search(rt, me, query="billing", domain="nowhere")
    assert nothing.items == [] and nothing.query_id is not None and "nowhere" in (nothing.note or "")
    unknown = _search(rt, me, query="billing", source_ids=[uuid4()])
    assert unknown.items == [] and "none of source_ids" in (unknown.note or "")


def test_min_similarity_drops_vector_only_hits_below_the_threshold(kb, me, rt):
    loose = _search(rt, me, query="zzzq unrelated gibberish", top_k=5)
    assert loose.items and all(not i.lexical_matched for i in loose.items)
    strict = _search(rt, me, query="zzzq unrelated gibberish", top_k=5, min_similarity=0.99)
    assert strict.items == [] and (strict.filtered_by_min_similarity or 0) >= len(loose.items)
    kept = _search(rt, me, query="pro plan", min_similarity=0.99)
    assert kept.items and all(i.lexical_matched for i in kept.items)


def test_a_failing_vector_leg_degrades_and_is_logged(kb, me, make_retrieval, owner_url):
    broken = make_retrieval(embedder=BrokenEmbedder())
    out = _search(broken, me, query="pro plan")
    assert out.items and out.items[0].channels == ["lexical"] and out.items[0].score == 0.5
    assert [(d.leg, d.reason) for d in out.degraded] == [
        ("vector", "embedding failed: embedding endpoint unreachable (test)")
    ]
    logged = _rows(owner_url, "SELECT degraded FROM retrieval_queries WHERE id = %s", out.query_id)[0][0]
    assert logged == [{"leg": "vector", "reason": "embedding failed: embedding endpoint unreachable (test)"}]


def test_both_legs_failing_is_service_unavailable(kb, me, make_retrieval, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        raise psycopg.errors.QueryCanceled("canceling statement due to statement timeout (test)")

    monkeypatch.setattr(retrieval_repo, "lexical_search", broken)
    with pytest.raises(ServiceUnavailable):
        _search(make_retrieval(embedder=BrokenEmbedder()), me, query="pro plan")


def test_reindex_after_a_new_revision_removes_the_earlier_rows(kb, me, rt, owner_url):
    db = get_database()
    actor = Actor(me.account_id, me.user_id)
    changed = files("en", {"big.md": big_document(), "guide/billing.md": "# Billing\n\nYearly plans only.\n"})
    new = service.push_snapshot(db, actor, kb["en"].source.id, KnowledgeSnapshotPush(files=changed))
    assert new.created
    report = index.index_active(db, rt, me, KnowledgeIndexRequest(source_id=kb["en"].source.id))
    item = report.items[0]
    assert item.revision_id == new.revision.id and item.chunks == 8
    assert item.removed_chunks == 9  # every row of the earlier revision (new document ids)
    revs = _rows(
        owner_url,
        """SELECT DISTINCT metadata->>'revision_id' FROM retrieval_documents
                               WHERE namespace = 'knowledge' AND metadata->>'source_id' = %s""",
        str(kb["en"].source.id),
    )
    assert revs == [(str(new.revision.id),)]
    assert _rows(
        owner_url,
        "SELECT DISTINCT revision_id FROM knowledge_chunks WHERE source_id = %s",
        kb["en"].source.id,
    ) == [(new.revision.id,)]
    assert [i.path for i in _search(rt, me, query="yearly plans").items][:1] == ["guide/billing.md"]
    # indexing the same revision again re-embeds nothing and removes nothing
    again = index.index_active(db, rt, me, KnowledgeIndexRequest(source_id=kb["en"].source.id)).items[0]
    assert (again.chunks, again.removed_chunks) == (8, 0)


def test_index_of_a_source_without_revision_or_foreign_is_refused(me, other_account, rt):
    db = get_database()
    actor = Actor(me.account_id, me.user_id)
    bare = service.register_source(
        db, actor, SourceInput(type="local", repository_url="file:///kb", package_path="empty/kb")
    ).source
    with pytest.raises(Conflict):
        index.index_active(db, rt, me, KnowledgeIndexRequest(source_id=bare.id))
    with pytest.raises(NotFound):
        index.index_active(db, rt, me, KnowledgeIndexRequest(source_id=uuid4()))


def test_tenants_never_see_each_other(kb, me, rt, other_account, owner_url):
    other = _principal(other_account)
    db = get_database()
    with pytest.raises(NotFound):
        index.index_active(db, rt, other, KnowledgeIndexRequest(source_id=kb["en"].source.id))
    assert index.index_active(db, rt, other, KnowledgeIndexRequest()).items == []
    assert _search(rt, other, query="pro plan").items == []
    assert _search(rt, other, query="pro plan", source_ids=[kb["en"].source.id]).items == []
    with pytest.raises(NotFound):
        search.document_links(
            db,
            other,
            _doc_id(owner_url, kb["en"].revision.id, "guide/setup.md"),
            PageParams(limit=20, offset=0),
        )


def test_ranking_a_bounded_candidate_set_keeps_the_corpus_answers(kb, me, rt, monkeypatch):
    # Given the corpus plus 60 filler chunks that share the common words of the queries below
    actor = Actor(me.account_id, me.user_id)
    src = service.register_source(
        get_database(),
        actor,
        SourceInput(type="local", repository_url="file:///kb", package_path="product/filler"),
    ).source
    filler = [{"path": "KNOWLEDGE.yaml", "content": "name: Filler\n"}] + [
        {"path": f"f{i:02d}.md", "content": f"# Note {i}\n\nThe plan and the support team meet on day {i}.\n"}
        for i in range(60)
    ]
    service.push_snapshot(
        get_database(), actor, src.id, KnowledgeSnapshotPush.model_validate({"files": filler})
    )
    index.index_active(get_database(), rt, me, KnowledgeIndexRequest(source_id=src.id))
    # and a lexical pool far below the 60+ matches of a broad query (the floor is the leg's limit, 20)
    monkeypatch.setattr(search, "LEXICAL_POOL", 1)
    # When the corpus questions are asked, Then a query with a rarer word still finds its chunk first
    out = _search(rt, me, query="priority support invoices pro plan")
    assert (out.items[0].path, out.items[0].heading_path) == ("guide/billing.md", "Billing > Plans")
    assert _search(rt, me, query="三十天内可以申请全额退款").items[0].path == "退款.md"
    # and a broad query still answers with lexical matches, the chunks with both words first
    broad = _search(rt, me, query="plan support", top_k=10)
    lexical_hits = [i for i in broad.items if i.lexical_matched]
    assert len(lexical_hits) >= 5
    assert all("plan" in i.snippet.lower() and "support" in i.snippet.lower() for i in lexical_hits[:5])
