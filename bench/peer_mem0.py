"""Issue 26 §4: the memory store (and search) side by side with mem0, in one run, the stores interleaved.

    .venv/bin/python bench/peer_mem0.py [--users 10000,1000] [--searches 200] [--inprocess 500] [--block 20]
                                        [--pg durable|fast] [--statements]

- **Embeddings**: one deterministic 384-d hashing embedder (``agentmate.retrieval.embedders.HashingEmbedder``)
  served on loopback over the OpenAI embeddings protocol (``POST /v1/embeddings``) by a subprocess of its own;
  both sides embed through it (mem0's ``openai`` embedder, Agentmate's ``EMBEDDING_BASE_URL``).
- **mem0**: mem0ai 2.2.1 in its own virtualenv (``$MEM0_VENV``, default /work/.mem0-venv; created and
  installed by this script when missing, and it says so; never a project dependency). ``Memory`` with the
  ``qdrant`` vector store in local mode on disk (``path`` + ``on_disk``) and a SQLite history; stores with
  ``add(text, user_id=..., infer=False)`` (no LLM), searches with ``search(q, filters={"user_id": ...}, top_k=10)``.
  One long-lived subprocess running that virtualenv, driven over a line protocol (one JSON command a line on its
  stdin, one JSON answer a line on its stdout); each call is timed **inside mem0's process** (``perf_counter_ns``
  around the call), so the protocol is not in its figure.
- **Agentmate**: the local runtime (uvicorn running ``infra.local_app:build_local_app``, what ``python -m
  infra.devserver`` serves) over HTTP on loopback, Postgres in a cluster of its own (.local/bench-mem0-pg, port
  ``$AGENTMATE_MEM0_BENCH_PG_PORT``, default 26441) and, by default, as durable as the devserver's (fsync,
  synchronous commit and full-page writes on, ``--pg durable``: mem0's two SQLite files commit durably too;
  ``--pg fast`` turns all three off, the tests' and the other benches' setting), the embedded vector index on disk
  (``VECTOR_PATH``).
  ``POST /api/memory/entries`` (scope ``agent``/``user-a``, one evidence item) and ``POST /api/memory/search``
  (filtered by the same scope, ``top_k`` 10), timed by the client (``perf_counter_ns`` around each request on
  one keep-alive connection): this includes HTTP, uvicorn and JSON on both ends, which mem0's figure does not.
  And ``--inprocess`` stores through the memory Lambda handler in this process (Mangum event, no socket), so the
  HTTP cost is visible: same database and API key, its own embedded index (``VECTOR_PATH``; an index directory
  belongs to one process at a time), scopes of their own (``user-a-inproc``, ...: no dedupe against the HTTP
  side's entries), a pool of one connection as in Lambda; and as many through the store's use case called as a
  library (``memory.service.create_entry`` with the key's principal: no HTTP, no Lambda event, no authentication per
  call), the closest equivalent of mem0's ``add``.

**Interleaved**: the machine's load changes within a run, so the stores alternate in rounds of ``--block`` calls:
mem0's adds, Agentmate's HTTP stores and (in ``--inprocess``/``--block`` of the rounds, spread evenly) the
in-process handler's, each side storing the round's same texts in the same corpus order, the order of the sides
rotated every round. Every side first stores ``--block`` warm-up texts (not timed, a scope of their own). Besides
p50/p95 over all stores, the table gives a **paired block ratio**: per round, Agentmate's block p50 over the same
round's mem0 block p50, its median (and quartiles) over the rounds. Searches follow the stores, each side's in a
block of its own. The same texts, in the same order, go to both sides: ``--users`` memories per user (the first
user's are searched), then ``--searches`` queries filtered to the first user. Nothing here asserts a timing.
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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import ROOT, free_port, machine, percentile, prepare_database, print_table, ratio, summary

COMMAND = ".venv/bin/python bench/peer_mem0.py"
MEM0_VERSION = "2.2.1"
MEM0_VENV = Path(os.environ.get("MEM0_VENV", "/work/.mem0-venv"))
DIMENSIONS = 384
TOP_K = 10
PG_DIR = ROOT / ".local" / "bench-mem0-pg"
SERVER_LOG = ROOT / ".local" / "bench-mem0-server.log"  # the servers' output (uvicorn, the embedding server)
PG_PORT = int(os.environ.get("AGENTMATE_MEM0_BENCH_PG_PORT", "26441"))
SIDES = ("mem0", "http", "inproc", "service")
IN_PROCESS = ("inproc", "service")  # the sides that store ``--inprocess`` texts, not the whole corpus

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


@dataclass(frozen=True)
class Store:
    """One store of the corpus: the user (scope key), the text and its index within that user's texts."""

    user: str
    text: str
    i: int


