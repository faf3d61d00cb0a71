"""Issue 26 §4: the memory store (and search) side by side with mem0, in one run.

    .venv/bin/python bench/peer_mem0.py [--users 10000,1000] [--searches 200] [--inprocess 500]

- **Embeddings**: one deterministic 384-d hashing embedder (``agentmate.retrieval.embedders.HashingEmbedder``)
  served on loopback over the OpenAI embeddings protocol (``POST /v1/embeddings``) by a subprocess of its own;
  both sides embed through it (mem0's ``openai`` embedder, Agentmate's ``EMBEDDING_BASE_URL``).
- **mem0**: mem0ai 2.2.1 in its own virtualenv (``$MEM0_VENV``, default /work/.mem0-venv; created and
  installed by this script when missing, and it says so; never a project dependency). ``Memory`` with the
  ``qdrant`` vector store in local mode on disk (``path`` + ``on_disk``) and a SQLite history; stores with
  ``add(text, user_id=..., infer=False)`` (no LLM), searches with ``search(q, filters={"user_id": ...}, top_k=10)``.
  Timed **in-process** (``perf_counter_ns`` around each call) in a subprocess running that virtualenv.
- **Agentmate**: the local runtime (uvicorn running ``infra.local_app:build_local_app``, what ``python -m
  infra.devserver`` serves) over HTTP on loopback, Postgres in a cluster of its own (.local/bench-mem0-pg, port
  ``$AGENTMATE_MEM0_BENCH_PG_PORT``, default 26441), the embedded vector index on disk (``VECTOR_PATH``).
  ``POST /api/memory/entries`` (scope ``agent``/``user-a``, one evidence item) and ``POST /api/memory/search``
  (filtered by the same scope, ``top_k`` 10), timed by the client (``perf_counter_ns`` around each request on
  one keep-alive connection): this includes HTTP, uvicorn and JSON on both ends, which mem0's figure does not.
  Then ``--inprocess`` more stores through the memory Lambda handler in this process (Mangum event, no socket),
  so the HTTP cost is visible.

The same texts, in the same order, go to both sides: ``--users`` memories per user (the first user's are
searched), then ``--searches`` queries filtered to the first user. Nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import fcntl
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import ROOT, free_port, machine, prepare_database, print_table, ratio, summary

COMMAND = ".venv/bin/python bench/peer_mem0.py"
MEM0_VERSION = "2.2.1"
MEM0_VENV = Path(os.environ.get("MEM0_VENV", "/work/.mem0-venv"))
DIMENSIONS = 384
TOP_K = 10
PG_DIR = ROOT / ".local" / "bench-mem0-pg"
SERVER_LOG = ROOT / ".local" / "bench-mem0-server.log"  # the servers' output (uvicorn, the embedding server)
PG_PORT = int(os.environ.get("AGENTMATE_MEM0_BENCH_PG_PORT", "26441"))

SUBJECTS = (
    "billing service", "deploy pipeline", "staging cluster", "payment gateway", "search index", "auth module",
    "mobile app", "data warehouse", "cron scheduler", "email worker", "feature flag", "rate limiter",
    "cache layer", "ingest job", "report generator", "api gateway", "load balancer", "message queue",
)  # fmt: skip
FACTS = (
    "prefers blue-green deploys", "fails when the token expires", "runs nightly at two",
    "needs the VPN for access", "was migrated to arm64 last week", "logs to the audit bucket",
    "is owned by the platform team", "retries three times with backoff", "reads its config from SSM",
    "must stay under 200 ms p95", "uses Postgres 16 with RLS", "pages the on-call after 5 errors",
)  # fmt: skip


def corpus(users: list[int], searches: int, seed: int = 26) -> dict[str, Any]:
    rnd = random.Random(seed)
    texts = []
    for u, n in enumerate(users):
        texts.append(
            [
                f"The {rnd.choice(SUBJECTS)} {rnd.choice(FACTS)} (note {u}-{i}, ticket {rnd.randrange(10**6)})"
                for i in range(n)
            ]
        )
    queries = [f"{rnd.choice(SUBJECTS)} {rnd.choice(FACTS).split()[-2]}" for _ in range(searches)]
    return {"users": [f"user-{chr(97 + u)}" for u in range(len(users))], "texts": texts, "queries": queries}


# --- the embedding server (a subprocess: it must not share this process's GIL with what is timed) ------------


def serve_embeddings(port: int) -> None:
    """The tests' loopback embeddings server (``tests/fakes/embeddings_provider.py``, no delay) answering a
    hashing embedder's vectors, until this process is stopped."""
    sys.path.insert(0, str(ROOT / "shared"))
    sys.path.insert(0, str(ROOT))
    from agentmate.retrieval.embedders import HashingEmbedder
    from tests.fakes.embeddings_provider import SlowEmbeddings

    embedder = HashingEmbedder(DIMENSIONS)
    with SlowEmbeddings(delay_s=0, vectors=lambda texts, _dims: embedder.embed(texts), port=port):
        print("ready", flush=True)
        threading.Event().wait()


