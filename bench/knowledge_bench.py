"""Knowledge retrieval benchmarks: ingest + index of a generated 500-document (~5 MB) Markdown package synced from
the loopback git server, and knowledge search at 100k chunks in one account (excluding the query embedding).

    .venv/bin/python bench/knowledge_bench.py [--documents 500] [--chunks 100000] [--queries 200] [--search-only]
                                              [--explain]

Postgres: a cluster of its own in .local/bench-knowledge-pg (port $AGENTMATE_KNOWLEDGE_BENCH_PG_PORT, default
26452), a fresh migrated database, the application connecting as ``agentmate_app`` (RLS applies) with
DB_POOL_MAX_SIZE=1 as in Lambda. Embedding is the offline static embedder and the vector index the embedded one
(the local runtime's defaults). The work runs in-process through the knowledge services (``knowledge.sources.service``
sync, ``knowledge.search.index``, ``knowledge.search.service``): the same code the routes call.

The text is prose-like: words drawn with a Zipf distribution (weight 1/rank) from a vocabulary of 30,000 words
whose most frequent ~3,000 are the real words of this repository's docs/*.md, README.md and the English test
corpus in their real frequency order, the rest generated (pronounceable, distinct). So a common word is in most
chunks and a rare one in a few dozen, as in real documentation.

1. Ingest + index (skipped with ``--search-only``): a git repository on the loopback smart-HTTP server
   (tests/integration/packages/gitserver.py) holds KNOWLEDGE.yaml and N generated Markdown documents of ~10 KB
   (headings, paragraphs, a code fence, links to other documents). Timed: the sync (ref resolution, fetch, ingest
   transaction) and the index (chunking, link extraction, embedding, vector upsert, chunk rows and link graph),
   repeated while the run overruns the inline budget (20 s per request; the route then answers 202 with a job
   that is left alone here): the count of index requests is reported.
   Baseline in the same run: the same flow for a package of N/10 documents (with ``--search-only`` only this
   small package is ingested, to give the search real sources, documents and links).
2. Search: the packages' chunks, plus chunk rows seeded until the account holds the target count (``seed``:
   rows built by the retrieval core's own functions, written with COPY 1,000 at a time, their real embeddings
   upserted into the embedded vector index), metadata pointing at the package's documents; VACUUM ANALYZEd and the vector index optimised. Then
   ``knowledge.search.search`` with top_k=5 (query log written, neighbours read) over 2-5-word queries of three
   kinds (a rare word among ordinary ones, ordinary words, very common words); the query embedding is timed
   separately and subtracted. A per-leg table splits each search: lexical SQL, query embedding, vector search,
   vector hydration, source rows, neighbours, the retrieval_queries insert and the rest (Python, COMMIT).
   The lexical leg alone is also timed against the pre-0014 function (0013's body, recreated under another name)
   on the same data and queries: the ratio of the change in the same run.
   ``--explain`` prints EXPLAIN (ANALYZE, BUFFERS) of the lexical function's inner statement (auto_explain) for
   one query of each kind.

Goals: ingest + index ≤ 60 s for 500 documents; search p95 ≤ 50 ms at 100k chunks excluding embedding.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
import re
import sys
import time
import warnings
from collections import Counter
from typing import Any

import common
from common import ROOT, BenchDatabase, TimingEmbedder, machine, print_table, summary

COMMAND = ".venv/bin/python bench/knowledge_bench.py"
INGEST_GOAL_S = 60.0
SEARCH_GOAL_P95_MS = 50.0
PG_DIR = ROOT / ".local" / "bench-knowledge-pg"
PG_PORT = int(os.environ.get("AGENTMATE_KNOWLEDGE_BENCH_PG_PORT", "26452"))
VOCABULARY = 30_000
SEED_BATCH = 1000
KINDS = ("rare", "ordinary", "common")


def prepare_database(name: str, keep: bool = False) -> BenchDatabase:
    return common.prepare_database(name, keep=keep, pg_dir=PG_DIR, pg_port=PG_PORT)


# ---- prose-like text -------------------------------------------------------------------------------------------


def _real_words() -> list[str]:
    """This repository's own prose, words by descending frequency."""
    counts: Counter[str] = Counter()
    paths = [
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "README.md",
        *sorted((ROOT / "tests" / "fixtures" / "knowledge_corpus" / "en").rglob("*.md")),
    ]
    for path in paths:
        counts.update(
            w for w in re.findall(r"[a-z]+", path.read_text(encoding="utf-8").lower()) if len(w) > 1
        )
    return [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]


