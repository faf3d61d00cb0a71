"""Knowledge index runs too large for one request (more than 200 sources, or past the 20 s inline budget): 202
with the sources done inline and a knowledge_index job that continues where the request stopped. The worker runs
it with the same code; an interrupted source's chunks already embedded are not embedded again."""

from __future__ import annotations

import math
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

import agentmate.knowledge.search.jobs  # noqa: F401  (registers knowledge_index, as the worker's runners do)
import agentmate.retrieval.service as retrieval_service
from agentmate.jobs.worker import Worker
from agentmate.knowledge.search import index
from agentmate.retrieval.embedders import OpenAIEmbedder
from tests.fakes.embeddings_provider import SlowEmbeddings

INDEX = "/api/knowledge/index"


class CountingEmbedder:
    """The offline embedder, recording every text it embeds."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.dimensions = inner, inner.name, inner.dimensions
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture
def embedder(offline_embedder, make_retrieval, serve_retrieval, monkeypatch) -> CountingEmbedder:
    counting = CountingEmbedder(offline_embedder)
    rt = make_retrieval(embedder=counting)
    serve_retrieval(rt)  # the request's Retrieval
    monkeypatch.setattr(retrieval_service, "get_retrieval", lambda: rt)  # and the worker's
    return counting


def _source(client: Any, acc: Any, path: str, docs: dict[str, str]) -> str:
    h = acc.headers("knowledge:rw")
    src = client.post(
        "/api/knowledge/sources",
        json={"type": "local", "repository_url": "file:///kb", "package_path": path},
        headers=h,
    ).json()
    files = [{"path": "KNOWLEDGE.yaml", "content": f"name: {path}\ndescription: index job test\n"}]
    files += [{"path": p, "content": c} for p, c in docs.items()]
    r = client.post(f"/api/knowledge/sources/{src['id']}/snapshots", json={"files": files}, headers=h)
    assert r.status_code == 201, r.text
    return src["id"]


def _sections(word: str, n: int) -> str:
    return "\n".join(
        f"# {word} section {i}\n\n{word} paragraph {i} explains rule {i} of {word}.\n" for i in range(n)
    )


def _cards(client: Any, acc: Any) -> dict[str, str]:
    items = client.get("/api/knowledge/catalog", headers=acc.headers("knowledge:r")).json()["items"]
    return {c["source_id"]: c["index_status"] for c in items}


def _run(db: Any, job_id: str) -> Any:
    return Worker(db, only_kinds=[index.INDEX_JOB_KIND]).run_one(job_id=uuid.UUID(job_id))


def test_more_sources_than_one_request_may_cover_answer_202_with_a_job_that_indexes_them(
    client, account, db, embedder, monkeypatch
):
    monkeypatch.setattr(index, "MAX_INLINE_SOURCES", 1)
    a = _source(client, account, "jobs/alpha", {"a.md": _sections("alpha", 2)})
    b = _source(client, account, "jobs/beta", {"b.md": _sections("beta", 2)})
    h = account.headers("knowledge:rw")
    # When the index run covers more sources than a request may
    r = client.post(INDEX, json={}, headers=h)
    # Then it answers 202 with the queued job instead of a 413, and nothing was indexed inline
    assert r.status_code == 202, r.text
    body = r.json()
    assert (body["items"], body["total"]) == ([], 0)
    job = body["job"]
    assert (job["kind"], job["status"], job["attempts"]) == ("knowledge_index", "queued", 0)
    assert _cards(client, account) == {a: "not_indexed", b: "not_indexed"}
    # And asking again hands back the same unfinished job
    assert client.post(INDEX, json={}, headers=h).json()["job"]["id"] == job["id"]
    read = client.get(f"/api/knowledge/jobs/{job['id']}", headers=account.headers("knowledge:r"))
    assert read.status_code == 200 and read.json()["status"] == "queued"
    # When a worker runs it
    report = _run(db, job["id"])
    # Then every source is indexed, the catalog says so, and the job's result carries the counts
    assert report.outcome == "succeeded"
    assert report.job.result == {"indexed": 2, "partial": 0, "skipped": 0, "total": 2}
    assert _cards(client, account) == {a: "indexed", b: "indexed"}
    done = client.get(f"/api/knowledge/jobs/{job['id']}", headers=account.headers("knowledge:r")).json()
    assert (done["status"], done["result"]["indexed"]) == ("succeeded", 2)
    hits = client.post(
        "/api/knowledge/search", json={"query": "beta paragraph 1"}, headers=account.headers("knowledge:r")
    ).json()["items"]
    assert hits and hits[0]["source_id"] == b


def test_a_run_past_the_inline_budget_is_continued_by_the_job_where_it_stopped(
    client, account, db, embedder, monkeypatch
):
    # Given two sources, the second with several embedding slices, and a budget that runs out inside the second
    monkeypatch.setattr(index, "EMBED_SLICE", 2)
    a = _source(client, account, "budget/aa", {"a.md": "# Alpha\n\nalpha only paragraph.\n"})
    b = _source(client, account, "budget/bb", {"b.md": _sections("bravo", 6)})
    calls = {"n": 0}

    class Budget(index._Budget):
        def __call__(self) -> None:
            calls["n"] += 1
            # 1: before aa, 2: aa's one slice, 3: before bb, 4: bb's first slice, 5: bb's second slice → out of time
            if calls["n"] >= 5:
                raise index._OverBudget

    monkeypatch.setattr(index, "_Budget", Budget)
    r = client.post(INDEX, json={}, headers=account.headers("knowledge:rw"))
    # Then the request answers 202: the source finished inline is listed and kept, the rest is the job's
    assert r.status_code == 202, r.text
    body = r.json()
    assert [(i["source_id"], i["status"]) for i in body["items"]] == [(a, "indexed")]
    assert body["job"]["kind"] == "knowledge_index"
    assert _cards(client, account) == {a: "indexed", b: "not_indexed"}
    embedded_inline = len(embedder.texts)
    # When the worker runs the job
    report = _run(db, body["job"]["id"])
    # Then it skipped the source the request finished and indexed the other one
    assert report.outcome == "succeeded"
    assert report.job.result == {"indexed": 1, "partial": 0, "skipped": 1, "total": 2}
    assert _cards(client, account) == {a: "indexed", b: "indexed"}
    # And no chunk was embedded twice: the interrupted source's first slice was not embedded again
    assert embedded_inline > 1 and len(embedder.texts) > embedded_inline
    assert max(Counter(embedder.texts).values()) == 1


def test_the_index_job_only_touches_its_own_account(
    client, account, other_account, db, embedder, monkeypatch
):
    monkeypatch.setattr(index, "MAX_INLINE_SOURCES", 0)
    mine = _source(client, account, "iso/mine", {"m.md": _sections("mine", 1)})
    theirs = _source(client, other_account, "iso/theirs", {"t.md": _sections("theirs", 1)})
    job = client.post(INDEX, json={}, headers=account.headers("knowledge:rw")).json()["job"]
    assert (
        client.get(
            f"/api/knowledge/jobs/{job['id']}", headers=other_account.headers("knowledge:r")
        ).status_code
        == 404
    )
    assert _run(db, job["id"]).job.result["total"] == 1
    assert _cards(client, account) == {mine: "indexed"}
    assert _cards(client, other_account) == {theirs: "not_indexed"}


@pytest.fixture
def slow_embedder(make_retrieval, serve_retrieval, monkeypatch):
    """``slow_embedder(delay_s, budget_s, max_retries)``: an embeddings endpoint on loopback whose every call takes
    ``delay_s``, served to the request and the worker, and an inline budget of ``budget_s``; yields the server."""

    @contextmanager
    def serve(delay_s: float, budget_s: float, max_retries: int) -> Iterator[SlowEmbeddings]:
        monkeypatch.setattr(
            index,
            "get_index_settings",
            lambda: index.IndexSettings(knowledge_index_inline_budget_seconds=budget_s),
        )
        with SlowEmbeddings(delay_s=delay_s) as server:
            embedder = OpenAIEmbedder(
                server.base_url, "k", "slow-model", dimensions=8, timeout_s=10, max_retries=max_retries
            )
            rt = make_retrieval(embedder=embedder)
            serve_retrieval(rt)
            monkeypatch.setattr(retrieval_service, "get_retrieval", lambda: rt)
            try:
                yield server
            finally:
                embedder.close()

    return serve


def test_a_slow_embedder_makes_the_request_hand_over_before_its_budget_not_after(
    client, account, db, slow_embedder
):
    # Given an embeddings endpoint (real HTTP on loopback) that takes 0.8 s per call, a 2 s inline budget, and a
    # source whose chunks need several embedding calls (one per 64-chunk slice). The budget leaves over a second
    # for the work before the first call (reading and chunking the source), which a fresh CI process once needed
    # more than the 0.6 s an earlier 0.4 s / 1 s pair left it.
    delay, budget = 0.8, 2.0
    src = _source(client, account, "slow/embedder", {"big.md": _sections("slow", 4 * index.EMBED_SLICE)})
    with slow_embedder(delay, budget, max_retries=0) as server:
        # When the index is asked for
        r = client.post(INDEX, json={}, headers=account.headers("knowledge:rw"))
        inline_calls = server.calls
        # Then it answers 202 with a job, having started only the calls the budget could finish: each call takes
        # at least 0.8 s, so a request that stopped before its 2 s budget made at most two
        assert r.status_code == 202, r.text
        assert r.json()["job"]["kind"] == "knowledge_index"
        assert 1 <= inline_calls <= math.floor(budget / delay)
        assert _cards(client, account) == {src: "not_indexed"}
        # And the job embeds the rest (the chunks embedded inline are not embedded again) and indexes the source
        report = _run(db, r.json()["job"]["id"])
    assert report.outcome == "succeeded" and report.job.result["indexed"] == 1
    assert _cards(client, account) == {src: "indexed"}
    assert server.calls > inline_calls and max(Counter(server.texts).values()) == 1


def test_a_first_embedding_call_longer_than_the_budget_is_cut_at_the_deadline(
    client, account, owner_url, slow_embedder
):
    # Given an embeddings endpoint whose every call takes 5 s, and a 2 s inline budget: the first call has no
    # earlier one to estimate from, so only the deadline it is given can stop it. (The budget check before that
    # call counts the work before it, reading and chunking the source, twice: with a 1 s budget a fresh CI
    # process that needed over 0.5 s for it made no call at all.)
    src = _source(client, account, "slow/first", {"big.md": _sections("first", 2 * index.EMBED_SLICE)})
    with slow_embedder(5.0, 2.0, max_retries=3) as server:
        # When the index is asked for
        r = client.post(INDEX, json={}, headers=account.headers("knowledge:rw"))
        calls = server.calls
    # Then the request hands over with a job after one call, which it abandoned at the deadline (no retry): its
    # chunks are left failed with the deadline as the reason, for the job to embed again
    assert r.status_code == 202, r.text
    assert r.json()["job"]["kind"] == "knowledge_index"
    assert calls == 1
    with psycopg.connect(owner_url) as conn:
        rows = conn.execute(
            "SELECT status, error FROM retrieval_documents WHERE account_id = %s", (account.account_id,)
        ).fetchall()
    assert len(rows) == index.EMBED_SLICE and all(s == "failed" and "deadline" in (e or "") for s, e in rows)
    assert _cards(client, account) == {src: "not_indexed"}