# --- mem0, in its own virtualenv -----------------------------------------------------------------------------

MEM0_SCRIPT = r"""
import json, os, sys, time
os.environ["MEM0_TELEMETRY"] = "False"
from mem0 import Memory
args = json.load(open(sys.argv[1]))
work = args["work"]
memory = Memory.from_config({
    "vector_store": {"provider": "qdrant", "config": {
        "collection_name": "bench", "path": work + "/qdrant", "on_disk": True,
        "embedding_model_dims": args["dims"]}},
    "embedder": {"provider": "openai", "config": {
        "model": "hashing", "embedding_dims": args["dims"], "api_key": "bench",
        "openai_base_url": args["base_url"]}},
    "llm": {"provider": "openai", "config": {"api_key": "bench", "openai_base_url": args["base_url"]}},
    "history_db_path": work + "/history.db",
})
add = []
for user, texts in zip(args["users"], args["texts"]):
    for text in texts:
        t0 = time.perf_counter_ns()
        memory.add(text, user_id=user, infer=False)
        add.append((time.perf_counter_ns() - t0) / 1e6)
search, hits = [], 0
for q in args["queries"]:
    t0 = time.perf_counter_ns()
    r = memory.search(q, filters={"user_id": args["users"][0]}, top_k=args["top_k"])
    search.append((time.perf_counter_ns() - t0) / 1e6)
    hits += len(r["results"] if isinstance(r, dict) else r)
json.dump({"add": add, "search": search, "hits": hits}, open(args["out"], "w"))
"""


def ensure_mem0() -> Path:
    python = MEM0_VENV / "bin" / "python"
    probe = [
        str(python),
        "-c",
        f"import mem0, importlib.metadata as m; assert m.version('mem0ai') == '{MEM0_VERSION}'",
    ]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(
        f"mem0ai {MEM0_VERSION} not found: creating {MEM0_VENV} and installing it (a few minutes)", flush=True
    )
    subprocess.run([sys.executable, "-m", "venv", str(MEM0_VENV)], check=True)
    subprocess.run([str(MEM0_VENV / "bin" / "pip"), "install", "-q", f"mem0ai=={MEM0_VERSION}"], check=True)
    return python


def run_mem0(python: Path, base_url: str, data: dict[str, Any], work: Path) -> dict[str, Any]:
    args = {**data, "work": str(work), "dims": DIMENSIONS, "base_url": base_url, "top_k": TOP_K}
    args["out"] = str(work / "mem0-out.json")
    (work / "mem0-in.json").write_text(json.dumps(args))
    (work / "mem0_bench.py").write_text(MEM0_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "OPENAI"))}
    subprocess.run(
        [str(python), str(work / "mem0_bench.py"), str(work / "mem0-in.json")], check=True, env=env
    )
    out: dict[str, Any] = json.loads((work / "mem0-out.json").read_text())
    return out


# --- Agentmate over HTTP -------------------------------------------------------------------------------------


