"""Knowledge retrieval benchmarks: ingest + index of a generated 500-document (~5 MB) Markdown package synced from
the loopback git server, and knowledge search at 100k chunks in one account (excluding the query embedding).

    .venv/bin/python bench/knowledge_bench.py [--documents 500] [--chunks 100000] [--queries 200]

Postgres: a cluster of its own in .local/bench-knowledge-pg (port $AGENTMATE_KNOWLEDGE_BENCH_PG_PORT, default
26452), a fresh migrated database, the application connecting as ``agentmate_app`` (RLS applies) with
DB_POOL_MAX_SIZE=1 as in Lambda. Embedding is the offline static embedder and the vector index the embedded one
(the local runtime's defaults). The work runs in-process through the knowledge services (``knowledge.service``
sync, ``knowledge.index``, ``knowledge.search``): the same code the routes call.

1. Ingest + index: a git repository on the loopback smart-HTTP server (tests/integration/packages/gitserver.py)
   holds KNOWLEDGE.yaml and N generated Markdown documents of ~10 KB (headings, paragraphs, a code fence, links to
   other documents). Timed: the sync (ref resolution, fetch, ingest transaction) and the index (chunking, link
   extraction, embedding, vector upsert, chunk rows and link graph), repeated while the inline budget (20 s per
   request) answers 413: the count of index requests is reported. Baseline in the same run: the same flow for a
   package of N/10 documents.
2. Search: the package's chunks, plus chunk rows seeded through the retrieval batch path until the account holds
   the target count (metadata pointing at the package's documents), VACUUM ANALYZEd and the vector index
   optimised; then ``knowledge.search.search`` with top_k=5 (query log written, neighbours read); the query
   embedding is timed separately and subtracted.

Goals: ingest + index ≤ 60 s for 500 documents; search p95 ≤ 50 ms at 100k chunks excluding embedding.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import warnings
from typing import Any

import common
from common import ROOT, BenchDatabase, TimingEmbedder, machine, print_table, summary

COMMAND = ".venv/bin/python bench/knowledge_bench.py"
INGEST_GOAL_S = 60.0
SEARCH_GOAL_P95_MS = 50.0
PG_DIR = ROOT / ".local" / "bench-knowledge-pg"
PG_PORT = int(os.environ.get("AGENTMATE_KNOWLEDGE_BENCH_PG_PORT", "26452"))
WORDS = ("deploy", "invoice", "quota", "refund", "latency", "cluster", "backup", "replica", "token", "billing",
         "schema", "migration", "tenant", "index", "policy", "retention", "alert", "runbook", "budget", "cache",
         "region", "failover", "credential", "webhook", "export", "audit", "throttle", "session", "upgrade")


def prepare_database(name: str) -> BenchDatabase:
    return common.prepare_database(name, pg_dir=PG_DIR, pg_port=PG_PORT)


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def document(i: int, total: int, rng: random.Random) -> str:
    """~10 KB of Markdown: a title, 6 sections of 3 paragraphs, a code fence, links to 3 other documents."""
    parts = [f"# Handbook page {i}\n\n{sentence(rng, 40)}\n"]
    for s in range(6):
        parts.append(f"## Topic {i}.{s} {rng.choice(WORDS)}\n")
        parts.extend(f"{sentence(rng, 70)}\n" for _ in range(3))
        if s == 2:
            parts.append("```bash\n# a comment, not a heading\nagentmate deploy --region eu   --replicas 3\n```\n")
    links = " ".join(f"[page {j}](page-{j:04d}.md)" for j in rng.sample(range(total), 3))
    parts.append(f"See also {links}.\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=500, help="documents in the synced package")
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks in the account for the search bench")
    parser.add_argument("--queries", type=int, default=200, help="measured searches (>= 50)")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args(argv)
    queries = max(args.queries, 50)
    started = time.perf_counter()

    sys.path.insert(0, str(ROOT))
    db_info = prepare_database("agentmate_bench_knowledge")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg

    from agentmate.core.db import get_database
    from agentmate.core.errors import TooLarge
    from agentmate.core.principal import Principal
    from agentmate.core.settings import get_settings
    from agentmate.knowledge import index, search, service
    from agentmate.knowledge.schemas import KnowledgeSyncRequest
    from agentmate.knowledge.search_schemas import KnowledgeIndexRequest, KnowledgeSearchRequest
    from agentmate.packages.git import GitFetcher
    from agentmate.packages.models import SourceInput
    from agentmate.packages.service import Actor
    from agentmate.retrieval import config
    from agentmate.retrieval.embedded_index import EmbeddedIndex
    from agentmate.retrieval.service import Retrieval
    from tests.integration.packages.gitserver import GitServer, commit_tree
    from tests.integration.packages.test_packages_git import SETTINGS, make_policy

    timing = TimingEmbedder(config.build_embedder(get_settings()))
    retrieval = Retrieval(embedder=timing)
    db = get_database()
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        account_id, user_id = owner.execute(
            """WITH a AS (INSERT INTO accounts DEFAULT VALUES RETURNING id)
               INSERT INTO users (id, account_id, email, password_hash) SELECT id, id, 'bench@example.com', 'x'
               FROM a RETURNING account_id, id""").fetchone()  # type: ignore[misc]
    principal = Principal(account_id, user_id, "jwt")
    actor = Actor(account_id, user_id)
    policy = make_policy()
    server = GitServer().start()
    rng = random.Random(7)

    def ingest_and_index(n_docs: int, name: str) -> dict[str, Any]:
        files = {f"ops/{name}/KNOWLEDGE.yaml": f"name: {name}\ncapabilities: [operations]\n".encode()}
        for i in range(n_docs):
            files[f"ops/{name}/page-{i:04d}.md"] = document(i, n_docs, rng).encode()
        size = sum(len(v) for v in files.values())
        commit_tree(server.repo(f"acme/{name}"), files)
        src = service.register_source(db, actor, SourceInput(
            type="git", repository_url=server.url("git.test", f"acme/{name}"), package_path=f"ops/{name}",
            default_ref="main"), policy).source
        t0 = time.perf_counter()
        ingested = service.sync_source(db, actor, src.id, KnowledgeSyncRequest(), GitFetcher(policy, SETTINGS))
        t_sync = time.perf_counter() - t0
        requests, report = 0, None
        while report is None:
            requests += 1
            try:
                report = index.index_active(db, retrieval, principal, KnowledgeIndexRequest(source_id=src.id))
            except TooLarge:
                continue
        total = time.perf_counter() - t0
        item = report.items[0]
        assert item.failed_chunks == 0 and item.documents == n_docs, item
        return {"source": src, "revision": ingested.revision, "sync": t_sync, "index": total - t_sync,
                "total": total, "requests": requests, "chunks": item.chunks, "links": item.links, "bytes": size,
                "docs": n_docs}

    base = ingest_and_index(max(args.documents // 10, 10), "baseline")
    main_run = ingest_and_index(args.documents, "handbook")
    server.stop()
    rows = []
    for label, r in (("baseline", base), ("measured", main_run)):
        rows.append([label, r["docs"], f"{r['bytes'] / 1e6:.2f}", r["chunks"], r["links"], f"{r['sync']:.2f}",
                     f"{r['index']:.2f}", r["requests"], f"{r['total']:.2f}", f"{r['docs'] / r['total']:.0f}"])
    per_doc = (main_run["total"] / main_run["docs"]) / (base["total"] / base["docs"])
    print_table(
        "Knowledge git sync + index of a generated Markdown package (loopback git server, offline embedder)",
        ["package", "documents", "MB", "chunks", "links", "sync s", "index s", "index requests", "total s",
         "documents/s"], rows,
        notes=[f"Time per document vs the baseline package: {per_doc:.2f}x.",
               f"Goal ≤ {INGEST_GOAL_S:g} s for {args.documents} documents: "
               f"{'met' if main_run['total'] <= INGEST_GOAL_S else 'NOT met'} ({main_run['total']:.1f} s)."])

    # ---- 2. search at N chunks --------------------------------------------------------------------------------
    from agentmate.knowledge.index import NAMESPACE, SOURCE_TYPE
    from agentmate.retrieval.service import DocumentIn

    with db.tenant(account_id) as conn:
        docs = conn.execute("SELECT id, path FROM knowledge_documents WHERE revision_id = %s AND path LIKE '%%.md'",
                            (main_run["revision"].id,)).fetchall()
    src = main_run["source"]
    have = base["chunks"] + main_run["chunks"]
    t_seed = time.perf_counter()
    batch: list[Any] = []
    n = 0
    while have + n < args.chunks:
        d = docs[n % len(docs)]
        heading = f"Handbook page {n % len(docs)} > Seeded {n}"
        body = f"## Seeded {n}\n\n{sentence(rng, 60)}\n"
        batch.append(DocumentIn(namespace=NAMESPACE, source_type=SOURCE_TYPE, source_id=str(d["id"]),
                                chunk_key=f"seed-{n:06d}", title=f"{d['path']} # {heading}", content=body,
                                metadata={"source_id": str(src.id), "revision_id": str(main_run["revision"].id),
                                          "document_id": str(d["id"]), "path": d["path"], "heading_path": heading,
                                          "knowledge_base": src.name}))
        n += 1
        if len(batch) == 2000:
            retrieval.index_documents(db, account_id, batch)
            batch = []
    if batch:
        retrieval.index_documents(db, account_id, batch)
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        owner.execute("VACUUM (ANALYZE) retrieval_documents, knowledge_chunks, knowledge_document_links")
        chunks = owner.execute("SELECT count(*) FROM retrieval_documents WHERE account_id = %s AND namespace = %s",
                               (account_id, NAMESPACE)).fetchone()[0]  # type: ignore[index]
    vindex = retrieval.vector_index()
    if isinstance(vindex, EmbeddedIndex):
        vindex.wait_optimized()
    seed_s = time.perf_counter() - t_seed

    qrng = random.Random(11)
    query_set = [f"{qrng.choice(WORDS)} {qrng.choice(WORDS)} {qrng.choice(WORDS)}" for _ in range(queries)]

    def once(q: str, **kw: Any) -> tuple[float, float]:
        t0 = time.perf_counter_ns()
        out = search.search(db, retrieval, principal, KnowledgeSearchRequest(query=q, top_k=5, **kw))
        total = (time.perf_counter_ns() - t0) / 1e6
        assert out.items, q
        return total, timing.last_ms

    search_rows = []
    for label, kw in (("no filter", {}), ("source_ids=[one]", {"source_ids": [src.id]}),
                      ("include_content", {"include_content": True})):
        for q in query_set[: args.warmup]:
            once(q, **kw)
        totals, excl = [], []
        for q in query_set:
            total, emb = once(q, **kw)
            totals.append(total)
            excl.append(total - emb)
        st, sx = summary(totals), summary(excl)
        search_rows.append([label, st["n"], f"{st['p50']:.2f}", f"{st['p95']:.2f}", f"{sx['p50']:.2f}",
                            f"{sx['p95']:.2f}"])
    p95 = float(search_rows[0][5])
    print_table(
        f"knowledge.search.search (top_k=5, query logged, neighbours read) at {chunks:,} chunks in one account",
        ["filters", "queries", "p50 ms", "p95 ms", "p50 excl. embedding", "p95 excl. embedding"], search_rows,
        notes=[f"Seeding {chunks - have:,} extra chunks + VACUUM ANALYZE + vector optimisation took {seed_s:.0f} s.",
               f"Goal p95 ≤ {SEARCH_GOAL_P95_MS:g} ms excluding embedding (no filter): "
               f"{'met' if p95 <= SEARCH_GOAL_P95_MS else 'NOT met'} ({p95:.2f} ms)."])
    print(f"\n{machine()}; command: {COMMAND} --documents {args.documents} --chunks {args.chunks} "
          f"--queries {queries}; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