class Prose:
    """Words with a Zipf distribution over a vocabulary: real words first (by real frequency), then made-up ones."""

    def __init__(self, rng: random.Random, size: int = VOCABULARY):
        words = _real_words()[:size]
        seen = set(words)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
        while len(words) < size:
            w = "".join(rng.choice(syllables) for _ in range(rng.randint(3, 4)))
            if w not in seen:
                seen.add(w)
                words.append(w)
        self.words = words
        self.real = len(_real_words())
        self.cum = list(itertools.accumulate(1.0 / r for r in range(1, size + 1)))
        self.rng = rng

    def sample(self, n: int) -> list[str]:
        return self.rng.choices(self.words, cum_weights=self.cum, k=n)

    def sentence(self, n: int) -> str:
        return " ".join(self.sample(n)).capitalize() + "."

    def paragraph(self, words: int) -> str:
        out, left = [], words
        while left > 0:
            n = min(left, self.rng.randint(8, 24))
            out.append(self.sentence(n))
            left -= n
        return " ".join(out)

    def ranked(self, lo: int, hi: int) -> str:
        """A word whose rank is log-uniform in [lo, hi)."""
        return self.words[
            min(int(math.exp(self.rng.uniform(math.log(lo), math.log(hi)))), len(self.words)) - 1
        ]

    def query(self, kind: str) -> str:
        """A 2-5-word query: ``rare`` = a word of rank >= 3,000 among 1-3 ordinary ones; ``ordinary`` = 2-4 words
        of rank 30-3,000; ``common`` = 2-3 words of the 150 most frequent."""
        if kind == "rare":
            words = [self.ranked(30, 3000) for _ in range(self.rng.randint(1, 3))]
            words.insert(self.rng.randrange(len(words) + 1), self.ranked(3000, len(self.words)))
        elif kind == "ordinary":
            words = [self.ranked(30, 3000) for _ in range(self.rng.randint(2, 4))]
        else:
            words = [self.ranked(1, 150) for _ in range(self.rng.randint(2, 3))]
        return " ".join(words)


def document(i: int, total: int, prose: Prose) -> str:
    """~10 KB of Markdown: a title, 6 sections of 3 paragraphs, a code fence, links to 3 other documents."""
    rng = prose.rng
    parts = [f"# {' '.join(prose.sample(3)).title()} ({i})\n\n{prose.paragraph(50)}\n"]
    for s in range(6):
        parts.append(f"## {' '.join(prose.sample(rng.randint(2, 4))).capitalize()} {i}.{s}\n")
        parts.extend(f"{prose.paragraph(85)}\n" for _ in range(3))
        if s == 2:
            parts.append(
                "```bash\n# a comment, not a heading\nagentmate deploy --region eu   --replicas 3\n```\n"
            )
    links = " ".join(f"[page {j}](page-{j:04d}.md)" for j in rng.sample(range(total), 3))
    parts.append(f"See also {links}.\n")
    return "\n".join(parts)


# ---- the lexical leg before (0014: every word required, 400 matches ranked) and now (0084: BM25), same data ------
BEFORE, CURRENT = "0014 (every word)", "0084 (BM25)"
LEXICAL_FUNCTIONS = {
    BEFORE: "retrieval_lexical_search(%(ns)s, %(tsq)s, %(limit)s, %(st)s, NULL, 400)",
    CURRENT: "retrieval_bm25_search(%(ns)s, %(tokens)s, %(limit)s, %(st)s, NULL, %(pool)s, %(tsq)s)",
}


