"""Context pack benchmark: POST /api/context/pack through the context Lambda handler with every available layer
populated, and whether running the layer providers concurrently pays off.

    .venv/bin/python bench/context_bench.py [--packs 200] [--memories 10000] [--facts 1000] [--working 500]
        [--skills 1000] [--knowledge 10000]

Data (one account): ``--memories`` durable memories (SQL batch insert + the batch indexing path, as
bench/memory_bench.py), ``--facts`` todos and as many notes, a working-memory session of ``--working`` items, and
a journal with a checkpoint under the same session id (so TASK resumes it), ``--skills`` active, indexed
skills (registry snapshots), and ``--knowledge`` knowledge chunks: a registered local knowledge source whose
pushed package (generated Markdown, 50 sections a document) is indexed through ``knowledge.search.index``
(``common.seed_knowledge``). The pack is built with every layer requested and ``render: true``.

Postgres: a cluster of its own in .local/bench-context-pg (port $AGENTMATE_CONTEXT_BENCH_PG_PORT, default 26449),
a fresh migrated database, the application connecting as ``agentmate_app`` (RLS applies). Requests are API
Gateway HTTP API v2 events handed to ``functions.context.app.handler`` in-process (Mangum, Powertools, API-key
auth, scope check, validation, the service and its transactions all run).

Variants, interleaved in blocks of 20 so drift hits them alike:
- serial, pool 1: the providers one after another on Lambda's one connection, in one transaction (DB_POOL_MAX_SIZE=1);
- parallel, pool 1: providers on threads, but one connection (what parallel costs without a bigger pool);
- parallel, pool 6: providers on threads, each with its own pooled connection.
The query embeddings (the vector legs of MEMORY and of SKILL's search) are timed by a wrapper and subtracted
per call ("excl. embedding"). Baseline measured in the same run: a psycopg tenant transaction with a SELECT by id.

Then the breakdown: the same packs through the handler, serial on one connection, with each step timed by
``common.Stopwatch`` (every provider's SQL, the retrieval legs, fitting, rendering, the API-key check, and the
rest of the handler: event decoding, validation and JSON), per layer and per step.

Goal: pack p95 ≤ 100 ms excluding embedding.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
import uuid
import warnings
from typing import Any

import common
from common import PASSWORD, ROOT, BenchDatabase, machine, print_table, summary
from memory_bench import SUBJECTS, memory_text, query_text

COMMAND = ".venv/bin/python bench/context_bench.py"
GOAL_P95_MS = 100.0
PG_DIR = ROOT / ".local" / "bench-context-pg"
PG_PORT = int(os.environ.get("AGENTMATE_CONTEXT_BENCH_PG_PORT", "26449"))
PARALLEL_POOL = 6
LAYERS = ["SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "WORKING", "TASK"]


class SummingEmbedder:
    """Wraps an embedder and adds up the wall time of its calls since the last reset (a pack embeds its query
    once for MEMORY and once for SKILL's search; the providers may run on threads)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.total_ms = 0.0
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> list[list[float]]:
        t0 = time.perf_counter()
        out = self.inner.embed(texts)
        with self._lock:
            self.total_ms += (time.perf_counter() - t0) * 1000
        return out


def prepare_database(name: str, keep: bool = False) -> BenchDatabase:
    return common.prepare_database(name, keep=keep, pg_dir=PG_DIR, pg_port=PG_PORT)


def steps() -> list[tuple[Any, str, str]]:
    """(owner, attribute, label) of every step the breakdown times; attributes another engineer may rename are
    skipped when absent."""
    import fastapi.routing

    from agentmate.auth import credentials
    from agentmate.context import service as context_service
    from agentmate.knowledge.search import repository as knowledge_repo
    from agentmate.memory import repository as memory_repo
    from agentmate.memory.readmodels import skill_executions
    from agentmate.memory.service import scopes
    from agentmate.notes import repository as notes_repo
    from agentmate.retrieval import repository as retrieval_repo
    from agentmate.retrieval.service import Retrieval
    from agentmate.skills.catalog import repository as skills_repo
    from agentmate.todos import repository as todos_repo
    from agentmate.working import repository as working_repo

    return [
        (retrieval_repo, "lexical_search", "retrieval: lexical leg SQL"),
        (Retrieval, "_vector_search", "retrieval: vector index search (beside the lexical leg)"),
        (retrieval_repo, "hydrate_points", "retrieval: vector hits hydrated (SQL)"),
        (retrieval_repo, "record_query", "retrieval: query log INSERT"),
        (memory_repo, "entries_by_ids", "memory entries by id (SQL)"),
        (memory_repo, "bump_access_with_evidence", "access counts UPDATE + evidence (SQL, one round trip)"),
        (scopes, "nearest_if_empty", "nearest scopes (SQL)"),
        (skills_repo, "cards", "skill cards (SQL)"),
        (knowledge_repo, "sources", "knowledge sources (SQL)"),
        (knowledge_repo, "neighbours", "document links (SQL)"),
        (todos_repo, "search", "todos (SQL)"),
        (notes_repo, "search", "notes (SQL)"),
        (working_repo, "recent_window", "session, item count, newest page (SQL, one round trip)"),
        (working_repo, "recent_items", "further pages (SQL)"),
        (memory_repo, "latest_checkpoint", "latest checkpoint (SQL)"),
        (skill_executions, "timeline", "journal after the checkpoint (SQL)"),
        (context_service, "_assemble", "fit + assemble (budget.fit)"),
        (context_service, "render", "render"),
        (context_service, "pack", "pack service"),
        (credentials, "authenticate", "API-key check"),
        (fastapi.routing, "serialize_response", "response validation + JSON"),
    ]


def breakdown(pack: Any, packs: int, embedder: Any) -> list[list[Any]]:
    """Run ``pack(i)`` ``packs`` times with every step of ``steps()`` timed per layer; the table rows."""
    from agentmate.context import service as context_service

    watch = common.Stopwatch()
    for owner, attr, label in steps():
        if hasattr(owner, attr):
            watch.wrap(owner, attr, label)
    watch.wrap(embedder, "embed", "embedding")
    layer_run = context_service._run

    def run_layer(db: Any, retrieval: Any, principal: Any, req: Any, name: str, budget: int) -> Any:
        watch.section = name
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        try:
            return layer_run(db, retrieval, principal, req, name, budget)  # type: ignore[arg-type]
        finally:
            watch.add("provider", (time.perf_counter_ns() - t0) / 1e6)
            watch.add("CPU", (time.thread_time_ns() - c0) / 1e6)
            watch.section = ""

    context_service._run = run_layer  # type: ignore[assignment]
    tallies: list[dict[tuple[str, str], float]] = []
    try:
        for j in range(packs):
            watch.reset()
            c0 = time.process_time_ns()
            total, _ = pack(j)
            watch.add("handler", total, "")
            watch.add("CPU", (time.process_time_ns() - c0) / 1e6, "")
            tallies.append(dict(watch.totals))
    finally:
        context_service._run = layer_run  # type: ignore[assignment]
        watch.restore()

    def stat(values: list[float]) -> list[str]:
        s = summary(values)
        return [f"{s['p50']:.2f}", f"{s['p95']:.2f}", f"{s['mean']:.2f}"]

    labels = [label for *_, label in steps()]
    rows: list[list[Any]] = []
    for layer in LAYERS:
        provider = [t.get((layer, "provider"), 0.0) - t.get((layer, "embedding"), 0.0) for t in tallies]
        rows.append([f"**{layer}**", *stat(provider)])
        rows.append(
            [
                "  CPU of the provider's thread (not the vector leg's)",
                *stat([t.get((layer, "CPU"), 0.0) for t in tallies]),
            ]
        )
        inner = [label for label in labels if any((layer, label) in t for t in tallies) and label != "CPU"]
        for label in inner:
            rows.append([f"  {label}", *stat([t.get((layer, label), 0.0) for t in tallies])])
        if inner:
            rest = [
                p - sum(t.get((layer, label), 0.0) for label in inner if "beside" not in label)
                for p, t in zip(provider, tallies, strict=True)
            ]
            rows.append(["  rest (transactions, Python)", *stat(rest)])
    layer_sum = [
        sum(t.get((n, "provider"), 0.0) - t.get((n, "embedding"), 0.0) for n in LAYERS) for t in tallies
    ]
    slowest = [
        max(t.get((n, "provider"), 0.0) - t.get((n, "embedding"), 0.0) for n in LAYERS) for t in tallies
    ]
    rows.append(["sum of the layers (the serial work)", *stat(layer_sum)])
    rows.append(["slowest layer (lower bound of a parallel pack)", *stat(slowest)])
    embedding = [sum(v for (_, label), v in t.items() if label == "embedding") for t in tallies]
    for label in ("fit + assemble (budget.fit)", "render"):
        rows.append([label, *stat([t.get(("", label), 0.0) for t in tallies])])
    rows.append(
        [
            "pack service (excl. embedding)",
            *stat([t.get(("", "pack service"), 0.0) - e for t, e in zip(tallies, embedding, strict=True)]),
        ]
    )
    for label in ("API-key check", "response validation + JSON"):
        rows.append([label, *stat([t.get(("", label), 0.0) for t in tallies])])
    excl = [t[("", "handler")] - e for t, e in zip(tallies, embedding, strict=True)]
    rest = [
        t[("", "handler")] - t.get(("", "pack service"), 0.0) - t.get(("", "API-key check"), 0.0)
        for t in tallies
    ]
    rows.append(["handler rest (event, routing, validation, JSON, threads)", *stat(rest)])
    rows.append(["**handler total, excl. embedding**", *stat(excl)])
    rows.append(
        [
            "CPU of the whole process per pack (every thread; embedding included)",
            *stat([t.get(("", "CPU"), 0.0) for t in tallies]),
        ]
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packs", type=int, default=200, help="measured packs per variant (>= 40)")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--facts", type=int, default=1000, help="todos, and as many notes")
    parser.add_argument(
        "--working", type=int, default=500, help="items in the working-memory session (<= 500)"
    )
    parser.add_argument(
        "--skills", type=int, default=1000, help="active, indexed skills (registry snapshots)"
    )
    parser.add_argument(
        "--knowledge", type=int, default=10_000, help="indexed knowledge chunks (50 a document)"
    )
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the database afterwards (for EXPLAIN); start the cluster beforehand to keep it up",
    )
    args = parser.parse_args(argv)
    packs = max(args.packs, 40)
    started = time.perf_counter()

    db_info = prepare_database("agentmate_bench_context", keep=args.keep)
    os.environ["DB_POOL_MAX_SIZE"] = "1"
    warnings.filterwarnings("ignore", "No application metrics")

    import psycopg
    from psycopg.rows import dict_row
    from psycopg.types.json import Jsonb

    from agentmate.context import service as context_service
    from agentmate.context.schemas import PackRequest
    from agentmate.core import db as core_db
    from agentmate.core.db import Database
    from agentmate.core.principal import Principal
    from agentmate.core.settings import get_database_settings, get_retrieval_settings
    from agentmate.memory import repository as memory_repo
    from agentmate.memory.schemas import CheckpointCreate, EventCreate
    from agentmate.memory.service import checkpoints, events, projection
    from agentmate.packages.schemas import FileInput, SourceInput
    from agentmate.retrieval import config
    from agentmate.retrieval import service as retrieval_service
    from agentmate.retrieval.embedded_index import EmbeddedIndex
    from agentmate.skills.registry import service as registry
    from agentmate.skills.registry.schemas import SkillSnapshotPush
    from agentmate.working import service as working_service
    from agentmate.working.schemas import ItemIn, ItemsAppend, SessionCreate
    from functions.auth.app import handler as auth_handler
    from functions.context.app import handler as context_handler
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
    scopes = ["memory:rw", "todos:r", "notes:r", "skills:r", "knowledge:r"]
    key = call(
        auth_handler,
        "POST",
        "/api/auth/apikeys",
        201,
        headers={"Authorization": f"Bearer {token}"},
        json_body={"name": "bench", "scopes": scopes},
    )["key"]
    headers = {"X-Api-Key": key}
    principal = Principal(account_id=account_id, user_id=user_id, via="jwt")

    # ---- seed every layer -----------------------------------------------------------------------------------------
    timing = SummingEmbedder(config.build_embedder(get_retrieval_settings()))
    retrieval = retrieval_service.Retrieval(embedder=timing, index_batch=256)
    # The environment's Retrieval and Database are this bench's (no dependency_overrides: FastAPI re-analyses an
    # overridden dependency's signature on every request, ~1 ms a pack that production does not pay).
    retrieval_service._retrieval = retrieval
    pools = {
        1: Database(db_info.app_url, max_size=1),
        PARALLEL_POOL: Database(db_info.app_url, max_size=PARALLEL_POOL),
    }
    db = pools[1]
    rng = random.Random(7)
    t_seed = time.perf_counter()
    seeded = 0
    while seeded < args.memories:
        n = min(5000, args.memories - seeded)
        texts = [memory_text(rng) for _ in range(n)]
        with db.tenant(account_id) as tx:
            rows_in = tx.execute(
                f"""INSERT INTO memory_entries (account_id, user_id, scope_type, scope_key, memory_type, title,
                                                content, content_hash, importance, metadata)
                    SELECT %(a)s, %(u)s, 'repository', 'acme/app', t.memory_type, t.title, t.content,
                           md5(t.content), 0.5, %(md)s
                    FROM unnest(%(types)s::text[], %(titles)s::text[], %(contents)s::text[])
                         AS t (memory_type, title, content)
                    RETURNING {memory_repo.ENTRY_COLUMNS}""",
                {
                    "a": account_id,
                    "u": user_id,
                    "md": Jsonb({"bench": True}),
                    "types": [rng.choice(["semantic", "episodic", "procedural"]) for _ in range(n)],
                    "titles": [t for t, _ in texts],
                    "contents": [c for _, c in texts],
                },
            ).fetchall()
            tx.execute(
                """INSERT INTO memory_evidence (account_id, memory_id, source_type, source_id)
                          SELECT %s, id, 'bench', 'seed' FROM unnest(%s::uuid[]) AS id""",
                (account_id, [r["id"] for r in rows_in]),
            )
        failed = [
            r for r in projection.index_entries(db, retrieval, account_id, rows_in) if r.status != "indexed"
        ]
        if failed:
            raise RuntimeError(f"indexing failed: {failed[0].error}")
        seeded += n
    with db.tenant(account_id) as tx:
        for table, body in (("todos", "description"), ("notes", "content")):
            facts = [memory_text(rng) for _ in range(args.facts)]
            tx.execute(
                f"""INSERT INTO {table} (account_id, user_id, title, {body})
                    SELECT %s, %s, t.title, t.body FROM unnest(%s::text[], %s::text[]) AS t (title, body)""",
                (account_id, user_id, [t for t, _ in facts], [c * 3 for _, c in facts]),
            )
    session = working_service.create_session(db, principal, SessionCreate(title="bench")).value
    items = [
        ItemIn(
            item_type="message",
            role="user" if i % 2 else "assistant",
            content=" ".join(memory_text(rng)[1] for _ in range(1 + i % 4)),
            idempotency_key=f"w{i}",
        )
        for i in range(min(args.working, 500))
    ]
    working_service.append_items(db, principal, session.id, ItemsAppend(items=items))
    session_id = str(session.id)
    for i in range(60):
        if i == 40:
            checkpoints.save_checkpoint(
                db,
                principal,
                CheckpointCreate(
                    session_id=session_id,
                    goal="ship the billing service",
                    done=["migrations"],
                    next=["deploy"],
                    open=["rollback plan"],
                    notes="staging green",
                ),
            )
        events.record_event(
            db,
            principal,
            EventCreate(
                event_type=rng.choice(["decision", "observation", "action", "outcome", "issue"]),
                idempotency_key=f"e{i}",
                session_id=session_id,
                payload={"text": memory_text(rng)[1]},
            ),
        )
    t_skills = time.perf_counter()
    for i in range(args.skills):
        title, text = memory_text(rng)
        skill_md = (
            f"---\nname: skill-{i:04d}\ndescription: {title}\ntriggers: [{title}]\n---\n\n"
            f"# Instructions\n\n{text}\n\n{memory_text(rng)[1]}\n"
        )
        source = registry.register_source(
            db,
            principal,
            SourceInput(
                name=f"skill-{i:04d}",
                type="local",
                repository_url="file:///bench/skills",
                package_path=f"skill-{i:04d}",
            ),
        ).source
        registry.push_snapshot(
            db,
            retrieval,
            principal,
            source.id,
            SkillSnapshotPush(
                files=[FileInput(path="SKILL.md", content=skill_md, mime_type="text/markdown")],
                activate=True,
                index=True,
            ),
        )
    skills_s = time.perf_counter() - t_skills
    t_knowledge = time.perf_counter()
    kb = {"chunks": 0, "documents": 0, "index_requests": 0}
    if args.knowledge:
        kb = common.seed_knowledge(
            db,
            retrieval,
            principal,
            chunks=args.knowledge,
            paragraph=lambda: " ".join(memory_text(rng)[1] for _ in range(2)),
        )
    knowledge_s = time.perf_counter() - t_knowledge
    with psycopg.connect(db_info.owner_url, autocommit=True) as owner:
        owner.execute("VACUUM (ANALYZE)")
    index = retrieval.vector_index()
    if isinstance(index, EmbeddedIndex):
        index.wait_optimized()
    seed_s = time.perf_counter() - t_seed
    if args.keep:
        print(
            f"... database kept: {db_info.owner_url} (account {account_id}, session {session_id})", flush=True
        )
    print(
        f"... seeded in {seed_s:.1f}s ({args.skills} skills: {skills_s:.1f}s; {kb['chunks']} knowledge chunks in "
        f"{kb['documents']} documents, {kb['index_requests']} index requests: {knowledge_s:.1f}s)",
        flush=True,
    )

    # ---- the variants ---------------------------------------------------------------------------------------------
    qrng = random.Random(11)
    queries = [
        rng.choice(SUBJECTS) if qrng.random() < 0.5 else query_text(qrng) for _ in range(max(packs, 100))
    ]

    def body(i: int) -> dict[str, Any]:
        q = queries[i % len(queries)]
        return {
            "task": f"Work on: {q}",
            "query": q,
            "session_id": session_id,
            "layers": LAYERS,
            "render": True,
        }

    database_url = get_database_settings().resolved_database_url()

    def use_pool(size: int) -> None:
        core_db._databases[database_url] = pools[size]

    use_pool(1)

    def pack_via_handler(i: int) -> tuple[float, float]:
        timing.total_ms = 0.0
        t0 = time.perf_counter_ns()
        out = call(context_handler, "POST", "/api/context/pack", headers=headers, json_body=body(i))
        total = (time.perf_counter_ns() - t0) / 1e6
        if not out["layers"][4]["items"] or not out["layers"][5]["items"]:
            raise RuntimeError("WORKING or TASK came back empty: the bench data is wrong")
        if args.skills and not out["layers"][0]["items"]:
            raise RuntimeError(f"SKILL came back empty: {out['layers'][0]['note']}")
        if args.knowledge and not out["layers"][1]["items"]:
            raise RuntimeError(f"KNOWLEDGE came back empty: {out['layers'][1]['note']}")
        return total, timing.total_ms

    with db.tenant(account_id) as tx:
        some_todo = tx.execute("SELECT id FROM todos LIMIT 1").fetchone()["id"]  # type: ignore[index]
    conn = psycopg.connect(db_info.app_url, row_factory=dict_row, prepare_threshold=None)

    def baseline(_: int) -> tuple[float, float]:
        t0 = time.perf_counter_ns()
        with conn.transaction():
            conn.execute("SELECT set_config('app.account_id', %s, true)", (str(account_id),))
            conn.execute(
                "SELECT * FROM todos WHERE account_id = %s AND id = %s", (account_id, some_todo)
            ).fetchone()
        return (time.perf_counter_ns() - t0) / 1e6, 0.0

    variants: list[tuple[str, bool, int]] = [
        ("serial providers, pool 1 (Lambda today)", False, 1),
        ("parallel providers, pool 1", True, 1),
        (f"parallel providers, pool {PARALLEL_POOL}", True, PARALLEL_POOL),
    ]

    def run(name: str, parallel: bool, pool: int, i: int) -> tuple[float, float]:
        context_service.PARALLEL = parallel
        use_pool(pool)
        return pack_via_handler(i)

    for i in range(args.warmup):
        baseline(i)
        for name, parallel, pool in variants:
            run(name, parallel, pool, i)
    samples: dict[str, list[tuple[float, float]]] = {"baseline": [], **{v[0]: [] for v in variants}}
    block = 20
    i = 0
    while i < packs:
        for k in range(block):
            samples["baseline"].append(baseline(i + k))
        for name, parallel, pool in variants:
            for k in range(block):
                samples[name].append(run(name, parallel, pool, i + k))
        i += block
    context_service.PARALLEL = False
    conn.close()
    peak = pools[PARALLEL_POOL].pool.get_stats()

    # Where the time goes: the same packs, serial on one connection, every step timed.
    context_service.PARALLEL = False
    use_pool(1)
    breakdown_rows = breakdown(lambda j: pack_via_handler(j), packs, timing)
    context_service.PARALLEL = False

    # Round trips (client waits on Postgres, from libpq's trace): the whole request serially, and each layer in
    # a transaction of its own, as the providers run on threads.
    handler_trips, _ = common.count_round_trips(db, lambda: pack_via_handler(0))
    req0 = PackRequest.model_validate(body(0))
    shares0 = context_service.budgets(req0.max_chars, LAYERS)
    own_trips = {
        name: common.count_round_trips(
            db, lambda name=name: context_service._run(db, retrieval, principal, req0, name, shares0[name])
        )[0]
        for name in LAYERS
    }  # type: ignore[misc]

    base = summary([t for t, _ in samples["baseline"]])
    rows = [
        [
            "psycopg: tenant SELECT by id (baseline)",
            base["n"],
            f"{base['p50']:.2f}",
            f"{base['p95']:.2f}",
            "",
            "",
            "1.0x",
        ]
    ]
    results = {}
    for name, _, _ in variants:
        tot = summary([t for t, _ in samples[name]])
        exc = summary([t - e for t, e in samples[name]])
        results[name] = exc
        rows.append(
            [
                f"POST /api/context/pack: {name}",
                tot["n"],
                f"{tot['p50']:.2f}",
                f"{tot['p95']:.2f}",
                f"{exc['p50']:.2f}",
                f"{exc['p95']:.2f}",
                f"{exc['p50'] / base['p50']:.1f}x",
            ]
        )
    serial = results[variants[0][0]]
    print_table(
        "Context pack through the context Lambda handler (all six layers requested, max_chars 12000, top_k 5)",
        [
            "variant",
            "packs",
            "p50 ms",
            "p95 ms",
            "p50 excl. embedding",
            "p95 excl. embedding",
            "p50 excl. emb. vs baseline",
        ],
        rows,
        notes=[
            f"Data: {args.memories:,} memories, {args.skills:,} active indexed skills, {args.facts:,} todos + "
            f"{args.facts:,} notes, a {len(items)}-item working session, a 60-event journal with a checkpoint; "
            f"{kb['chunks']:,} knowledge chunks in {kb['documents']} documents of one indexed source. SKILL (top "
            "search hit), KNOWLEDGE and MEMORY each embed the query; the embeddings are excluded.",
            f"Goal p95 ≤ {GOAL_P95_MS:.0f} ms excluding embedding (serial, pool 1): "
            f"{'met' if serial['p95'] <= GOAL_P95_MS else 'NOT met'} ({serial['p95']:.2f} ms).",
            f"Pool of the parallel variant after the run: {peak.get('pool_size')} connections opened "
            f"(max {peak.get('pool_max')}), {peak.get('requests_waiting', 0)} requests waiting.",
            f"Round trips to Postgres: {handler_trips} per serial request (API-key check included, every layer "
            f"in one transaction); each layer in a transaction of its own, as on threads: "
            + ", ".join(f"{n} {t}" for n, t in own_trips.items())
            + f" = {sum(own_trips.values())}, the longest chain {max(own_trips.values())}.",
        ],
    )
    print_table(
        "Where a pack's time goes: serial, pool 1, through the handler (ms per pack; embedding excluded)",
        ["step", "p50", "p95", "mean"],
        breakdown_rows,
        notes=[
            "Each layer's row is its provider (scope check included); its indented rows are the steps "
            "inside it, and 'rest' is the provider minus those steps (transactions: BEGIN, the tenant "
            "setting, COMMIT; Python). The vector index search runs on the retrieval thread beside "
            "the lexical leg, so it overlaps it. CPU rows are CPU time, not wall time: they do not grow "
            "with waiting for a loaded machine's cores or for Postgres. 'handler rest' is the handler "
            "minus the pack service "
            "and the API-key check: event decoding, routing, request validation, thread hand-offs and "
            "response serialization (the latter also shown on its own)."
        ],
    )
    print(
        f"Command: {COMMAND} --packs {packs} --memories {args.memories} --facts {args.facts} "
        f"--working {args.working} --skills {args.skills} --knowledge {args.knowledge}"
    )
    print(f"Load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}.")
    print(
        f"Machine: {machine()}. Seeding {seed_s:.0f} s; total run time {time.perf_counter() - started:.0f} s."
    )
    for pool_db in pools.values():
        pool_db.close()
    retrieval.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
