"""Memory benchmarks: event append through the memory Lambda handler, and hybrid memory search at 1k/10k/100k
entries in one account with the local engines (static embedder + embedded qdrant-edge index).

    .venv/bin/python bench/memory_bench.py [--appends 2000] [--queries 200] [--sizes 1000,10000,100000]

Postgres: a cluster of its own in .local/bench-memory-pg (port $AGENTMATE_MEMORY_BENCH_PG_PORT, default 26436;
separate from bench/common.py's cluster so concurrent benchmarks cannot stop each other's server), a fresh
migrated database, the application connecting as ``agentmate_app`` (RLS applies) with DB_POOL_MAX_SIZE=1 as in
Lambda. Requests are API Gateway HTTP API v2 events handed to ``functions.memory.app.handler`` in-process
(Mangum, Powertools decorators, API-key auth, scope check, validation, the service and its transactions all run).

Baselines measured in the same run: one psycopg connection running a tenant transaction with a SELECT by id
(what any request costs at least), and the same plus the API-key lookup every authenticated request makes.

Search corpora are seeded directly (SQL batch insert of entries + evidence, then the batch indexing path
``memory.service.index_entries``: one embedding call and one vector upsert per batch), not through HTTP, and
VACUUM ANALYZEd afterwards (what autovacuum does within a minute of a bulk load).
Query embedding time is measured separately (a timing wrapper around the embedder) and reported beside the
search latency; "excl. embedding" subtracts it per call.

Goals: search p95 ≤ 50 ms at 100k entries excluding embedding; append p50 ≤ 5 ms.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
import warnings
from typing import Any

import common
from common import (
    PASSWORD,
    ROOT,
    BenchDatabase,
    TimingEmbedder,
    machine,
    print_table,
    summary,
)

COMMAND = ".venv/bin/python bench/memory_bench.py"
SEARCH_GOAL_P95_MS = 50.0
APPEND_GOAL_P50_MS = 5.0

SUBJECTS = (
    "billing service",
    "deploy pipeline",
    "staging cluster",
    "payment gateway",
    "search index",
    "auth module",
    "mobile app",
    "data warehouse",
    "cron scheduler",
    "email worker",
    "feature flag",
    "rate limiter",
    "cache layer",
    "ingest job",
    "report generator",
    "api gateway",
    "load balancer",
    "message queue",
    "backup task",
    "user profile page",
    "invoice export",
    "audit log",
    "metrics dashboard",
    "onboarding flow",
    "webhook relay",
    "image resizer",
    "pdf renderer",
    "notification center",
    "session store",
    "config loader",
)
VERBS = (
    "fails",
    "retries",
    "times out",
    "needs",
    "uses",
    "depends on",
    "was migrated to",
    "leaks memory in",
    "must not call",
    "is throttled by",
    "reads from",
    "writes to",
    "was rewritten in",
    "caches",
    "validates",
    "skips",
    "blocks on",
    "is monitored by",
    "emits events to",
    "was deprecated in favour of",
)
OBJECTS = (
    "postgres",
    "redis",
    "kafka",
    "s3 buckets",
    "the legacy soap api",
    "terraform",
    "kubernetes",
    "python 3.12",
    "rust",
    "the eu region",
    "cloudfront",
    "dynamodb",
    "sqs",
    "the fraud model",
    "graphql",
    "grpc",
    "oauth tokens",
    "jwt secrets",
    "the nightly batch",
    "blue green releases",
    "canary deploys",
    "utf8 filenames",
    "timezone math",
    "large csv files",
    "idempotency keys",
    "retry budgets",
    "connection pools",
    "row level security",
    "vector search",
    "full text search",
)
QUALIFIERS = (
    "on mondays",
    "under load",
    "after the upgrade",
    "since march",
    "in production only",
    "when the cache is cold",
    "for enterprise tenants",
    "during backups",
    "behind the proxy",
    "with large payloads",
    "in the eu region",
    "after midnight utc",
    "for legacy accounts",
    "when retries pile up",
    "on arm instances",
)
ADVICE = (
    "Check the dashboard first.",
    "Ask the platform team before changing it.",
    "The runbook has the fix.",
    "Restart only the worker, not the whole service.",
    "Pin the client version.",
    "Increase the timeout to 30s.",
    "Use the bulk endpoint instead.",
    "Disable the feature flag as a workaround.",
    "Rotate the credentials.",
    "Raise the pool size to 20.",
)


def memory_text(rng: random.Random) -> tuple[str, str]:
    subject, verb, obj, qual = (
        rng.choice(SUBJECTS),
        rng.choice(VERBS),
        rng.choice(OBJECTS),
        rng.choice(QUALIFIERS),
    )
    title = f"{subject} {verb} {obj}"
    content = f"The {subject} {verb} {obj} {qual}. {rng.choice(ADVICE)} Ticket {rng.randint(1000, 99999)}."
    return title, content


def query_text(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        return f"{rng.choice(SUBJECTS)} {rng.choice(OBJECTS)}"
    if kind < 0.7:
        return f"why does the {rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(QUALIFIERS)}"
    if kind < 0.9:
        return rng.choice(OBJECTS)
    return f"what do we know about {rng.choice(SUBJECTS)}"


PG_DIR = ROOT / ".local" / "bench-memory-pg"
PG_PORT = int(os.environ.get("AGENTMATE_MEMORY_BENCH_PG_PORT", "26436"))


def prepare_database(name: str) -> BenchDatabase:
    return common.prepare_database(name, pg_dir=PG_DIR, pg_port=PG_PORT)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--appends", type=int, default=2000, help="measured event appends (>= 200)")
    parser.add_argument("--queries", type=int, default=200, help="measured searches per corpus size (>= 50)")
    parser.add_argument("--sizes", default="1000,10000,100000", help="cumulative corpus sizes")
    parser.add_argument("--warmup", type=int, default=30)
    args = parser.parse_args(argv)
    appends, queries = max(args.appends, 200), max(args.queries, 50)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    started = time.perf_counter()

    db_info = prepare_database("agentmate_bench_memory")
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg
    from psycopg.rows import dict_row
    from psycopg.types.json import Jsonb

    from agentmate.api import deps
    from agentmate.auth.security import hash_api_key
    from agentmate.core.db import get_database
    from agentmate.core.settings import get_retrieval_settings
    from agentmate.memory import repository as memory_repo
    from agentmate.memory.service import projection
    from agentmate.retrieval import config
    from agentmate.retrieval import service as retrieval_service
    from agentmate.retrieval.embedded_index import EmbeddedIndex
    from functions.auth.app import handler as auth_handler
    from functions.memory import app as memory_app
    from functions.memory.app import handler as memory_handler
    from tests.apigw import LambdaContext, http_event, parse_response

    def call(handler: Any, method: str, path: str, expect: int = 200, **kw: Any) -> Any:
        r = parse_response(handler(http_event(method, path, **kw), LambdaContext()))
        if r.status_code != expect:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.body}")
        return r.json()

    email = f"bench-{time.time_ns()}@example.com"
    reg = call(
        auth_handler, "POST", "/api/auth/register", 201, json_body={"email": email, "password": PASSWORD}
    )
    account_id, user_id = uuid.UUID(reg["account_id"]), uuid.UUID(reg["user_id"])
    token = call(auth_handler, "POST", "/api/auth/login", json_body={"email": email, "password": PASSWORD})[
        "token"
    ]
    key = call(
        auth_handler,
        "POST",
        "/api/auth/apikeys",
        201,
        headers={"Authorization": f"Bearer {token}"},
        json_body={"name": "bench", "scopes": ["memory:rw"]},
    )["key"]
    headers = {"X-Api-Key": key}

    # ---- event append through the handler, against the psycopg baselines ---------------------------------------
    conn = psycopg.connect(db_info.app_url, row_factory=dict_row, prepare_threshold=None)
    seed_event = call(
        memory_handler,
        "POST",
        "/api/memory/events",
        201,
        headers=headers,
        json_body={"event_type": "note", "idempotency_key": "seed", "payload": {"text": "seed"}},
    )
    key_hash = hash_api_key(key)

    def baseline() -> None:
        with conn.transaction():
            conn.execute("SELECT set_config('app.account_id', %s, true)", (str(account_id),))
            conn.execute(
                f"SELECT {memory_repo.EVENT_COLUMNS} FROM memory_events WHERE account_id = %s AND id = %s",
                (account_id, seed_event["id"]),
            ).fetchone()

    def baseline_with_key() -> None:
        with conn.transaction():
            conn.execute(
                "SELECT key_id, account_id, user_id, scopes, role FROM auth_api_key(%s)", (key_hash,)
            )
        baseline()

    counter = iter(range(10**9))
    rng = random.Random(7)

    def append() -> None:
        n = next(counter)
        body = {
            "event_type": rng.choice(["observation", "action", "decision", "note"]),
            "idempotency_key": f"ev-{n}",
            "session_id": f"session-{n // 50}",
            "scope_type": "repository",
            "scope_key": "acme/app",
            "payload": {"text": memory_text(rng)[1], "step": n},
        }
        call(memory_handler, "POST", "/api/memory/events", 201, headers=headers, json_body=body)

    replay_body = {"event_type": "note", "idempotency_key": "replayed", "payload": {"text": "same"}}
    call(memory_handler, "POST", "/api/memory/events", 201, headers=headers, json_body=replay_body)

    def replay() -> None:
        call(memory_handler, "POST", "/api/memory/events", 200, headers=headers, json_body=replay_body)

    variants = [
        ("psycopg: tenant SELECT by id (baseline)", baseline),
        ("psycopg: API key lookup + tenant SELECT", baseline_with_key),
        ("POST /api/memory/events (new event)", append),
        ("POST /api/memory/events (replay, 200)", replay),
    ]
    for _, fn in variants:
        for _ in range(args.warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name, _ in variants}
    append_wall = 0.0
    block = 50
    for _ in range(appends // block):
        for name, fn in variants:
            t_block = time.perf_counter()
            for _ in range(block):
                t0 = time.perf_counter_ns()
                fn()
                samples[name].append((time.perf_counter_ns() - t0) / 1e6)
            if fn is append:
                append_wall += time.perf_counter() - t_block
    conn.close()
    base = summary(samples[variants[0][0]])
    rows = []
    for name, _ in variants:
        s = summary(samples[name])
        rows.append(
            [
                name,
                s["n"],
                f"{s['p50']:.3f}",
                f"{s['p95']:.3f}",
                f"{s['p99']:.3f}",
                f"{s['p50'] / base['p50']:.1f}x",
            ]
        )
    append_stats = summary(samples[variants[2][0]])
    throughput = len(samples[variants[2][0]]) / append_wall
    print_table(
        "Event append through the memory Lambda handler",
        ["variant", "calls", "p50 ms", "p95 ms", "p99 ms", "p50 vs baseline"],
        rows,
        notes=[
            f"Sequential append throughput (one warm Lambda environment): {throughput:.0f} events/s.",
            f"Goal append p50 ≤ {APPEND_GOAL_P50_MS} ms: "
            f"{'met' if append_stats['p50'] <= APPEND_GOAL_P50_MS else 'NOT met'} ({append_stats['p50']:.2f} ms).",
        ],
    )

    # ---- hybrid search at growing corpus sizes ----------------------------------------------------------------
    timing = TimingEmbedder(config.build_embedder(get_retrieval_settings()))
    # The runtime's retrieval, with the timed embedder, served to the memory function through its dependency;
    # bigger batches for seeding only (fewer transactions).
    retrieval = retrieval_service.Retrieval(embedder=timing, index_batch=256)
    memory_app.app.dependency_overrides[deps.retrieval] = lambda: retrieval
    db = get_database()
    seeded = 0
    seed_rows: list[list[Any]] = []
    search_rows: list[list[Any]] = []
    breakdown_rows: list[list[Any]] = []
    qrng = random.Random(11)
    query_set = [query_text(qrng) for _ in range(max(queries, 100))]

    def measure(label: str) -> dict[str, float]:
        """Search latency through the handler, then per-leg timings at the service level."""

        def search_once(text: str) -> tuple[float, float]:
            t0 = time.perf_counter_ns()
            call(
                memory_handler,
                "POST",
                "/api/memory/search",
                headers=headers,
                json_body={"query": text, "top_k": 8},
            )
            return (time.perf_counter_ns() - t0) / 1e6, timing.last_ms

        for q in query_set[: args.warmup]:
            search_once(q)
        totals, embeds, excl = [], [], []
        for i in range(queries):
            total, emb = search_once(query_set[i % len(query_set)])
            totals.append(total)
            embeds.append(emb)
            excl.append(total - emb)
        st, se, sx = summary(totals), summary(embeds), summary(excl)
        search_rows.append(
            [
                label,
                queries,
                f"{st['p50']:.2f}",
                f"{st['p95']:.2f}",
                f"{sx['p50']:.2f}",
                f"{sx['p95']:.2f}",
                f"{se['p50']:.2f}",
                f"{se['p95']:.2f}",
            ]
        )
        # Where the time goes (service level, no HTTP): per-leg timings of the retrieval core.
        legs: dict[str, list[float]] = {}
        for q in query_set[:50]:
            res = retrieval.search(
                db,
                account_id,
                retrieval_service.Query(
                    namespace="memory",
                    text=q,
                    top_k=24,
                    source_type="memory_entry",
                    metadata={"status": "active"},
                ),
            )
            for leg, ms in res.timings_ms.items():  # type: ignore[union-attr]
                legs.setdefault(leg, []).append(ms)
        breakdown_rows.append(
            [
                label,
                *(
                    f"{summary(legs.get(k, [0.0]))['p50']:.2f} / {summary(legs.get(k, [0.0]))['p95']:.2f}"
                    for k in ("embed", "vector_search", "lexical", "hydrate")
                ),
            ]
        )
        return sx

    for size in sizes:
        t_seed = time.perf_counter()
        while seeded < size:
            n = min(5000, size - seeded)
            texts = [memory_text(rng) for _ in range(n)]
            types = [rng.choice(["semantic", "episodic", "procedural"]) for _ in range(n)]
            with db.tenant(account_id) as tx:
                rows_in = tx.execute(
                    f"""INSERT INTO memory_entries (account_id, user_id, scope_type, scope_key, memory_type, title,
                                                    content, content_hash, importance, metadata)
                        SELECT %(a)s, %(u)s, 'repository', 'acme/app', t.memory_type, t.title, t.content,
                               md5(t.content), t.importance, %(md)s
                        FROM unnest(%(types)s::text[], %(titles)s::text[], %(contents)s::text[],
                                    %(imp)s::float8[]) AS t (memory_type, title, content, importance)
                        RETURNING {memory_repo.ENTRY_COLUMNS}""",
                    {
                        "a": account_id,
                        "u": user_id,
                        "md": Jsonb({"bench": True}),
                        "types": types,
                        "titles": [t for t, _ in texts],
                        "contents": [c for _, c in texts],
                        "imp": [round(rng.random(), 2) for _ in range(n)],
                    },
                ).fetchall()
                tx.execute(
                    """INSERT INTO memory_evidence (account_id, memory_id, source_type, source_id)
                              SELECT %s, id, 'bench', 'seed' FROM unnest(%s::uuid[]) AS id""",
                    (account_id, [r["id"] for r in rows_in]),
                )
            results = projection.index_entries(db, retrieval, account_id, rows_in)
            failed = [r for r in results if r.status != "indexed"]
            if failed:
                raise RuntimeError(f"indexing failed: {failed[0].error}")
            seeded += n
        # Autovacuum would vacuum and analyze the bulk load within a minute; do it now, so the plans are the
        # steady-state ones and no autovacuum worker competes for the two cores during the measurement.
        with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
            owner.execute("VACUUM (ANALYZE) retrieval_documents, memory_entries, memory_evidence")
        seed_s = time.perf_counter() - t_seed
        # The embedded index builds its HNSW graphs in the background once enough points were written; measure
        # the steady state the runtime reaches, and report how long that took after seeding.
        t_wait = time.perf_counter()
        index = retrieval.vector_index()
        if isinstance(index, EmbeddedIndex):
            index.wait_optimized()
        seed_rows.append([f"{size:,}", f"{seed_s:.1f}", f"{time.perf_counter() - t_wait:.1f}"])

        sx = measure(f"{size:,}")
        print(
            f"... {size:,} entries: seeded in {seed_s:.1f}s, search p95 excl. embedding {sx['p95']:.2f} ms",
            flush=True,
        )

    largest = search_rows[-1]
    p95_excl = float(largest[5])
    print_table(
        "Hybrid memory search through the memory Lambda handler (POST /api/memory/search, top_k 8)",
        [
            "entries",
            "queries",
            "p50 ms",
            "p95 ms",
            "p50 excl. embedding",
            "p95 excl. embedding",
            "embed p50 ms",
            "embed p95 ms",
        ],
        search_rows,
        notes=[
            f"Goal p95 ≤ {SEARCH_GOAL_P95_MS} ms at the largest size excluding embedding: "
            f"{'met' if p95_excl <= SEARCH_GOAL_P95_MS else 'NOT met'} ({p95_excl:.2f} ms at {largest[0]}).",
            f"Embedder: {timing.inner.name} ({timing.dimensions} dims); vector index: embedded qdrant-edge.",
            "Measured after the embedded index's background optimisation (HNSW build) finished; searches"
            " during a build are slower (see the seeding table for how long it ran).",
        ],
    )
    print_table(
        "Retrieval core per leg, service level (p50 / p95 ms)",
        ["entries", "query embedding", "vector search", "lexical leg", "vector hydration"],
        breakdown_rows,
    )
    print_table(
        "Seeding (SQL batch insert + batch indexing: embed, vector upsert, mark indexed)",
        ["entries (cumulative)", "seconds for this step", "then waiting for background optimisation, s"],
        seed_rows,
    )
    print(f"Command: {COMMAND} --appends {appends} --queries {queries} --sizes {args.sizes}")
    print(f"Machine: {machine()}. Total run time {time.perf_counter() - started:.0f} s.")
    memory_app.app.dependency_overrides.pop(deps.retrieval, None)
    retrieval.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