def lexical_args(lexical: Any, query: str, limit: int) -> dict[str, Any]:
    from agentmate.knowledge.search import service as search
    from agentmate.knowledge.search.index import NAMESPACE, SOURCE_TYPE

    return {
        "ns": NAMESPACE,
        "tsq": lexical.tsquery(query),
        "tokens": lexical.search_tokens(query),
        "limit": limit,
        "st": SOURCE_TYPE,
        "pool": search.LEXICAL_POOL,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=500, help="documents in the synced package")
    parser.add_argument(
        "--chunks", type=int, default=100_000, help="chunks in the account for the search bench"
    )
    parser.add_argument("--queries", type=int, default=200, help="measured searches (>= 30)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--search-only",
        action="store_true",
        help="skip the timed ingest of --documents (a package of documents/10 is still ingested)",
    )
    parser.add_argument("--explain", action="store_true", help="print the lexical statement's plans")
    parser.add_argument(
        "--keep", action="store_true", help="keep the database (and the cluster) for EXPLAIN work"
    )
    args = parser.parse_args(argv)
    queries = max(args.queries, 30)
    started = time.perf_counter()

    sys.path.insert(0, str(ROOT))
    db_info = prepare_database("agentmate_bench_knowledge", keep=args.keep)
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg

    from agentmate.core.db import get_database
    from agentmate.core.principal import Principal
    from agentmate.core.settings import get_retrieval_settings
    from agentmate.knowledge.search import index
    from agentmate.knowledge.search import service as search
    from agentmate.knowledge.search.schemas import KnowledgeIndexRequest, KnowledgeSearchRequest
    from agentmate.knowledge.sources import service
    from agentmate.knowledge.sources.schemas import KnowledgeSyncRequest
    from agentmate.packages.git import GitFetcher
    from agentmate.packages.schemas import SourceInput
    from agentmate.packages.service import Actor
    from agentmate.retrieval import config, lexical
    from agentmate.retrieval import service as retrieval_service
    from agentmate.retrieval.embedded_index import EmbeddedIndex
    from agentmate.retrieval.service import Retrieval, candidate_limit
    from tests.integration.packages.gitserver import GitServer, commit_tree
    from tests.integration.packages.test_packages_git import SETTINGS, make_policy

    raw_embedder = config.build_embedder(get_retrieval_settings())
    timing = TimingEmbedder(raw_embedder)
    legs: dict[str, float] = {}

    class TimedRetrieval(Retrieval):
        """Keeps each search's leg timings (the core measures them; the bench only reads them)."""

        def begin_search(self, account_id: Any, query: Any) -> Any:
            pending = super().begin_search(account_id, query)
            complete = pending.complete

            def record(conn: Any) -> Any:
                result = complete(conn)
                legs.update({f"core:{k}": v for k, v in result.timings_ms.items()})
                return result

            pending.complete = record
            return pending

    def timed(module: Any, name: str, key: str) -> None:
        original = getattr(module, name)

        def wrapper(*a: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return original(*a, **kw)
            finally:
                legs[key] = legs.get(key, 0.0) + (time.perf_counter() - t0) * 1000

        setattr(module, name, wrapper)

    retrieval = TimedRetrieval(embedder=timing)
    db = get_database()
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        account_id, user_id = owner.execute(
            """WITH a AS (INSERT INTO accounts DEFAULT VALUES RETURNING id)
               INSERT INTO users (id, account_id, email, password_hash) SELECT id, id, 'bench@example.com', 'x'
               FROM a RETURNING account_id, id"""
        ).fetchone()  # type: ignore[misc]
    principal = Principal(account_id, user_id, "jwt")
    actor = Actor(account_id, user_id)
    policy = make_policy()
    server = GitServer().start()
    prose = Prose(random.Random(7))

    def ingest_and_index(n_docs: int, name: str) -> dict[str, Any]:
        files = {f"ops/{name}/KNOWLEDGE.yaml": f"name: {name}\ncapabilities: [operations]\n".encode()}
        for i in range(n_docs):
            files[f"ops/{name}/page-{i:04d}.md"] = document(i, n_docs, prose).encode()
        size = sum(len(v) for v in files.values())
        commit_tree(server.repo(f"acme/{name}"), files)
        src = service.register_source(
            db,
            actor,
            SourceInput(
                type="git",
                repository_url=server.url("git.test", f"acme/{name}"),
                package_path=f"ops/{name}",
                default_ref="main",
            ),
            policy,
        ).source
        t0 = time.perf_counter()
        ingested = service.sync_source(
            db, actor, src.id, KnowledgeSyncRequest(), GitFetcher(policy, SETTINGS)
        )
        t_sync = time.perf_counter() - t0
        # repeated while the run overruns the inline budget (the route's 202: the work done is kept; the job it
        # queues is left alone, no worker runs here), as bench/common.seed_knowledge does
        requests, items = 0, []
        while not items:
            requests += 1
            items = index.index_active(
                db, retrieval, principal, KnowledgeIndexRequest(source_id=src.id)
            ).items
        total = time.perf_counter() - t0
        item = items[0]
        assert item.failed_chunks == 0 and item.documents == n_docs, item
        return {
            "source": src,
            "revision": ingested.revision,
            "sync": t_sync,
            "index": total - t_sync,
            "total": total,
            "requests": requests,
            "chunks": item.chunks,
            "links": item.links,
            "bytes": size,
            "docs": n_docs,
        }

    base = ingest_and_index(max(args.documents // 10, 10), "baseline")
    runs = [("baseline", base)]
    if not args.search_only:
        runs.append(("measured", ingest_and_index(args.documents, "handbook")))
    server.stop()
    rows = []
    for label, r in runs:
        rows.append(
            [
                label,
                r["docs"],
                f"{r['bytes'] / 1e6:.2f}",
                r["chunks"],
                r["links"],
                f"{r['sync']:.2f}",
                f"{r['index']:.2f}",
                r["requests"],
                f"{r['total']:.2f}",
                f"{r['docs'] / r['total']:.0f}",
            ]
        )
    notes = []
    if not args.search_only:
        main_run = runs[1][1]
        per_doc = (main_run["total"] / main_run["docs"]) / (base["total"] / base["docs"])
        notes = [
            f"Time per document vs the baseline package: {per_doc:.2f}x.",
            f"Goal ≤ {INGEST_GOAL_S:g} s for {args.documents} documents: "
            f"{'met' if main_run['total'] <= INGEST_GOAL_S else 'NOT met'} ({main_run['total']:.1f} s).",
        ]
    print_table(
        "Knowledge git sync + index of a generated Markdown package (loopback git server, offline embedder)",
        [
            "package",
            "documents",
            "MB",
            "chunks",
            "links",
            "sync s",
            "index s",
            "index requests",
            "total s",
            "documents/s",
        ],
        rows,
        notes=notes,
    )

    # ---- 2. search at N chunks --------------------------------------------------------------------------------
    from agentmate.knowledge.search.index import NAMESPACE, SOURCE_TYPE
    from agentmate.retrieval.service import DocumentIn

    target = runs[-1][1]
    src = target["source"]
    with db.tenant(account_id) as conn:
        docs = conn.execute(
            "SELECT id, path FROM knowledge_documents WHERE revision_id = %s AND path LIKE '%%.md'",
            (target["revision"].id,),
        ).fetchall()
    have = sum(r["chunks"] for _, r in runs)
    t_seed = time.perf_counter()
    rng = prose.rng

    def chunk(n: int) -> Any:
        d = docs[n % len(docs)]
        heading = (
            f"{' '.join(prose.sample(3)).title()} > {' '.join(prose.sample(rng.randint(2, 4))).capitalize()}"
        )
        body = f"## {heading.split(' > ')[1]}\n\n{prose.paragraph(rng.randint(60, 200))}\n"
        return DocumentIn(
            namespace=NAMESPACE,
            source_type=SOURCE_TYPE,
            source_id=str(d["id"]),
            chunk_key=f"seed-{n:06d}",
            title=f"{d['path']} # {heading}",
            content=body,
            metadata={
                "source_id": str(src.id),
                "revision_id": str(target["revision"].id),
                "document_id": str(d["id"]),
                "path": d["path"],
                "heading_path": heading,
                "knowledge_base": src.name,
            },
        )

    t0 = time.perf_counter()
    seed_docs = [chunk(n) for n in range(max(args.chunks - have, 0))]
    seed_parts = {
        "generate text": time.perf_counter() - t0,
        **seed(db_info.owner_url, retrieval, raw_embedder, account_id, seed_docs),
    }
    t0 = time.perf_counter()
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        owner.execute("VACUUM (ANALYZE) retrieval_documents, knowledge_chunks, knowledge_document_links")
        chunks = owner.execute(
            "SELECT count(*) FROM retrieval_documents WHERE account_id = %s AND namespace = %s",
            (account_id, NAMESPACE),
        ).fetchone()[0]  # type: ignore[index]
    seed_parts["VACUUM ANALYZE"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    vindex = retrieval.vector_index()
    if isinstance(vindex, EmbeddedIndex):
        # the background build starts every 50,000 writes: build whatever the last writes left unindexed too,
        # else part of the collection is searched by brute force (34 ms p50 at 100k, load ~8)
        vindex.wait_optimized()
        vindex.optimize()
    seed_parts["vector optimisation"] = time.perf_counter() - t0
    seed_s = time.perf_counter() - t_seed

    qrng = random.Random(11)
    qprose = Prose(qrng)
    query_set = [(KINDS[i % 3], qprose.query(KINDS[i % 3])) for i in range(queries)]

    timed(search.repo, "sources", "source rows")
    timed(search.repo, "neighbours", "neighbours")
    timed(retrieval_service, "record_query", "query log")

    def once(q: str, **kw: Any) -> tuple[float, float, dict[str, float]]:
        legs.clear()
        t0 = time.perf_counter_ns()
        out = search.search(db, retrieval, principal, KnowledgeSearchRequest(query=q, top_k=5, **kw))
        total = (time.perf_counter_ns() - t0) / 1e6
        assert out.items, q
        return total, timing.last_ms, dict(legs)

    search_rows = []
    leg_samples: dict[str, list[float]] = {}
    kind_samples: dict[str, list[float]] = {k: [] for k in KINDS}
    for label, kw in (
        ("no filter", {}),
        ("source_ids=[one]", {"source_ids": [src.id]}),
        ("include_content", {"include_content": True}),
    ):
        for _, q in query_set[: args.warmup]:
            once(q, **kw)
        totals, excl = [], []
        for kind, q in query_set:
            total, emb, parts = once(q, **kw)
            totals.append(total)
            excl.append(total - emb)
            if label == "no filter":
                kind_samples[kind].append(total - emb)
                named = {
                    "lexical SQL": parts.get("core:lexical", 0.0),
                    "query embedding": parts.get("core:embed", 0.0),
                    "vector search": parts.get("core:vector_search", 0.0),
                    "vector hydration": parts.get("core:hydrate", 0.0),
                    "source rows": parts.get("source rows", 0.0),
                    "neighbours": parts.get("neighbours", 0.0),
                    "query log": parts.get("query log", 0.0),
                }
                # the vector leg runs beside the lexical one: only the lexical leg and what follows are serial
                serial = sum(v for k, v in named.items() if k not in ("query embedding", "vector search"))
                named["rest (Python, COMMIT, wait on vector leg)"] = max(total - emb - serial, 0.0)
                named["total excl. embedding"] = total - emb
                for k, v in named.items():
                    leg_samples.setdefault(k, []).append(v)
        st, sx = summary(totals), summary(excl)
        search_rows.append(
            [label, st["n"], f"{st['p50']:.2f}", f"{st['p95']:.2f}", f"{sx['p50']:.2f}", f"{sx['p95']:.2f}"]
        )
    for kind in KINDS:
        sk = summary(kind_samples[kind])
        search_rows.append(
            [f"no filter, {kind} queries", sk["n"], "", "", f"{sk['p50']:.2f}", f"{sk['p95']:.2f}"]
        )
    p95 = float(search_rows[0][5])
    print_table(
        f"knowledge.search.search (top_k=5, query logged, neighbours read) at {chunks:,} chunks in one account",
        ["filters", "queries", "p50 ms", "p95 ms", "p50 excl. embedding", "p95 excl. embedding"],
        search_rows,
        notes=[
            f"Seeding {chunks - have:,} extra chunks + VACUUM ANALYZE + vector optimisation took {seed_s:.0f} s ("
            + ", ".join(f"{k} {v:.0f} s" for k, v in seed_parts.items())
            + ").",
            f"Goal p95 ≤ {SEARCH_GOAL_P95_MS:g} ms excluding embedding (no filter): "
            f"{'met' if p95 <= SEARCH_GOAL_P95_MS else 'NOT met'} ({p95:.2f} ms).",
        ],
    )
    print_table(
        "Per leg, no filter (ms; the vector leg runs on a thread beside the lexical leg)",
        ["part", "p50", "p95", "mean"],
        [
            [k, f"{summary(v)['p50']:.2f}", f"{summary(v)['p95']:.2f}", f"{summary(v)['mean']:.2f}"]
            for k, v in leg_samples.items()
        ],
    )

    # ---- 3. the lexical leg alone: pre-0014 function vs the current one, same data, same queries ---------------
    limit = candidate_limit(5)
    fns = LEXICAL_FUNCTIONS
    lex: dict[str, dict[str, list[float]]] = {f: {k: [] for k in KINDS} for f in fns}
    matched: dict[str, list[int]] = {k: [] for k in KINDS}
    overlap: dict[str, list[float]] = {k: [] for k in KINDS}
    with db.tenant(account_id) as conn:
        for kind, q in query_set:
            ids: dict[str, list[Any]] = {}
            for label, fn in fns.items():
                t0 = time.perf_counter()
                got = conn.execute(
                    f"SELECT id FROM {fn}",  # type: ignore[arg-type]
                    lexical_args(lexical, q, limit),
                ).fetchall()
                lex[label][kind].append((time.perf_counter() - t0) * 1000)
                ids[label] = [r["id"] for r in got]
            before, now = ids[BEFORE][:5], set(ids[CURRENT][:5])
            if before:
                overlap[kind].append(len([i for i in before if i in now]) / len(before))
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        for kind, q in query_set:
            row = owner.execute(
                """SELECT count(*) FROM retrieval_documents WHERE account_id = %s AND namespace = %s
                   AND lexical_tsv @@ to_tsquery('simple', %s)""",
                (account_id, NAMESPACE, lexical.tsquery(q)),
            ).fetchone()
            matched[kind].append(row[0])  # type: ignore[index]
    lex_rows = []
    for kind in KINDS:
        b, c = summary(lex[BEFORE][kind]), summary(lex[CURRENT][kind])
        same = overlap[kind]
        lex_rows.append(
            [
                kind,
                b["n"],
                f"{statistics_median(matched[kind]):.0f}",
                f"{max(matched[kind])}",
                f"{b['p50']:.2f}",
                f"{b['p95']:.2f}",
                f"{c['p50']:.2f}",
                f"{c['p95']:.2f}",
                f"{b['p95'] / c['p95']:.1f}x" if c["p95"] else "n/a",
                f"{sum(same) / len(same):.0%} ({len(same)})" if same else "-",
            ]
        )
    print_table(
        f"Lexical leg alone (limit {limit}) at {chunks:,} chunks: 0014's every-word match vs 0084's BM25",
        [
            "queries",
            "n",
            "median all-word matches",
            "max",
            "0014 p50",
            "0014 p95",
            "0084 p50",
            "0084 p95",
            "p95 ratio (0014 / 0084)",
            "top-5 overlap with 0014 (queries with a match)",
        ],
        lex_rows,
        notes=[
            "0014 requires every query word and ranks at most 400 of the matches (in scan order); 0084 "
            f"matches any term, BM25-ranked over a pool of {search.LEXICAL_POOL} filled rarest term first."
        ],
    )

    if args.explain:
        explain(
            db_info.owner_url,
            account_id,
            NAMESPACE,
            SOURCE_TYPE,
            limit,
            [next(q for k, q in query_set if k == kind) for kind in KINDS],
            lexical,
        )

    print(
        f"\n{machine()}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}; command: {COMMAND} "
        f"--documents {args.documents} --chunks {args.chunks} --queries {queries}"
        f"{' --search-only' if args.search_only else ''}; {time.perf_counter() - started:.0f} s"
    )
    return 0


def seed(owner_url: str, retrieval: Any, embedder: Any, account_id: Any, docs: list[Any]) -> dict[str, float]:
    """Write chunk rows as ``indexed`` with COPY (owner session: COPY FROM is refused under RLS) and their real
    embeddings into the vector index, SEED_BATCH at a time, embedding the next batch while one is copied.

    Rows and vector payloads are built by the retrieval core's own functions (``_prepare``: content hash and the
    lexical projection; ``_vector_payload``), so they are what ``Retrieval.index_documents`` writes; only the
    pending -> indexed round trip (an UPDATE per batch) is skipped.
    """
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import psycopg
    from psycopg.types.json import Jsonb

    from agentmate.retrieval import service as core

    columns = (
        "id",
        "account_id",
        "namespace",
        "source_type",
        "source_id",
        "chunk_key",
        "title",
        "content",
        "content_hash",
        "metadata",
        "status",
        "lexical_text",
        "point_id",
        "vector_collection",
        "embedding_model",
        "embedding_dimension",
        "indexed_at",
    )

    def prepare(batch: list[Any]) -> tuple[list[dict[str, Any]], list[list[float]]]:
        rows = [{**core._prepare(d), "id": uuid.uuid4(), "point_id": uuid.uuid4()} for d in batch]
        return rows, embedder.embed([r["content"] or r["title"] for r in rows])

    batches = [docs[i : i + SEED_BATCH] for i in range(0, len(docs), SEED_BATCH)]
    spent = {"wait for rows + embeddings": 0.0, "vector upsert": 0.0, "COPY": 0.0}
    with psycopg.connect(owner_url) as owner, ThreadPoolExecutor(1) as pool:
        # A bulk load: the GIN index is dropped and rebuilt with its own definition afterwards (maintaining it row
        # by row, fastupdate off, costs ~2 ms per chunk).
        gin = owner.execute("SELECT pg_get_indexdef('retrieval_documents_lexical_idx'::regclass)").fetchone()[
            0
        ]
        owner.execute("DROP INDEX retrieval_documents_lexical_idx")
        owner.commit()
        pending = pool.submit(prepare, batches[0]) if batches else None
        for i in range(len(batches)):
            assert pending is not None
            t0 = time.perf_counter()
            rows, vectors = pending.result()
            pending = pool.submit(prepare, batches[i + 1]) if i + 1 < len(batches) else None
            t1 = time.perf_counter()
            collection = retrieval._vector_upsert(
                account_id,
                embedder.dimensions,
                [(r["point_id"], v, core._vector_payload(r)) for r, v in zip(rows, vectors, strict=True)],
            )
            t2 = time.perf_counter()
            with owner.cursor().copy(f"COPY retrieval_documents ({', '.join(columns)}) FROM STDIN") as copy:
                for r in rows:
                    copy.write_row(
                        (
                            r["id"],
                            account_id,
                            r["namespace"],
                            r["source_type"],
                            r["source_id"],
                            r["chunk_key"],
                            r["title"],
                            r["content"],
                            r["content_hash"],
                            Jsonb(r["metadata"]),
                            "indexed",
                            r["lexical_text"],
                            r["point_id"],
                            collection,
                            embedder.name,
                            embedder.dimensions,
                            "now",
                        )
                    )
            owner.commit()
            for key, took in zip(spent, (t1 - t0, t2 - t1, time.perf_counter() - t2), strict=True):
                spent[key] += took
        t0 = time.perf_counter()
        owner.execute("SET maintenance_work_mem = '256MB'")
        owner.execute(gin)
        owner.commit()
        spent["GIN index build"] = time.perf_counter() - t0
    return spent


def statistics_median(values: list[int]) -> float:
    data = sorted(values)
    return float(data[len(data) // 2]) if data else 0.0


def explain(
    owner_url: str,
    account_id: Any,
    namespace: str,
    source_type: str,
    limit: int,
    queries: list[str],
    lexical: Any,
) -> None:
    """The plans Postgres runs inside both lexical functions (auto_explain at NOTICE level, owner session)."""
    import psycopg

    with psycopg.connect(owner_url, autocommit=True) as owner:
        plans: list[str] = []
        owner.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        owner.execute("LOAD 'auto_explain'")
        for setting in (
            "log_min_duration = 0",
            "log_analyze = on",
            "log_buffers = on",
            "log_timing = on",
            "log_nested_statements = on",
            "log_level = notice",
        ):
            owner.execute(f"SET auto_explain.{setting}")  # type: ignore[arg-type]
        for q in queries:
            for fn in LEXICAL_FUNCTIONS.values():
                plans.clear()
                owner.execute("BEGIN")
                owner.execute("SELECT set_config('app.account_id', %s, true)", (str(account_id),))
                owner.execute(
                    f"SELECT * FROM {fn}",  # type: ignore[arg-type]
                    lexical_args(lexical, q, limit),
                ).fetchall()
                owner.execute("COMMIT")
                print(f"\n#### {fn.split('(')[0]}: {q!r}\n")
                print("```")
                print(
                    "\n".join(p for p in plans if "Query Text" in p and "FROM retrieval_documents" in p)
                    or "\n".join(plans)
                )
                print("```")


if __name__ == "__main__":
    sys.exit(main())
