"""Wiki retrieval: index the active build (index.md yes, log.md never), search filtered on the active build with
hits collapsed per page, citations and links from the database, the stale gap reported, every search logged."""

from __future__ import annotations

import psycopg
import pytest

from agentmate.core.db import get_database
from agentmate.knowledge.wiki import retrieval as wr
from agentmate.knowledge.wiki import service as wiki
from agentmate.knowledge.wiki.schemas import WikiIndexRequest, WikiSearchRequest
from tests.integration.wiki.corpus import compile_now, documents, make_source


@pytest.fixture
def rt(make_retrieval):
    return make_retrieval()


def _principal(actor):
    from agentmate.core.principal import Principal

    return Principal(account_id=actor.account_id, user_id=actor.user_id, via="jwt")


def test_search_reads_the_active_build_and_reports_a_stale_index(actor, fake, rt, owner_url):
    p = _principal(actor)
    src = make_source(actor, "wr-search", documents(4))
    first = compile_now(actor, fake, src)
    report = wr.index(get_database(), rt, p, WikiIndexRequest(source_id=src))
    assert report.items[0].build_id == first.id and report.items[0].pages == 6  # 4 topics + overview + index
    with psycopg.connect(owner_url) as conn:
        paths = {r[0] for r in conn.execute(
            "SELECT metadata->>'path' FROM retrieval_documents WHERE namespace = 'knowledge_wiki' "
            "AND metadata->>'source_id' = %s", (str(src),)).fetchall()}
    assert "wiki/index.md" in paths and "wiki/log.md" not in paths
    status = wr.status(get_database(), p, src)
    assert (status.stale_count, status.items[0].indexed_build_id) == (0, first.id)

    out = wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule", top_k=5))
    assert out.items and len({h.path for h in out.items}) == len(out.items), "one hit per page"
    hit = next(h for h in out.items if h.path == "wiki/docs-topic-02.md")
    assert hit.build_id == first.id and hit.matched_chunks >= 1
    assert [c.document_path for c in hit.citations] == ["docs/topic-02.md"]
    assert [x.path for x in hit.links_out] == ["wiki/docs-topic-03.md"]
    assert out.raw_query_id is not None and out.stale == []
    with psycopg.connect(owner_url) as conn:
        logged = conn.execute("SELECT namespace, filters->>'raw_query_id', hit_count FROM retrieval_queries "
                              "WHERE id = %s", (out.query_id,)).fetchone()
        raw = conn.execute("SELECT namespace FROM retrieval_queries WHERE id = %s", (out.raw_query_id,)).fetchone()
    assert logged == ("knowledge_wiki", str(out.raw_query_id), len(out.items)) and raw == ("knowledge",)

    # a new build becomes active but is not indexed: the old build's rows are never served
    second = compile_now(actor, fake, src, force=True)
    stale = wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule"))
    assert stale.items == [] and [s.active_build_id for s in stale.stale] == [second.id]
    assert wr.status(get_database(), p, src).stale_count == 1
    wr.index(get_database(), rt, p, WikiIndexRequest())
    fresh = wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule"))
    assert fresh.items and {h.build_id for h in fresh.items} == {second.id}
    # a rollback serves the old build again: its rows were removed, so search says stale rather than answer wrong
    wiki.activate(get_database(), actor, first.id)
    assert wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule")).items == []


def test_wiki_search_and_index_are_tenant_scoped(actor, other, fake, rt):
    src = make_source(actor, "wr-tenant", documents(2))
    compile_now(actor, fake, src)
    wr.index(get_database(), rt, _principal(actor), WikiIndexRequest())
    theirs = wr.search(get_database(), rt, _principal(other), WikiSearchRequest(query="Topic 01 billing rule"))
    assert theirs.items == []
    from agentmate.core.errors import NotFound

    with pytest.raises(NotFound):
        wr.index(get_database(), rt, _principal(other), WikiIndexRequest(source_id=src))
    with pytest.raises(NotFound):
        wr.status(get_database(), _principal(other), src)