def stores_of(data: dict[str, Any]) -> list[Store]:
    return [
        Store(user, text, i)
        for user, texts in zip(data["users"], data["texts"], strict=True)
        for i, text in enumerate(texts)
    ]


def warm_up_stores(n: int) -> list[Store]:
    return [
        Store("warm-up", f"Warm-up store {i}: the cache layer {FACTS[i % len(FACTS)]}", i) for i in range(n)
    ]


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


# --- mem0, in its own virtualenv, driven over a line protocol --------------------------------------------------

# stdin: {"op": "add", "text": ..., "user": ...} | {"op": "search", "query": ..., "user": ...} | {"op": "quit"}
# stdout: {"ready": true} once, then per command {"ns": <the call's time>} (+ "hits" for a search) or {"error": ...}.
# Whatever mem0 or its libraries print goes to stderr: the protocol has the original stdout to itself.
MEM0_SCRIPT = r"""
import json, os, sys, time
os.environ["MEM0_TELEMETRY"] = "False"
proto = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
sys.stdout = sys.stderr
from mem0 import Memory
args = json.loads(sys.argv[1])
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

def answer(obj):
    proto.write(json.dumps(obj) + "\n")
    proto.flush()

answer({"ready": True})
for line in sys.stdin:
    cmd = json.loads(line)
    try:
        if cmd["op"] == "add":
            t0 = time.perf_counter_ns()
            memory.add(cmd["text"], user_id=cmd["user"], infer=False)
            answer({"ns": time.perf_counter_ns() - t0})
        elif cmd["op"] == "search":
            t0 = time.perf_counter_ns()
            r = memory.search(cmd["query"], filters={"user_id": cmd["user"]}, top_k=args["top_k"])
            ns = time.perf_counter_ns() - t0
            answer({"ns": ns, "hits": len(r["results"] if isinstance(r, dict) else r)})
        elif cmd["op"] == "quit":
            break
        else:
            answer({"error": "unknown op " + repr(cmd["op"])})
    except Exception as e:
        answer({"error": type(e).__name__ + ": " + str(e)[:500]})
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


class Mem0:
    """mem0 in a subprocess of its own virtualenv, alive for the whole run; each call's time is mem0's own."""

    def __init__(self, python: Path, base_url: str, work: Path) -> None:
        args = {"work": str(work), "dims": DIMENSIONS, "base_url": base_url, "top_k": TOP_K}
        (work / "mem0_bench.py").write_text(MEM0_SCRIPT)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "OPENAI"))}
        self.proc = subprocess.Popen(
            [str(python), str(work / "mem0_bench.py"), json.dumps(args)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._read()  # {"ready": true}: mem0 imported and its Memory built

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the mem0 subprocess exited ({self.proc.wait()}); its stderr is above")
        out: dict[str, Any] = json.loads(line)
        if "error" in out:
            raise RuntimeError(f"mem0: {out['error']}")
        return out

    def call(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def store(self, s: Store) -> float:
        return float(self.call(op="add", text=s.text, user=s.user)["ns"]) / 1e6

    def search(self, query: str, user: str) -> tuple[float, int]:
        out = self.call(op="search", query=query, user=user)
        return out["ns"] / 1e6, int(out["hits"])

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call(op="quit")
            except (OSError, RuntimeError):
                pass  # it answers nothing to "quit": _read sees the end of its output
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


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


class Http:
    """Agentmate's local runtime over HTTP: one keep-alive connection, one tenant with a ``memory:rw`` key."""

    def __init__(self, port: int) -> None:
        self.client = Client(port)
        self.key = tenant(self.client, ["memory:rw"])
        self.headers = {"Authorization": f"Bearer {self.key}"}

    def store(self, s: Store) -> float:
        body = entry_body(s.user, s.text, s.i)
        t0 = time.perf_counter_ns()
        created = self.client.call("POST", "/api/memory/entries", body, self.headers)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if created["indexing"]["status"] != "indexed":
            raise RuntimeError(f"store not indexed: {created['indexing']}")
        return ms

    def search(self, query: str, user: str) -> tuple[float, int]:
        body = {"query": query, "top_k": TOP_K, "scope_type": "agent", "scope_key": user}
        t0 = time.perf_counter_ns()
        result = self.client.call("POST", "/api/memory/search", body, self.headers)
        ms = (time.perf_counter_ns() - t0) / 1e6
        if result["degraded"]:
            raise RuntimeError(f"search degraded: {result['degraded']}")
        return ms, len(result["items"])