class Client:
    """One keep-alive connection to the local server."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None) -> Any:
        payload = json.dumps(body) if body is not None else None
        self.conn.request(
            method, path, body=payload, headers={"Content-Type": "application/json", **(headers or {})}
        )
        r = self.conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError(
                f"{method} {path}: {r.status} {data[:500]!r} (logs: {SERVER_LOG}, {PG_DIR / 'server.log'})"
            )
        return json.loads(data) if data else None


def start_process(cmd: list[str], env: dict[str, str], ready: Any) -> subprocess.Popen[bytes]:
    log = open(SERVER_LOG, "ab")  # the child writes to it until it exits
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=log)
    deadline = time.monotonic() + 120
    while not ready():
        if proc.poll() is not None:
            raise RuntimeError(f"{cmd[:4]} exited: see {SERVER_LOG}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{cmd[:4]} did not start")
        time.sleep(0.1)
    return proc


def _answers(port: int, path: str) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        conn.request("GET", path)
        conn.getresponse().read()
        conn.close()
        return True
    except OSError:
        return False


def entry_body(user: str, text: str, i: int) -> dict[str, Any]:
    return {
        "memory_type": "semantic",
        "content": text,
        "scope_type": "agent",
        "scope_key": user,
        "evidence": [{"source_type": "bench", "source_id": f"{user}-{i}", "excerpt": ""}],
    }


def tenant(client: Client, scopes: list[str]) -> str:
    creds = {"email": f"bench-{time.time_ns()}@example.com", "password": "correct horse battery"}
    client.call("POST", "/api/auth/register", creds)
    token = client.call("POST", "/api/auth/login", creds)["token"]
    key: str = client.call(
        "POST",
        "/api/auth/apikeys",
        {"name": "bench", "scopes": scopes},
        {"Authorization": f"Bearer {token}"},
    )["key"]
    return key


def run_agentmate(port: int, data: dict[str, Any]) -> tuple[dict[str, Any], str]:
    client = Client(port)
    key = tenant(client, ["memory:rw"])
    headers = {"Authorization": f"Bearer {key}"}
    add: list[float] = []
    for user, texts in zip(data["users"], data["texts"], strict=True):
        for i, text in enumerate(texts):
            body = entry_body(user, text, i)
            t0 = time.perf_counter_ns()
            created = client.call("POST", "/api/memory/entries", body, headers)
            add.append((time.perf_counter_ns() - t0) / 1e6)
            if created["indexing"]["status"] != "indexed":
                raise RuntimeError(f"store not indexed: {created['indexing']}")
    search: list[float] = []
    hits = 0
    for q in data["queries"]:
        body = {"query": q, "top_k": TOP_K, "scope_type": "agent", "scope_key": data["users"][0]}
        t0 = time.perf_counter_ns()
        result = client.call("POST", "/api/memory/search", body, headers)
        search.append((time.perf_counter_ns() - t0) / 1e6)
        hits += len(result["items"])
        if result["degraded"]:
            raise RuntimeError(f"search degraded: {result['degraded']}")
    return {"add": add, "search": search, "hits": hits}, key


def run_inprocess(key: str, n: int) -> list[float]:
    """``n`` stores through the memory Lambda handler in this process (same database, same embedding server)."""
    from functions.memory.app import handler
    from tests.apigw import LambdaContext, http_event, parse_response

    out: list[float] = []
    for i in range(n + 20):
        body = entry_body(
            "user-inprocess", f"In-process store {i}: the cache layer {FACTS[i % len(FACTS)]}", i
        )
        event = http_event(
            "POST", "/api/memory/entries", json_body=body, headers={"Authorization": f"Bearer {key}"}
        )
        t0 = time.perf_counter_ns()
        r = parse_response(handler(event, LambdaContext()))
        ms = (time.perf_counter_ns() - t0) / 1e6
        if r.status_code != 201:
            raise RuntimeError(f"in-process store: {r.status_code} {r.body}")
        if i >= 20:  # the first calls build the app and the pools
            out.append(ms)
    return out


def round_trips(key: str) -> tuple[int, list[str]]:
    """The Postgres round trips of one new store through the in-process handler (libpq's trace; pool of one)."""
    from common import count_round_trips

    from agentmate.core.db import get_database
    from functions.memory.app import handler
    from tests.apigw import LambdaContext, http_event

    body = entry_body("user-trips", "Round trips: the audit log is kept for 400 days", 0)
    event = http_event(
        "POST", "/api/memory/entries", json_body=body, headers={"Authorization": f"Bearer {key}"}
    )
    return count_round_trips(get_database(), lambda: handler(event, LambdaContext()))


def exclusive_cluster(port: int) -> Any:
    """Hold the bench cluster's port for this run, or stop at once. Two runs sharing it broke the first 10k run:
    they share one database name, and the run that finished first dropped that database ``WITH (FORCE)`` and
    stopped the cluster it had started, so the other run's next store lost its connection (Postgres: "terminating
    connection due to administrator command", a correct 503 "the database is unavailable for a moment")."""
    lock = open(ROOT / ".local" / f"bench-mem0-{port}.lock", "a")  # held (and closed) when this process exits
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(
            f"another bench/peer_mem0.py run uses port {port}: wait for it, or set AGENTMATE_MEM0_BENCH_PG_PORT"
        )
    return lock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--users", default="10000,1000", help="memories per user (the first user is searched)"
    )
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument(
        "--inprocess", type=int, default=500, help="extra stores through the in-process handler"
    )
    parser.add_argument("--statements", action="store_true", help="list the statements of one store")
    parser.add_argument("--serve-embeddings", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_embeddings:
        serve_embeddings(args.serve_embeddings)
        return 0
    users = [int(n) for n in args.users.split(",")]
    (ROOT / ".local").mkdir(exist_ok=True)
    held = exclusive_cluster(PG_PORT)  # noqa: F841 - kept until exit
    data = corpus(users, args.searches)
    python = ensure_mem0()

    emb_port = free_port()
    base_url = f"http://127.0.0.1:{emb_port}/v1"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        procs.append(
            start_process(
                [sys.executable, __file__, "--serve-embeddings", str(emb_port)],
                dict(os.environ),
                lambda: _answers(emb_port, "/"),
            )
        )
        with tempfile.TemporaryDirectory(prefix="peer-mem0-") as tmp:
            work = Path(tmp)
            print(f"mem0 {MEM0_VERSION}: {sum(users)} adds, {args.searches} searches ...", flush=True)
            mem0 = run_mem0(python, base_url, data, work)

            prepare_database("agentmate_bench_mem0", pg_dir=PG_DIR, pg_port=PG_PORT)
            os.environ.update(
                {
                    "EMBEDDING_BASE_URL": base_url,
                    "EMBEDDING_MODEL": "hashing",
                    "EMBEDDING_DIMENSIONS": str(DIMENSIONS),
                    "EMBEDDING_API_KEY": "bench",
                    "VECTOR_PATH": str(work / "agentmate-vectors"),
                    # the limiter still runs on every request; it just never refuses the bench's pace
                    "LIMIT_REQUESTS_PER_MINUTE": "1000000",
                    "LIMIT_REQUEST_BURST": "100000",
                }
            )
            env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
            port = free_port()
            cmd = [sys.executable, "-m", "uvicorn", "infra.local_app:build_local_app", "--factory"]
            cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
            procs.append(start_process(cmd, env, lambda: _answers(port, "/api/health")))
            print(f"Agentmate: {sum(users)} stores, {args.searches} searches over HTTP ...", flush=True)
            ours, key = run_agentmate(port, data)
            procs[-1].terminate()
            procs[-1].wait()
            # The vector index on disk belongs to one process at a time: the in-process run opens it after the
            # server has gone.
            os.environ["DB_POOL_MAX_SIZE"] = (
                "1"  # as in Lambda; count_round_trips traces the pool's one connection
            )
            inproc = run_inprocess(key, args.inprocess) if args.inprocess else []
            trips = round_trips(key)
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                p.wait()
    report(users, args.searches, mem0, ours, inproc)
    print(f"Postgres round trips per new store (in-process handler, libpq trace): {trips[0]}")
    if args.statements:
        print("\n".join(f"  {s}" for s in trips[1]))
    return 0


def report(
    users: list[int], searches: int, mem0: dict[str, Any], ours: dict[str, Any], inproc: list[float]
) -> None:
    m_add, a_add = summary(mem0["add"]), summary(ours["add"])
    m_s, a_s = summary(mem0["search"]), summary(ours["search"])
    rows: list[list[Any]] = [
        ["store: mem0 add(infer=False), in-process", m_add["n"], m_add["p50"], m_add["p95"], "1.00x"],
        ["store: Agentmate POST /api/memory/entries, HTTP", a_add["n"], a_add["p50"], a_add["p95"],
         ratio(a_add["p50"], m_add["p50"])],
    ]  # fmt: skip
    if inproc:
        i_add = summary(inproc)
        rows.append(
            ["store: Agentmate handler, in-process", i_add["n"], i_add["p50"], i_add["p95"],
             ratio(i_add["p50"], m_add["p50"])]
        )  # fmt: skip
    rows += [
        [f"search top_k {TOP_K}: mem0, in-process", m_s["n"], m_s["p50"], m_s["p95"], "1.00x"],
        [f"search top_k {TOP_K}: Agentmate, HTTP", a_s["n"], a_s["p50"], a_s["p95"], ratio(a_s["p50"], m_s["p50"])],
    ]  # fmt: skip
    print_table(
        f"Issue 26: store vs mem0 ({'+'.join(map(str, users))} memories, {searches} filtered searches)",
        ["operation", "n", "p50 ms", "p95 ms", "p50 vs mem0"],
        rows,
        notes=[
            f"Command: `{COMMAND} --users {','.join(map(str, users))} --searches {searches}`. Machine: {machine()}.",
            f"Hits returned: mem0 {mem0['hits']}, Agentmate {ours['hits']}. Both embed through one 384-d hashing "
            "embedder on loopback (a subprocess, OpenAI protocol); mem0 timed in-process, Agentmate by its HTTP "
            "client (one keep-alive connection to uvicorn running infra.local_app).",
        ],
    )


if __name__ == "__main__":
    sys.exit(main())
