"""Issue 25 item 3: a long mixed REST + MCP workload against the local runtime stays flat.

    PYTHONPATH=shared:. .venv/bin/python bench/soak.py [--minutes 30] [--window 300] [--tenants 4]
        [--clients 3] [--think-ms 20] [--sample 10] [--json out.json]

The server is the local runtime as ``scripts/run.sh`` serves it (``python -m infra.devserver``: every route group
and MCP on one port, the job poller, the embedded vector index in a temporary ``VECTOR_PATH``, offline
embeddings) in a subprocess of its own, on a fresh migrated database of a cluster of its own in
``.local/soak-pg`` (``$AGENTMATE_SOAK_PG_DIR``; port ``$AGENTMATE_SOAK_PG_PORT``, default 26461; the application connects as
``agentmate_app``, row-level security on). ``--tenants`` accounts each get ``--clients`` clients (one thread and
one keep-alive connection each, with an MCP session on ``/mcp``); every client loops over a weighted mix of
operations, alternating REST and MCP for those that have both: memory store, memory search, journal events,
checkpoints, working-memory appends, todos and notes (created and deleted), context packs and knowledge search
(each tenant has a small indexed local knowledge source).

The data volume is held steady: a client forgets its memory scope (``DELETE /api/memory/entries?scope...``)
once it holds ``SCOPE_MEMORIES`` memories and starts the next one, deletes its oldest todo or note beyond
``KEEP_RECORDS``, and deletes its working session once it holds ``SESSION_ITEMS`` items. So the memory
table, the vector index and the working items stay bounded; the journal is append-only by design (events,
checkpoints, ``memory_forgotten`` tombstones stay), which grows Postgres' tables but not the server's heap.

Reports: requests and errors by status (an MCP tool error counts as ``mcp-tool-error``), p50/p95/p99 per
operation per window, the server's RSS and Postgres' memory (the sum of PSS over the postmaster and its
children, so shared buffers count once; and the backend count) sampled every ``--sample`` seconds, the load
average beside them. Goals: 0 errors, 0 5xx, p95 of the last window within 1.2x of the first (per operation
and over all), server RSS growth under 10% from the end of the first (warm-up) window to the end.
Nothing here asserts: the figures are for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from common import PASSWORD, ROOT, free_port, machine, prepare_database, print_table, summary
from mcp_bench import INIT, stop

PG_DIR = Path(os.environ.get("AGENTMATE_SOAK_PG_DIR", ROOT / ".local" / "soak-pg"))
PG_PORT = int(os.environ.get("AGENTMATE_SOAK_PG_PORT", "26461"))
COMMAND = "PYTHONPATH=shared:. .venv/bin/python bench/soak.py"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2025-11-25",
}
SCOPE_MEMORIES = 25  # memories per scope before the client forgets the scope
KEEP_RECORDS = 10  # todos and notes a client keeps
SESSION_ITEMS = 60  # working items before the session is deleted
GOAL_P95_RATIO = 1.2
GOAL_RSS_GROWTH = 0.10
TOPICS = [
    "dark mode in the editor",
    "deploys on fridays need a second reviewer",
    "python 3.11 is the runtime",
    "postgres row level security guards every tenant",
    "the release checklist lives in the wiki",
    "timezone is Europe/Berlin",
    "the billing service retries webhooks three times",
    "coffee order is a flat white",
    "staging database is refreshed nightly",
    "the on-call rotation changes on mondays",
]
MIX = [  # (action, weight)
    ("memory_store", 6),
    ("memory_search", 5),
    ("event", 5),
    ("checkpoint", 2),
    ("working_append", 5),
    ("todo", 3),
    ("note", 3),
    ("context_pack", 2),
    ("knowledge_search", 3),
]


class Recorder:
    """Latencies per (window, operation) and status counts, shared by every client thread."""

    def __init__(self, start: float, window: float) -> None:
        self.start, self.window = start, window
        self.lock = threading.Lock()
        self.latencies: dict[tuple[int, str], list[float]] = defaultdict(list)
        self.statuses: dict[str, int] = defaultdict(int)
        self.failures: dict[tuple[str, str], int] = defaultdict(int)
        self.examples: dict[str, str] = {}

    def add(self, op: str, ms: float, status: str, detail: str = "") -> None:
        w = int((time.monotonic() - self.start) // self.window)
        with self.lock:
            self.latencies[(w, op)].append(ms)
            self.statuses[status] += 1
            if not status.startswith("2"):
                self.failures[(op, status)] += 1
                self.examples.setdefault(f"{op} {status}", detail[:600])


class Failed(Exception):
    pass


@dataclass
class Client:
    """One agent: a keep-alive HTTP connection, an MCP session, and the records it keeps bounded."""

    n: int
    base: str
    key: str
    recorder: Recorder
    rng: random.Random
    http: Any = None
    mcp_session: str = ""
    calls: itertools.count = field(default_factory=itertools.count)
    scope_gen: int = 0
    scope_count: int = 0
    todos: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    session_id: str = ""
    session_items: int = 0
    flip: int = 0

    @property
    def scope_key(self) -> str:
        return f"soak-c{self.n}-g{self.scope_gen}"

    def open(self) -> None:
        import httpx

        self.http = httpx.Client(base_url=self.base, timeout=60, headers={"X-Api-Key": self.key})
        r = self.http.post("/mcp", headers=MCP_HEADERS, json=INIT)
        r.raise_for_status()
        self.mcp_session = r.headers["mcp-session-id"]
        self.http.post(
            "/mcp",
            headers={**MCP_HEADERS, "Mcp-Session-Id": self.mcp_session},
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        )

    # --- transports: each call is timed and recorded; a failure raises Failed -------------------------------

    def rest(self, method: str, path: str, label: str, **kw: Any) -> Any:
        t0 = time.perf_counter_ns()
        try:
            r = self.http.request(method, path, **kw)
        except Exception as exc:  # a transport error is an error of the run, not of the driver
            self.recorder.add(f"REST {label}", (time.perf_counter_ns() - t0) / 1e6, "transport", repr(exc))
            raise Failed(label) from exc
        ms = (time.perf_counter_ns() - t0) / 1e6
        self.recorder.add(f"REST {label}", ms, str(r.status_code), r.text)
        if r.status_code >= 300:
            raise Failed(label)
        return r.json() if r.content else None

    def mcp(self, tool: str, arguments: dict[str, Any]) -> Any:
        body = {
            "jsonrpc": "2.0",
            "id": next(self.calls) + 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        t0 = time.perf_counter_ns()
        try:
            r = self.http.post("/mcp", headers={**MCP_HEADERS, "Mcp-Session-Id": self.mcp_session}, json=body)
        except Exception as exc:
            self.recorder.add(f"MCP {tool}", (time.perf_counter_ns() - t0) / 1e6, "transport", repr(exc))
            raise Failed(tool) from exc
        ms = (time.perf_counter_ns() - t0) / 1e6
        status = str(r.status_code)
        result: Any = None
        if r.status_code == 200:
            payload = r.json()
            result = payload.get("result")
            if result is None or result.get("isError"):
                status = "mcp-tool-error"
        self.recorder.add(f"MCP {tool}", ms, status, r.text)
        if status != "200":
            raise Failed(tool)
        return result.get("structuredContent") or json.loads(result["content"][0]["text"])

    def use_mcp(self) -> bool:
        self.flip += 1
        return self.flip % 2 == 0

    def post(self, tool: str, path: str, body: dict[str, Any], label: str = "") -> Any:
        """The operation over MCP (``tool``) or REST (``POST path``), every other call."""
        if self.use_mcp():
            return self.mcp(tool, body)
        return self.rest("POST", path, label or f"POST {path}", json=body)

    # --- the actions ----------------------------------------------------------------------------------------

    def step(self, mix: list[tuple[str, int]]) -> None:
        actions, weights = zip(*mix, strict=True)
        action = self.rng.choices(actions, weights)[0]
        try:
            getattr(self, action)()
        except Failed:
            pass

    def memory_store(self) -> None:
        if self.scope_count >= SCOPE_MEMORIES:
            self.rest(
                "DELETE",
                "/api/memory/entries",
                "DELETE /api/memory/entries (forget scope)",
                params={"scope_type": "project", "scope_key": self.scope_key, "confirm": "true"},
            )
            self.scope_gen += 1
            self.scope_count = 0
        topic = self.rng.choice(TOPICS)
        body = {
            "memory_type": "semantic",
            "content": f"Client {self.n} learned that {topic} (note {uuid.uuid4().hex[:8]}).",
            "scope_type": "project",
            "scope_key": self.scope_key,
            "evidence": [{"source_type": "chat", "source_id": uuid.uuid4().hex, "excerpt": topic[:40]}],
        }
        self.post("memory_store", "/api/memory/entries", body)
        self.scope_count += 1

    def memory_search(self) -> None:
        body = {"query": self.rng.choice(TOPICS), "top_k": 5}
        self.post("memory_search", "/api/memory/search", body)

    def event(self) -> None:
        body = {
            "event_type": self.rng.choice(["observation", "action", "decision", "outcome"]),
            "idempotency_key": uuid.uuid4().hex,
            "session_id": f"soak-session-{self.n}",
            "scope_type": "project",
            "scope_key": self.scope_key,
            "payload": {"text": self.rng.choice(TOPICS)},
        }
        self.post("memory_record", "/api/memory/events", body)

    def checkpoint(self) -> None:
        body = {
            "session_id": f"soak-session-{self.n}",
            "goal": "keep the soak flat",
            "done": ["stored memories"],
            "next": ["search them"],
            "idempotency_key": uuid.uuid4().hex,
        }
        self.post("memory_checkpoint_save", "/api/memory/checkpoints", body)

    def working_append(self) -> None:
        if self.session_id and self.session_items >= SESSION_ITEMS:
            self.rest(
                "DELETE",
                f"/api/memory/working/sessions/{self.session_id}",
                "DELETE /api/memory/working/sessions/{id}",
            )
            self.session_id = ""
        if not self.session_id:
            created = self.rest(
                "POST",
                "/api/memory/working/sessions",
                "POST /api/memory/working/sessions",
                json={"title": f"soak {self.n}"},
            )
            self.session_id, self.session_items = created["id"], 0
        items = [
            {"item_type": "message", "role": "user", "content": self.rng.choice(TOPICS), "idempotency_key": k}
            for k in (uuid.uuid4().hex, uuid.uuid4().hex)
        ]
        if self.use_mcp():
            self.mcp("memory_working_append", {"session_id": self.session_id, "items": items})
        else:
            self.rest(
                "POST",
                f"/api/memory/working/sessions/{self.session_id}/items",
                "POST /api/memory/working/sessions/{id}/items",
                json={"items": items},
            )
        self.session_items += len(items)

    def _record(self, kind: str, kept: list[str], body: dict[str, Any]) -> None:
        mcp = self.use_mcp()
        if len(kept) >= KEEP_RECORDS:
            oldest = kept.pop(0)
            if mcp:
                self.mcp(f"{kind}_delete", {"id": oldest})
            else:
                self.rest("DELETE", f"/api/{kind}s/{oldest}", f"DELETE /api/{kind}s/{{id}}")
        if mcp:
            created = self.mcp(f"{kind}_create", body)
        else:
            created = self.rest("POST", f"/api/{kind}s", f"POST /api/{kind}s", json=body)
        kept.append(created["id"])

    def todo(self) -> None:
        self._record("todo", self.todos, {"title": f"check {self.rng.choice(TOPICS)}", "tags": ["soak"]})

    def note(self) -> None:
        self._record(
            "note", self.notes, {"title": "soak note", "content": self.rng.choice(TOPICS), "tags": ["soak"]}
        )

    def context_pack(self) -> None:
        body = {
            "task": f"continue: {self.rng.choice(TOPICS)}",
            "session_id": f"soak-session-{self.n}",
            "max_chars": 4000,
        }
        self.post("context_pack", "/api/context/pack", body)

    def knowledge_search(self) -> None:
        body = {"query": self.rng.choice(TOPICS), "top_k": 5}
        self.post("knowledge_search", "/api/knowledge/search", body)


# --- the server and its memory -----------------------------------------------------------------------------


def start_server(env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    import httpx

    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.devserver", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(Path(env["SOAK_LOG_DIR"]) / "server.log", "wb"),  # lives as long as the child
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}; see {env['SOAK_LOG_DIR']}/server.log")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError("server did not start")


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            tree[ppid].append(int(entry))
    return tree


def _kib(pid: int, path: str, key: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/{path}").read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _du_mb(path: Path) -> float:
    total = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                pass
    return total / 2**20


def sample_memory(server_pid: int, vectors: Path) -> dict[str, float]:
    """Server RSS (the devserver process and any children), Postgres' PSS summed over the postmaster and its
    children (shared buffers counted once), the backend count, the embedded vector index's size on disk (its
    segments are memory-mapped, so they show in the server's RSS as they are read) and the 1-minute load
    average."""
    postmaster = int((PG_DIR / "data" / "postmaster.pid").read_text().split()[0])
    tree = _children()

    def family(pid: int) -> list[int]:
        out, todo = [], [pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo.extend(tree.get(p, []))
        return out

    pg = family(postmaster)
    return {
        "server_rss_mb": sum(_kib(p, "status", "VmRSS:") for p in family(server_pid)) / 1024,
        # RSS split: anonymous pages (the heap: Python objects, the engine's in-memory structures) and pages of
        # mapped files (the vector index's segments and write-ahead log; page cache the kernel can reclaim).
        "server_anon_mb": sum(_kib(p, "status", "RssAnon:") for p in family(server_pid)) / 1024,
        "server_file_mb": sum(
            _kib(p, "status", "RssFile:") + _kib(p, "status", "RssShmem:") for p in family(server_pid)
        )
        / 1024,
        "pg_pss_mb": sum(_kib(p, "smaps_rollup", "Pss:") for p in pg) / 1024,
        "pg_processes": len(pg),
        "vectors_mb": _du_mb(vectors),
        "load1": os.getloadavg()[0],
    }


# --- setup ---------------------------------------------------------------------------------------------------


def knowledge_files(tenant: int) -> list[dict[str, str]]:
    files = [
        {
            "path": "KNOWLEDGE.yaml",
            "content": f"name: soak-handbook-{tenant}\ndescription: soak handbook\ncapabilities: [operations]\n",
        }
    ]
    for d in range(4):
        sections = "\n".join(
            f"## {topic.capitalize()}\n\nThe team agreed that {topic}; see runbook {d}.{s}.\n"
            for s, topic in enumerate(TOPICS)
        )
        files.append({"path": f"pages/page-{d}.md", "content": f"# Handbook page {d}\n\n{sections}"})
    return files


def new_account(base: str, tenant: int) -> tuple[str, str]:
    """A registered account and a full-access API key: (key, account id)."""
    import httpx

    email = f"soak-{tenant}-{uuid.uuid4().hex[:8]}@example.com"
    with httpx.Client(base_url=base, timeout=120) as http:
        r = http.post("/api/auth/register", json={"email": email, "password": PASSWORD})
        r.raise_for_status()
        account_id = str(r.json()["account_id"])
        token = http.post("/api/auth/login", json={"email": email, "password": PASSWORD}).json()["token"]
        r = http.post(
            "/api/auth/apikeys",
            json={"name": "soak", "scopes": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        r.raise_for_status()
        return str(r.json()["key"]), account_id


def seed_tenant(base: str, tenant: int) -> str:
    """An account, a full-access API key and an indexed local knowledge source; returns the key."""
    import httpx

    key, _ = new_account(base, tenant)
    with httpx.Client(base_url=base, timeout=120) as http:
        h = {"X-Api-Key": key}
        r = http.post(
            "/api/knowledge/sources",
            headers=h,
            json={"type": "local", "repository_url": "file:///soak/kb", "package_path": f"soak-kb-{tenant}"},
        )
        r.raise_for_status()
        source_id = r.json()["source"]["id"] if "source" in r.json() else r.json()["id"]
        r = http.post(
            f"/api/knowledge/sources/{source_id}/snapshots",
            headers=h,
            json={"files": knowledge_files(tenant), "index": True},
        )
        r.raise_for_status()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            hits = http.post("/api/knowledge/search", headers=h, json={"query": TOPICS[0], "top_k": 3})
            hits.raise_for_status()
            if hits.json().get("items"):
                return key
            time.sleep(1)
        raise RuntimeError(f"tenant {tenant}: the knowledge source was not indexed in 120 s")


# --- the run -------------------------------------------------------------------------------------------------


def serve(database: str) -> tuple[Any, Path, subprocess.Popen[bytes], str]:
    """A fresh migrated database and the local runtime serving it: (database, log folder, server, base URL)."""
    db = prepare_database(database, pg_dir=PG_DIR, pg_port=PG_PORT)
    logs = Path(tempfile.mkdtemp(prefix="agentmate-soak-"))
    port = free_port()
    env = {
        **os.environ,
        "AGENTMATE_ENV": "dev",
        "MIGRATION_DATABASE_URL": db.owner_url,
        "VECTOR_PATH": str(logs / "vectors"),
        "SOAK_LOG_DIR": str(logs),
        # Twelve clients with a 20 ms pause drive a tenant at ~30 requests a second, past the default 1,200 a
        # minute: the soak measures drift and leaks under that load, so the rate is raised (the admission
        # statement still runs on every request); bench/fairness.py measures the limits at their defaults.
        "LIMIT_REQUESTS_PER_MINUTE": os.environ.get("LIMIT_REQUESTS_PER_MINUTE", "60000"),
    }
    env.pop("AWS_LAMBDA_FUNCTION_NAME", None)
    return db, logs, start_server(env, port), f"http://127.0.0.1:{port}"


def run(args: argparse.Namespace) -> dict[str, Any]:
    _, logs, server, base = serve(f"agentmate_soak_{os.getpid()}")  # runs side by side never share one
    try:
        keys = [seed_tenant(base, t) for t in range(args.tenants)]
        start = time.monotonic()
        recorder = Recorder(start, args.window)
        clients = [
            Client(n, base, keys[n % args.tenants], recorder, random.Random(n))
            for n in range(args.tenants * args.clients)
        ]
        for c in clients:
            c.open()
        mix = [(action, weight) for action, weight in MIX if action not in args.without]
        stop_at = start + args.minutes * 60
        samples: list[dict[str, float]] = []

        def drive(c: Client) -> None:
            while time.monotonic() < stop_at:
                c.step(mix)
                if args.think_ms:
                    time.sleep(c.rng.uniform(0, 2 * args.think_ms) / 1000)

        threads = [threading.Thread(target=drive, args=(c,), daemon=True) for c in clients]
        for t in threads:
            t.start()
        while time.monotonic() < stop_at:
            samples.append({"t": time.monotonic() - start, **sample_memory(server.pid, logs / "vectors")})
            time.sleep(min(args.sample, max(0.0, stop_at - time.monotonic())))
        for t in threads:
            t.join()
        samples.append({"t": time.monotonic() - start, **sample_memory(server.pid, logs / "vectors")})
        for c in clients:
            c.http.close()
    finally:
        stop(server)
    return {"recorder": recorder, "samples": samples, "logs": str(logs)}


def report(args: argparse.Namespace, recorder: Recorder, samples: list[dict[str, float]]) -> dict[str, Any]:
    windows = sorted({w for w, _ in recorder.latencies})
    # A last partial window (the load stops mid-window) is dropped.
    full = [w for w in windows if (w + 1) * args.window <= args.minutes * 60 + 1]
    ops = sorted({op for _, op in recorder.latencies})
    rows, per_op = [], {}
    for op in [*ops, "all operations"]:
        stats = []
        for w in full:
            if op == "all operations":
                values = [x for (ww, _), xs in recorder.latencies.items() if ww == w for x in xs]
            else:
                values = recorder.latencies.get((w, op), [])
            stats.append(summary(values))
        first, last = stats[0], stats[-1]
        ratio = last["p95"] / first["p95"] if first["p95"] > 0 else float("nan")
        per_op[op] = {"windows": stats, "p95_last_over_first": ratio}
        cells = [f"{s['p50']:.0f}/{s['p95']:.0f}/{s['p99']:.0f} ({s['n']})" for s in stats]
        rows.append([op, *cells, f"{ratio:.2f}x"])
    heads = [f"{w * args.window / 60:g}-{(w + 1) * args.window / 60:g} min" for w in full]
    print_table(
        f"Soak: p50/p95/p99 ms (requests) per {args.window / 60:g}-minute window",
        ["operation", *heads, "p95 last/first"],
        rows,
        [
            f"Machine: {machine()}. Command: `{COMMAND} --minutes {args.minutes:g} --window {args.window:g} "
            f"--tenants {args.tenants} --clients {args.clients} --think-ms {args.think_ms:g}"
            + "".join(f" --without {w}" for w in args.without)
            + "`."
        ],
    )
    total = sum(recorder.statuses.values())
    print_table(
        "Soak: responses by status",
        ["status", "count"],
        sorted(recorder.statuses.items()),
        [f"{total} requests; failures: {dict(recorder.failures) or 'none'}"],
    )
    for k, v in recorder.examples.items():
        print(f"example failure {k}: {v}")
    marks = [s for s in samples if s["t"] >= args.window] or samples
    warm = marks[0]["server_rss_mb"]
    end = samples[-1]["server_rss_mb"]
    growth = (end - warm) / warm if warm else float("nan")
    anon_warm, anon_end = marks[0]["server_anon_mb"], samples[-1]["server_anon_mb"]
    anon_growth = (anon_end - anon_warm) / anon_warm if anon_warm else float("nan")
    step = max(1, len(samples) // 12)
    print_table(
        "Soak: memory over time",
        [
            "t (min)",
            "server RSS MB",
            "anon MB",
            "mapped files MB",
            "Postgres PSS MB",
            "Postgres processes",
            "vector index MB",
            "load1",
        ],
        [
            [
                f"{s['t'] / 60:.1f}",
                f"{s['server_rss_mb']:.1f}",
                f"{s['server_anon_mb']:.1f}",
                f"{s['server_file_mb']:.1f}",
                f"{s['pg_pss_mb']:.1f}",
                s["pg_processes"],
                f"{s['vectors_mb']:.1f}",
                f"{s['load1']:.2f}",
            ]
            for s in samples[::step] + ([samples[-1]] if (len(samples) - 1) % step else [])
        ],
        [
            f"Server RSS after the warm-up window {warm:.1f} MB, at the end {end:.1f} MB: {growth:+.1%} "
            f"(goal < {GOAL_RSS_GROWTH:.0%}); max {max(s['server_rss_mb'] for s in samples):.1f} MB. "
            f"Anonymous pages {anon_warm:.1f} → {anon_end:.1f} MB: {anon_growth:+.1%}."
        ],
    )
    five = sum(v for k, v in recorder.statuses.items() if k.startswith("5"))
    errors = total - sum(v for k, v in recorder.statuses.items() if k.startswith("2"))
    overall = per_op["all operations"]["p95_last_over_first"]
    worst = max(((v["p95_last_over_first"], k) for k, v in per_op.items()), default=(float("nan"), ""))
    verdict = {
        "requests": total,
        "errors": errors,
        "5xx": five,
        "p95_last_over_first_all": overall,
        "p95_last_over_first_worst": worst,
        "server_rss_growth_after_warmup": growth,
        "server_anon_growth_after_warmup": anon_growth,
        "goals_met": errors == 0 and five == 0 and overall <= GOAL_P95_RATIO and growth < GOAL_RSS_GROWTH,
    }
    print(json.dumps(verdict, default=str), flush=True)
    return {"verdict": verdict, "per_op": per_op, "samples": samples, "statuses": dict(recorder.statuses)}


# --- the deadlock the first runs found, reproduced deterministically -----------------------------------------


def repro_deadlock() -> int:
    """``--repro-deadlock``: forgetting a scope (``repository.entries_in_scope``: ``ORDER BY id FOR UPDATE``)
    against a search counting its hits (``repository.bump_access_with_evidence``: ``UPDATE ... WHERE id =
    ANY(sorted ids)``). Sorting the array does not order the locks: the UPDATE locks rows in its plan's order
    (on a small table an index scan of ``memory_entries_scope_idx`` filtering on id; the generic plan Postgres
    may switch to once psycopg prepares the statement, a bitmap heap scan: heap order either way). Two entries
    lo < hi by id with hi earlier in the heap; a third transaction holds lo so that the forget queues on lo
    first, then the bump locks hi and queues on lo; the holder commits: the forget takes lo and waits for hi,
    the bump waits for lo, and Postgres kills one. ``SOAK_REPRO_PLAN=generic`` forces the generic plan.
    Prints what each got and the bump's plan."""
    import httpx
    import psycopg
    from psycopg.rows import dict_row

    from agentmate.memory import repository as repo

    db, _, server, base = serve(f"agentmate_soak_repro_{os.getpid()}")
    try:
        key, account = new_account(base, 0)
        with httpx.Client(base_url=base, timeout=60, headers={"X-Api-Key": key}) as http:
            for topic in TOPICS[:8]:
                body = {
                    "memory_type": "semantic",
                    "content": topic,
                    "scope_type": "project",
                    "scope_key": "repro",
                    "evidence": [
                        {"source_type": "chat", "source_id": uuid.uuid4().hex, "excerpt": topic[:40]}
                    ],
                }
                http.post("/api/memory/entries", json=body).raise_for_status()
    finally:
        stop(server)
    owner = psycopg.connect(db.owner_url, autocommit=True)
    heap = [r[0] for r in owner.execute("SELECT id FROM memory_entries ORDER BY ctid")]
    hi, lo = next((a, b) for i, a in enumerate(heap) for b in heap[i + 1 :] if a > b)

    def connect() -> Any:
        conn = psycopg.connect(db.app_url, autocommit=True, row_factory=dict_row, prepare_threshold=0)
        conn.execute("SELECT set_config('app.account_id', %s, false)", (account,))
        return conn

    def wait_blocked(conn: Any) -> None:
        for _ in range(200):
            row = owner.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (conn.info.backend_pid,)
            ).fetchone()
            if row and row[0] == "Lock":
                return
            time.sleep(0.05)
        raise RuntimeError("the session never blocked")

    holder, forgetter, searcher = connect(), connect(), connect()
    if os.environ.get("SOAK_REPRO_PLAN") == "generic":
        searcher.execute("SET plan_cache_mode = force_generic_plan")
    outcome: dict[str, str] = {}

    def attempt(name: str, fn: Any) -> None:
        try:
            fn()
            outcome[name] = "ok"
        except psycopg.Error as exc:
            outcome[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"

    def forget() -> None:
        with forgetter.transaction():
            repo.entries_in_scope(forgetter, account_id=account, scope_type="project", scope_key="repro")

    def bump() -> None:
        with searcher.transaction():
            repo.bump_access_with_evidence(searcher, account_id=account, ids=[lo, hi])

    holder.execute("BEGIN")
    holder.execute("SELECT 1 FROM memory_entries WHERE id = %s FOR UPDATE", (lo,))
    threads = [threading.Thread(target=attempt, args=("forget scope", forget))]
    threads[0].start()
    wait_blocked(forgetter)
    threads.append(threading.Thread(target=attempt, args=("search's access bump", bump)))
    threads[1].start()
    wait_blocked(searcher)
    holder.execute("COMMIT")
    for t in threads:
        t.join()
    searcher.execute(
        "PREPARE bump(uuid, uuid[]) AS UPDATE memory_entries SET access_count = access_count + 1 "
        "WHERE account_id = $1 AND id = ANY($2)"
    )
    ids = "{" + ",".join(str(i) for i in (lo, hi)) + "}"
    plan = searcher.execute(f"EXPLAIN EXECUTE bump('{account}', '{ids}')").fetchall()  # our own uuids
    print(f"entries lo={lo} hi={hi} (hi first in the heap)")
    for name, result in outcome.items():
        print(f"{name}: {result}")
    print(
        f"the bump's plan ({os.environ.get('SOAK_REPRO_PLAN', 'default')}):\n  "
        + "\n  ".join(r["QUERY PLAN"] for r in plan)
    )
    reproduced = any("DeadlockDetected" in v for v in outcome.values())
    print("reproduced: a deadlock (the request answers 500)" if reproduced else "not reproduced")
    return 0


# --- the embedded vector index under churn -----------------------------------------------------------------


def probe_vector_index(writes: int) -> int:
    """``--probe-vector-index N``: the embedded index alone (``retrieval.embedded_index.EmbeddedIndex`` in a
    temporary folder, 256 dimensions), N single-point upserts, each followed by the delete of the oldest point
    once 300 are live, so the live count stays at 300, as the soak's memory store and forget do. Prints this
    process's RSS, the folder's size (allocated blocks; its WAL and segments apart) and the live count every
    N/10 writes and once the background upkeep (flush, vacuum, optimisation) has finished; then the mean and
    p99 of one write (upsert + delete) and the longest one: qdrant-edge holds the GIL in every call, so an
    upkeep pass pauses this thread too."""
    from agentmate.retrieval.embedded_index import EmbeddedIndex
    from agentmate.retrieval.vector_index import VectorPoint

    def rss_mb() -> float:
        return _kib(os.getpid(), "status", "VmRSS:") / 1024

    folder = Path(tempfile.mkdtemp(prefix="agentmate-soak-vectors-"))
    shard = folder / EmbeddedIndex.SHARD_DIR

    def row(label: str) -> list[object]:
        sizes = [_du_mb(folder), _du_mb(shard / "wal"), _du_mb(shard / "segments")]
        anon = _kib(os.getpid(), "status", "RssAnon:") / 1024
        return [label, f"{rss_mb():.1f}", f"{anon:.1f}", *(f"{mb:.1f}" for mb in sizes), index.count(account)]

    index = EmbeddedIndex(folder)
    index.ensure_collection(256)
    account, rng, live = str(uuid.uuid4()), random.Random(1), list[str]()
    rows, costs = [row("0")], list[float]()
    for i in range(1, writes + 1):
        point = str(uuid.uuid4())
        vector = [rng.random() for _ in range(256)]
        payload = {"namespace": "memory", "source_type": "memory", "source_id": point}
        started = time.perf_counter()
        index.upsert(account, [VectorPoint(point, vector, payload)])
        live.append(point)
        if len(live) > 300:
            index.delete(account, [live.pop(0)])
        costs.append(time.perf_counter() - started)
        if i % max(1, writes // 10) == 0:
            rows.append(row(str(i)))
    index.wait_optimized()
    rows.append(row("after the upkeep"))
    index.close()
    shutil.rmtree(folder, ignore_errors=True)
    costs.sort()
    print_table(
        "Embedded vector index under churn (300 live points)",
        ["writes", "process RSS MB", "anon MB", "folder MB", "WAL MB", "segments MB", "live points"],
        rows,
        [
            f"One write (upsert + delete): mean {1e6 * sum(costs) / len(costs):.0f} us, p99 "
            f"{1e6 * costs[int(0.99 * (len(costs) - 1))]:.0f} us, longest {1e3 * costs[-1]:.0f} ms.",
            f"Machine: {machine()}. Command: `{COMMAND} --probe-vector-index {writes}`.",
        ],
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="duration of the load")
    parser.add_argument("--window", type=float, default=300.0, help="window length, seconds")
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--clients", type=int, default=3, help="clients per tenant")
    parser.add_argument("--think-ms", type=float, default=20.0, help="mean pause between a client's requests")
    parser.add_argument("--sample", type=float, default=10.0, help="memory sampling period, seconds")
    parser.add_argument("--json", help="write every figure to this file")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        choices=[action for action, _ in MIX],
        help="leave this action out of the mix (repeatable): e.g. memory_store, to see the server's memory "
        "without the vector index's growth",
    )
    parser.add_argument(
        "--repro-deadlock", action="store_true", help="reproduce the forget/search deadlock and exit"
    )
    parser.add_argument(
        "--probe-vector-index",
        type=int,
        metavar="WRITES",
        help="upsert and delete WRITES points in the embedded vector index alone (300 live) and exit",
    )
    args = parser.parse_args(argv)
    if args.probe_vector_index:
        return probe_vector_index(args.probe_vector_index)
    if args.repro_deadlock:
        return repro_deadlock()
    out = run(args)
    result = report(args, out["recorder"], out["samples"])
    print(f"server log: {out['logs']}/server.log", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, default=str, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