class InProcess:
    """The memory Lambda handler in this process (same database, same key, same embedding server). Its scopes are
    the corpus's with ``-inproc`` appended, so its entries never meet the HTTP side's (dedupe, near twins)."""

    def __init__(self, key: str) -> None:
        from functions.memory.app import handler

        self.handler = handler
        self.headers = {"Authorization": f"Bearer {key}"}

    def store(self, s: Store) -> float:
        from tests.apigw import LambdaContext, http_event, parse_response

        body = entry_body(f"{s.user}-inproc", s.text, s.i)
        event = http_event("POST", "/api/memory/entries", json_body=body, headers=self.headers)
        t0 = time.perf_counter_ns()
        r = parse_response(self.handler(event, LambdaContext()))
        ms = (time.perf_counter_ns() - t0) / 1e6
        if r.status_code != 201 or r.json()["indexing"]["status"] != "indexed":
            raise RuntimeError(f"in-process store: {r.status_code} {r.body[:500]}")
        return ms


class Service:
    """The store's use case called as a library, as mem0's ``add`` is: ``memory.service.create_entry`` with the
    key's principal, no HTTP, no Lambda event, no authentication per call (same database and embedded index as
    ``InProcess``; its scopes end in ``-service``)."""

    def __init__(self, key: str) -> None:
        from agentmate.auth import credentials
        from agentmate.auth.settings import get_auth_settings
        from agentmate.core.db import get_database
        from agentmate.retrieval.service import get_retrieval

        self.db, self.retrieval = get_database(), get_retrieval()
        self.principal = credentials.authenticate(
            self.db, get_auth_settings(), api_key=None, bearer=key, resource=None
        )

    def store(self, s: Store) -> float:
        from agentmate.memory.schemas import EntryCreate
        from agentmate.memory.service.entries import create_entry

        body = EntryCreate.model_validate(entry_body(f"{s.user}-service", s.text, s.i))
        t0 = time.perf_counter_ns()
        created = create_entry(self.db, self.retrieval, self.principal, body).value
        ms = (time.perf_counter_ns() - t0) / 1e6
        if created.indexing is None or created.indexing.status != "indexed":
            raise RuntimeError(f"service store: {created.indexing}")
        return ms


# --- the interleaved stores --------------------------------------------------------------------------------


@dataclass
class Rounds:
    """Per round, each side's store times (ms) for that round's block; ``inproc`` only in its rounds."""

    blocks: list[dict[str, list[float]]] = field(default_factory=list)

    def times(self, side: str) -> list[float]:
        return [ms for block in self.blocks for ms in block.get(side, [])]

    def paired(self, side: str) -> list[float]:
        """Per round with both: ``side``'s block p50 over the same round's mem0 block p50."""
        return [
            percentile(b[side], 50) / percentile(b["mem0"], 50)
            for b in self.blocks
            if b.get(side) and b.get("mem0")
        ]


