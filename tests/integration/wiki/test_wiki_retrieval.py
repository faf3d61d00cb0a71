"""Wiki retrieval: index the active build (index.md yes, log.md never), search filtered on the active build with
hits collapsed per page, citations and links from the database, the stale gap reported, every search logged."""

from __future__ import annotations

import os

import psycopg
import pytest

from agentmate import jobs
from agentmate.core.db import Database, get_database
from agentmate.core.pagination import PageParams
from agentmate.jobs.worker import Worker
from agentmate.knowledge.wiki import reindex
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
        paths = {
            r[0]
            for r in conn.execute(
                "SELECT metadata->>'path' FROM retrieval_documents WHERE namespace = 'knowledge_wiki' "
                "AND metadata->>'source_id' = %s",
                (str(src),),
            ).fetchall()
        }
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
        logged = conn.execute(
            "SELECT namespace, filters->>'raw_query_id', hit_count FROM retrieval_queries WHERE id = %s",
            (out.query_id,),
        ).fetchone()
        raw = conn.execute(
            "SELECT namespace FROM retrieval_queries WHERE id = %s", (out.raw_query_id,)
        ).fetchone()
    assert logged == ("knowledge_wiki", str(out.raw_query_id), len(out.items)) and raw == ("knowledge",)

    # a new build becomes active but is not indexed: the old build's rows are never served
    second = compile_now(actor, fake, src, force=True)
    stale = wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule"))
    assert stale.items == [] and [s.active_build_id for s in stale.stale] == [second.id]
    assert wr.status(get_database(), p, src).stale_count == 1
    wr.index(get_database(), rt, p, WikiIndexRequest())
    fresh = wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule"))
    assert fresh.items and {h.build_id for h in fresh.items} == {second.id}
    # a rollback serves the old build again; without a Retrieval at hand its re-index is queued, and until that
    # runs its rows are gone, so search says stale rather than answer from the wrong build
    rolled = wiki.activate(get_database(), actor, first.id)
    assert rolled.index is None and rolled.index_job is not None and rolled.index_job.kind == "wiki_index"
    assert wr.search(get_database(), rt, p, WikiSearchRequest(query="Topic 02 billing rule")).items == []


def test_wiki_search_and_index_are_tenant_scoped(actor, other, fake, rt):
    src = make_source(actor, "wr-tenant", documents(2))
    compile_now(actor, fake, src)
    wr.index(get_database(), rt, _principal(actor), WikiIndexRequest())
    theirs = wr.search(
        get_database(), rt, _principal(other), WikiSearchRequest(query="Topic 01 billing rule")
    )
    assert theirs.items == []
    from agentmate.core.errors import NotFound

    with pytest.raises(NotFound):
        wr.index(get_database(), rt, _principal(other), WikiIndexRequest(source_id=src))
    with pytest.raises(NotFound):
        wr.status(get_database(), _principal(other), src)


def _index_jobs(actor, source_id):
    return jobs.list_jobs(
        get_database(), actor.account_id, PageParams(), kind="wiki_index", subject_id=source_id
    ).items


def _run_index_job(job_id, rt, monkeypatch):
    """The worker runs the queued wiki_index job (with this test's Retrieval as the process's)."""
    import agentmate.knowledge.wiki.jobs  # noqa: F401  (registers wiki_index, as the worker's runners do)
    import agentmate.retrieval.service as retrieval_service

    monkeypatch.setattr(retrieval_service, "get_retrieval", lambda: rt)
    database = Database(os.environ["DATABASE_URL"], max_size=3)
    try:
        return Worker(database, only_kinds=[reindex.INDEX_JOB_KIND]).run_one(job_id=job_id)
    finally:
        database.close()


def _served(actor, rt, query="Topic 01 billing rule"):
    out = wr.search(get_database(), rt, _principal(actor), WikiSearchRequest(query=query, top_k=10))
    return {h.build_id for h in out.items}, out.stale


def test_activation_and_rollback_re_index_the_wiki_so_search_serves_the_new_pages(
    actor, fake, rt, monkeypatch
):
    src = make_source(actor, "wr-activate", documents(3))
    # Given a compile that activates on success: its success queued the source's re-index as a job
    first = compile_now(actor, fake, src)
    (job,) = _index_jobs(actor, src)
    assert job.status == "queued" and job.subject_id == src
    assert _served(actor, rt)[0] == set()
    # When the worker runs it, search serves the first build and nothing is stale
    report = _run_index_job(job.id, rt, monkeypatch)
    assert report.outcome == "succeeded" and report.job.result["build_id"] == str(first.id)
    assert _served(actor, rt) == ({first.id}, [])
    # And running it again is a no-op: the index already reflects the active build
    again = _run_index_job(job.id, rt, monkeypatch)
    assert again.outcome == "not_claimed"

    # When a second build (compiled without activation) is activated through the API
    second = compile_now(actor, fake, src, force=True, activate=False)
    assert _served(actor, rt) == ({first.id}, [])  # not active yet: the first build still serves
    result = wiki.activate(get_database(), actor, second.id, rt)
    # Then the small build was re-indexed inline and search finds its pages, not stale
    assert result.previous_build_id == first.id and result.index_job is None
    assert result.index is not None and (result.index.build_id, result.index.status) == (second.id, "indexed")
    assert _served(actor, rt) == ({second.id}, [])
    # When it is rolled back, search finds the first build's pages again
    back = wiki.activate(get_database(), actor, first.id, rt)
    assert back.index is not None and back.index.build_id == first.id
    assert _served(actor, rt) == ({first.id}, [])
    assert wr.status(get_database(), _principal(actor), src).stale_count == 0