def inprocess_rounds(rounds: int, blocks: int) -> set[int]:
    """``blocks`` of the ``rounds`` rounds, spread evenly (the last round of each equal share)."""
    return {(k + 1) * rounds // blocks - 1 for k in range(blocks)} if blocks else set()


def interleave(
    stores: list[Store], sides: dict[str, Callable[[Store], float]], inprocess: int, block: int
) -> Rounds:
    """The corpus in rounds of ``block`` stores: every side but ``inproc`` stores each round's texts; ``inproc``
    stores them in ``ceil(inprocess / block)`` rounds spread evenly (its last block cut to make ``inprocess``).
    The order of the sides rotates every round, so none is always first after another's block."""
    n_rounds = -(-len(stores) // block)
    with_inproc = inprocess_rounds(n_rounds, -(-inprocess // block))
    left = dict.fromkeys(IN_PROCESS, inprocess)
    rounds = Rounds()
    for k in range(n_rounds):
        texts = stores[k * block : (k + 1) * block]
        order = [SIDES[(k + j) % len(SIDES)] for j in range(len(SIDES))]
        times: dict[str, list[float]] = {}
        for side in order:
            if side not in sides or (side in IN_PROCESS and k not in with_inproc):
                continue
            mine = texts[: left[side]] if side in IN_PROCESS else texts
            times[side] = [sides[side](s) for s in mine]
            if side in IN_PROCESS:
                left[side] -= len(mine)
        rounds.blocks.append(times)
        if k % 10 == 9:
            print(f"  round {k + 1}/{n_rounds}", flush=True)
    return rounds


def round_trips(key: str) -> tuple[int, list[str]]:
    """The Postgres round trips of one new store through the in-process handler (libpq's trace; pool of one)."""
    from agentmate.core.db import get_database
    from functions.memory.app import handler
    from tests.apigw import LambdaContext, http_event
    from tests.pgtrace import count_round_trips

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


# --- the run -------------------------------------------------------------------------------------------------


@contextmanager
def subprocess_stopped(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()


def start_database(durable: bool) -> str:
    """The bench cluster, durable (fsync, synchronous commit, full-page writes: as ``infra.devserver`` runs the
    local runtime, and as mem0's SQLite files commit) unless ``durable`` is false (the tests' fast settings); a
    fresh database in it. Returns the settings the server actually runs with (a cluster already up keeps its own)."""
    import atexit

    import psycopg

    from infra import localpg

    if localpg.start(PG_DIR, PG_PORT, durable=durable):
        # registered before prepare_database's drop, so it runs after it (atexit: last in, first out)
        atexit.register(localpg.stop, PG_DIR)
    db = prepare_database("agentmate_bench_mem0", pg_dir=PG_DIR, pg_port=PG_PORT)
    with psycopg.connect(db.owner_url) as conn:
        names = ("fsync", "synchronous_commit", "full_page_writes")
        values = [conn.execute(f"SHOW {n}").fetchone() for n in names]
    return ", ".join(f"{n}={v[0] if v else '?'}" for n, v in zip(names, values, strict=True))


def start_server(base_url: str, work: Path) -> tuple[subprocess.Popen[bytes], int]:
    """uvicorn serving the local runtime with its own index directory; afterwards this process's environment
    points the in-process handler at another (``VECTOR_PATH``) and a pool of one connection, as in Lambda."""
    os.environ.update(
        {
            "EMBEDDING_BASE_URL": base_url,
            "EMBEDDING_MODEL": "hashing",
            "EMBEDDING_DIMENSIONS": str(DIMENSIONS),
            "EMBEDDING_API_KEY": "bench",
            # the limiter still runs on every request; it just never refuses the bench's pace
            "LIMIT_REQUESTS_PER_MINUTE": "1000000",
            "LIMIT_REQUEST_BURST": "100000",
        }
    )
    env = {k: v for k, v in os.environ.items() if k != "AWS_LAMBDA_FUNCTION_NAME"}
    env["VECTOR_PATH"] = str(work / "agentmate-vectors-http")
    port = free_port()
    cmd = [sys.executable, "-m", "uvicorn", "infra.local_app:build_local_app", "--factory"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning", "--no-access-log"]
    # the client's one connection idles while the other sides run (mem0's 200 searches take a minute): uvicorn's
    # default 5 s keep-alive would close it under the client
    cmd += ["--timeout-keep-alive", "3600"]
    proc = start_process(cmd, env, lambda: _answers(port, "/api/health"))
    # set before this process first imports the memory function (its settings are read once)
    os.environ["VECTOR_PATH"] = str(work / "agentmate-vectors-inproc")
    os.environ["DB_POOL_MAX_SIZE"] = "1"  # as in Lambda; count_round_trips traces the pool's one connection
    return proc, port


def searches(side: Mem0 | Http, data: dict[str, Any]) -> dict[str, Any]:
    times, hits = [], 0
    for q in data["queries"]:
        ms, n = side.search(q, data["users"][0])
        times.append(ms)
        hits += n
    return {"search": times, "hits": hits}


@dataclass
class Results:
    rounds: Rounds
    mem0_search: dict[str, Any]
    http_search: dict[str, Any]
    trips: tuple[int, list[str]]
    load: tuple[tuple[float, ...], tuple[float, ...]]
    pg_settings: str


def run(args: argparse.Namespace, data: dict[str, Any], python: Path) -> Results:
    emb_port = free_port()
    base_url = f"http://127.0.0.1:{emb_port}/v1"
    embed_cmd = [sys.executable, __file__, "--serve-embeddings", str(emb_port)]
    with ExitStack() as stack:
        stack.enter_context(
            subprocess_stopped(start_process(embed_cmd, dict(os.environ), lambda: _answers(emb_port, "/")))
        )
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="peer-mem0-")))
        print(f"mem0 {MEM0_VERSION}: starting its subprocess ...", flush=True)
        mem0 = Mem0(python, base_url, work)
        stack.callback(mem0.close)
        pg_settings = start_database(durable=args.pg == "durable")
        server, port = start_server(base_url, work)
        stack.enter_context(subprocess_stopped(server))
        http = Http(port)
        sides: dict[str, Callable[[Store], float]] = {"mem0": mem0.store, "http": http.store}
        if args.inprocess:
            sides["inproc"] = InProcess(http.key).store
            sides["service"] = Service(http.key).store
        for store in sides.values():  # not timed: the first calls build apps, pools, collections
            for s in warm_up_stores(args.block):
                store(s)
        load_before = os.getloadavg()
        corpus_stores = stores_of(data)
        print(
            f"{len(corpus_stores)} stores per side in rounds of {args.block} "
            f"({args.inprocess} in-process), then {args.searches} searches per side ...",
            flush=True,
        )
        rounds = interleave(corpus_stores, sides, args.inprocess, args.block)
        load_after = os.getloadavg()
        mem0_search, http_search = searches(mem0, data), searches(http, data)
        trips = round_trips(http.key)
        if args.inprocess and not (work / "agentmate-vectors-inproc").exists():
            raise RuntimeError("the in-process handler did not use its own VECTOR_PATH")
    return Results(rounds, mem0_search, http_search, trips, (load_before, load_after), pg_settings)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--users", default="10000,1000", help="memories per user (the first user is searched)"
    )
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument(
        "--inprocess",
        type=int,
        default=500,
        help="stores through the in-process handler, and as many through the use case (0: none)",
    )
    parser.add_argument(
        "--pg",
        choices=("durable", "fast"),
        default="durable",
        help="Agentmate's Postgres: durable (fsync on, as the local runtime) or fast (the tests' fsync off)",
    )
    parser.add_argument("--block", type=int, default=20, help="stores per side and round")
    parser.add_argument("--statements", action="store_true", help="list the statements of one store")
    parser.add_argument("--serve-embeddings", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_embeddings:
        serve_embeddings(args.serve_embeddings)
        return 0
    users = [int(n) for n in args.users.split(",")]
    if args.block < 1:
        parser.error("--block: at least 1")
    if not 0 <= args.inprocess <= sum(users):
        parser.error(f"--inprocess: 0 to the number of stores ({sum(users)})")
    (ROOT / ".local").mkdir(exist_ok=True)
    held = exclusive_cluster(PG_PORT)  # noqa: F841 - kept until exit
    data = corpus(users, args.searches)
    results = run(args, data, ensure_mem0())
    report(args, users, results)
    print(f"Postgres round trips per new store (in-process handler, libpq trace): {results.trips[0]}")
    if args.statements:
        print("\n".join(f"  {s}" for s in results.trips[1]))
    return 0


def paired_cell(ratios: list[float]) -> str:
    if not ratios:
        return ""
    p25, p50, p75 = (percentile(ratios, p) for p in (25, 50, 75))
    return f"{p50:.2f}x ({p25:.2f}-{p75:.2f}, {len(ratios)} blocks)"


def report(args: argparse.Namespace, users: list[int], res: Results) -> None:
    rounds = res.rounds
    m_add, a_add = summary(rounds.times("mem0")), summary(rounds.times("http"))
    m_s, a_s = summary(res.mem0_search["search"]), summary(res.http_search["search"])
    rows: list[list[Any]] = [
        ["store: mem0 add(infer=False), in-process", m_add["n"], m_add["p50"], m_add["p95"], "1.00x", ""],
        ["store: Agentmate POST /api/memory/entries, HTTP", a_add["n"], a_add["p50"], a_add["p95"],
         ratio(a_add["p50"], m_add["p50"]), paired_cell(rounds.paired("http"))],
    ]  # fmt: skip
    if args.inprocess:
        i_add = summary(rounds.times("inproc"))
        rows.append(
            ["store: Agentmate handler, in-process", i_add["n"], i_add["p50"], i_add["p95"],
             ratio(i_add["p50"], m_add["p50"]), paired_cell(rounds.paired("inproc"))]
        )  # fmt: skip
        s_add = summary(rounds.times("service"))
        rows.append(
            ["store: Agentmate use case (create_entry), in-process", s_add["n"], s_add["p50"], s_add["p95"],
             ratio(s_add["p50"], m_add["p50"]), paired_cell(rounds.paired("service"))]
        )  # fmt: skip
    rows += [
        [f"search top_k {TOP_K}: mem0, in-process", m_s["n"], m_s["p50"], m_s["p95"], "1.00x", ""],
        [f"search top_k {TOP_K}: Agentmate, HTTP", a_s["n"], a_s["p50"], a_s["p95"], ratio(a_s["p50"], m_s["p50"]),
         ""],
    ]  # fmt: skip
    command = (
        f"{COMMAND} --users {','.join(map(str, users))} --searches {args.searches} "
        f"--inprocess {args.inprocess} --block {args.block} --pg {args.pg}"
    )
    (before, after) = res.load
    print_table(
        f"Issue 26: store vs mem0, interleaved ({'+'.join(map(str, users))} memories, {args.searches} "
        "filtered searches)",
        ["operation", "n", "p50 ms", "p95 ms", "p50 vs mem0", "paired block ratio: median (p25-p75)"],
        rows,
        notes=[
            f"Command: `{command}`. Machine: {machine()}. Load average (1/5/15 min) before the stores "
            f"{'/'.join(f'{x:.1f}' for x in before)}, after {'/'.join(f'{x:.1f}' for x in after)}. "
            f"Agentmate's Postgres: {res.pg_settings}.",
            f"Stores interleaved in {len(rounds.blocks)} rounds of {args.block} (mem0, HTTP, and in-process in "
            "some rounds; the order rotated each round); paired block ratio = the side's block p50 / the same "
            "round's mem0 block p50. Searches after the stores, each side's in one block.",
            f"Hits returned: mem0 {res.mem0_search['hits']}, Agentmate {res.http_search['hits']}. Both embed through "
            "one 384-d hashing embedder on loopback (a subprocess, OpenAI protocol); mem0 timed in its own process "
            "(driven over stdin/stdout), Agentmate by its HTTP client (one keep-alive connection to uvicorn "
            "running infra.local_app) and around the Lambda handler in-process.",
        ],
    )


if __name__ == "__main__":
    sys.exit(main())