def test_activating_a_build_too_large_to_index_inline_queues_the_re_index(actor, fake, rt, monkeypatch):
    src = make_source(actor, "wr-activate-large", documents(3))
    first = compile_now(actor, fake, src, activate=False)
    monkeypatch.setattr(reindex, "MAX_INLINE_PAGES", 2)  # the build has 5 pages
    # When a build over the inline limit is activated
    result = wiki.activate(get_database(), actor, first.id, rt)
    # Then the re-index is a job (readable at GET /api/knowledge/jobs/{id}), and search reports the gap meanwhile
    assert result.index is None and result.index_job is not None
    assert (result.index_job.kind, result.index_job.status) == ("wiki_index", "queued")
    built, stale = _served(actor, rt)
    assert built == set() and [s.active_build_id for s in stale] == [first.id]
    # When the worker runs it, the build serves
    assert _run_index_job(result.index_job.id, rt, monkeypatch).outcome == "succeeded"
    assert _served(actor, rt) == ({first.id}, [])


def test_wiki_search_ranks_through_the_new_leg_reports_the_leg_fields_and_fails_open(
    actor, fake, rt, make_retrieval
):
    from agentmate.retrieval.embedders import EmbeddingError

    p = _principal(actor)
    src = make_source(actor, "wr-legs", documents(4))
    compile_now(actor, fake, src)
    wr.index(get_database(), rt, p, WikiIndexRequest(source_id=src))
    # A question full of stop words finds the page through the lexical leg, and every hit reports its legs
    out = wr.search(
        get_database(), rt, p, WikiSearchRequest(query="What is the billing rule of topic 02?", top_k=3)
    )
    hit = next(h for h in out.items if h.path == "wiki/docs-topic-02.md")
    assert "lexical" in hit.channels and hit.lexical_score is not None and hit.lexical_score > 0
    assert all(h.vector_score is not None or h.channels == ["lexical"] for h in out.items)
    # min_similarity keeps pages whose best chunk holds every query term, and counts the chunks it dropped
    strict = wr.search(
        get_database(), rt, p, WikiSearchRequest(query="topic 02 billing rule", min_similarity=0.99)
    )
    assert strict.items and all(h.lexical_matched for h in strict.items)
    assert strict.filtered_by_min_similarity is not None and strict.filtered_by_min_similarity >= 1

    class Broken:
        name, dimensions = "broken", 256

        def embed(self, texts: list[str]) -> list[list[float]]:
            raise EmbeddingError("model unavailable (test)")

    down = wr.search(
        get_database(),
        make_retrieval(embedder=Broken(), index=rt.vector_index()),
        p,
        WikiSearchRequest(query="What is the billing rule of topic 02?", top_k=3),
    )
    assert down.items and all(h.channels == ["lexical"] for h in down.items)
    assert [d.leg for d in down.degraded] == ["vector"]


def test_wiki_search_hits_name_the_build_a_carried_over_page_derives_from(actor, fake, rt):
    """derived_from_build_id on wiki search hits (issue 23 loose end): after an incremental build, a page it carried
    over names the full build whose model run wrote it; a page it rewrote names none."""
    from tests.integration.wiki.corpus import push

    p = _principal(actor)
    src = make_source(actor, "wr-derived", documents(8))
    full = compile_now(actor, fake, src)
    changed = {"docs/topic-03.md": "# Topic 03\n\nTopic 03 now says billing rule three changed.\n"}
    push(actor, src, documents(8, changed=changed))
    build = compile_now(actor, fake, src, mode="incremental")
    assert (build.status, build.is_active) == ("succeeded", True)
    wr.index(get_database(), rt, p, WikiIndexRequest(source_id=src))
    hits = {
        h.path: h
        for h in wr.search(
            get_database(), rt, p, WikiSearchRequest(query="Topic billing rule", top_k=20, source_ids=[src])
        ).items
    }
    assert hits["wiki/docs-topic-05.md"].build_id == build.id
    assert hits["wiki/docs-topic-05.md"].derived_from_build_id == full.id
    assert hits["wiki/docs-topic-03.md"].derived_from_build_id is None
