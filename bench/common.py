"""Shared helpers for the issue-2 benchmarks: a migrated Postgres of their own, a seeded tenant, statistics and
the result table. Benchmarks print numbers; nothing here asserts a timing."""

from __future__ import annotations

import atexit
import os
import platform
import socket
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for _p in (str(ROOT), str(ROOT / "shared")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from tests.pgtrace import count_round_trips  # noqa: E402, F401  (bench scripts import it from here)

BENCH_PG_DIR = ROOT / ".local" / "bench-pg"
BENCH_PG_PORT = int(os.environ.get("AGENTMATE_BENCH_PG_PORT", "26435"))
JWT_SECRET = "bench-secret-" + "b" * 32
PASSWORD = "correct horse battery"


@dataclass
class BenchDatabase:
    name: str
    owner_url: str  # migrations and clean-up only
    app_url: str  # agentmate_app: subject to row-level security, what the application uses


def prepare_database(
    name: str, *, keep: bool = False, pg_dir: Path = BENCH_PG_DIR, pg_port: int = BENCH_PG_PORT
) -> BenchDatabase:
    """Start (if needed) the bench cluster in ``pg_dir`` (default .local/bench-pg), create ``name`` fresh, apply
    every migration as the owner and point this process's environment at it as ``agentmate_app``.

    The database is dropped at exit (unless ``keep``), and the cluster stopped if this process started it.
    """
    import psycopg

    from agentmate.core import migrate
    from infra import localpg

    already_running = localpg._ready(pg_port)
    localpg.start(pg_dir, pg_port)
    admin = localpg.url(pg_port, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # type: ignore[arg-type]
    owner_url = localpg.url(pg_port, name)
    migrate.apply_all(owner_url)
    app_url = localpg.url(pg_port, name, role=localpg.APP_ROLE)
    os.environ.update(bench_environment(app_url))

    def _cleanup() -> None:
        if not keep:
            try:
                with psycopg.connect(admin, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
            except psycopg.Error:
                pass
        if not already_running:
            localpg.stop(pg_dir)

    atexit.register(_cleanup)
    return BenchDatabase(name, owner_url, app_url)


def handler_json(handler: Any, method: str, path: str, **kw: Any) -> Any:
    """Invoke a Lambda handler with an API Gateway v2 event; the JSON body of a 2xx, else RuntimeError."""
    from tests.apigw import LambdaContext, http_event, parse_response

    r = parse_response(handler(http_event(method, path, **kw), LambdaContext()))
    if r.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {r.status_code} {r.body}")
    return r.json()


def seed_tenant(auth_handler: Any, scopes: list[str]) -> tuple[str, str, str]:
    """A fresh tenant through the auth handler: (account_id, its user's JWT, an API key with ``scopes``)."""
    email = f"bench-{time.time_ns()}@example.com"
    creds = {"email": email, "password": PASSWORD}
    account_id = handler_json(auth_handler, "POST", "/api/auth/register", json_body=creds)["account_id"]
    token = handler_json(auth_handler, "POST", "/api/auth/login", json_body=creds)["token"]
    key = handler_json(
        auth_handler,
        "POST",
        "/api/auth/apikeys",
        headers={"Authorization": f"Bearer {token}"},
        json_body={"name": "bench", "scopes": scopes},
    )["key"]
    return account_id, token, key


def import_environment(checkout: str | Path = ROOT) -> dict[str, str]:
    """The environment for a fresh interpreter that imports a function from ``checkout``: its ``shared/`` and root
    on the path, and bytecode caching on. Lambda's layer ships .pyc files (scripts/build-layer.sh), so a cold start
    never compiles our sources; with ``PYTHONDONTWRITEBYTECODE`` set (as in this machine's shells) a warm-up import
    writes no .pyc and every measured import would compile each changed module from source again (that inflated
    the 2026-12-01 cold-start figures of the modules changed that day)."""
    env = {**os.environ, "PYTHONPATH": f"{checkout}/shared{os.pathsep}{checkout}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def bench_environment(database_url: str) -> dict[str, str]:
    return {
        "AGENTMATE_ENV": "test",
        "DATABASE_URL": database_url,
        "JWT_SECRET": JWT_SECRET,
        "REGISTRATIONS_PER_ADDRESS": "1000000",  # seeding registers many tenants from one address
        "EMBEDDING_BASE_URL": "",
        "QDRANT_URL": "",
        "VECTOR_PATH": "",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
        "POWERTOOLS_DEV": "false",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "shared"), str(ROOT)]),
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- statistics ---------------------------------------------------------------------------------------------


def percentile(values: Sequence[float], p: float) -> float:
    """Linear-interpolated percentile (p in 0..100)."""
    data = sorted(values)
    if not data:
        return float("nan")
    k = (len(data) - 1) * p / 100
    lo, hi = int(k), min(int(k) + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def summary(values_ms: Sequence[float]) -> dict[str, float]:
    return {
        "n": len(values_ms),
        "p50": percentile(values_ms, 50),
        "p95": percentile(values_ms, 95),
        "p99": percentile(values_ms, 99),
        "mean": statistics.fmean(values_ms) if values_ms else float("nan"),
        "min": min(values_ms) if values_ms else float("nan"),
        "max": max(values_ms) if values_ms else float("nan"),
    }


def ratio(value: float, baseline: float) -> str:
    return f"{value / baseline:.2f}x" if baseline > 0 else "n/a"


# --- output -----------------------------------------------------------------------------------------------------


def print_table(
    title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], notes: Sequence[str] = ()
) -> None:
    """A GitHub-flavoured Markdown table (pastes into docs/benchmarks.md as is)."""
    cells = [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    print(f"\n### {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join(("-" * (w + 1) + ":") if i else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|")
    for row in cells:
        print(
            "| "
            + " | ".join(
                (c.rjust(w) if i else c.ljust(w)) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
            + " |"
        )
    for note in notes:
        print(f"\n{note}")
    print(flush=True)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}" if abs(value) >= 100 else f"{value:.2f}"
    return str(value)


def machine() -> str:
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {platform.system()} "
        f"{platform.machine()}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M %Z')}"
    )


class TimingEmbedder:
    """Wraps an embedder and keeps the last call's time, so a bench can report latency excluding embedding."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.last_ms = 0.0

    def embed(self, texts: list[str]) -> list[list[float]]:
        t0 = time.perf_counter()
        out = self.inner.embed(texts)
        self.last_ms = (time.perf_counter() - t0) * 1000
        return out


class Stopwatch:
    """Per-step wall time for a breakdown: ``wrap`` replaces a function attribute (a module's function, a class's
    method; sync or async) by a timing wrapper that adds its time under ``(section, label)``, ``section`` being
    whatever the caller set (e.g. the layer being built); ``reset`` starts a new tally, ``restore`` puts the
    originals back. Call sites that look the attribute up at call time (``repo.search(...)``) are timed; a wrapped
    call inside another wrapped call counts under both labels."""

    def __init__(self) -> None:
        import threading

        self.section = ""
        self.totals: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()
        self._originals: list[tuple[Any, str, Any]] = []

    def add(self, label: str, ms: float, section: str | None = None) -> None:
        key = (self.section if section is None else section, label)
        with self._lock:
            self.totals[key] = self.totals.get(key, 0.0) + ms

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        import functools
        import inspect

        original = getattr(owner, attr)

        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def timed(*args: Any, **kwargs: Any) -> Any:
                section, t0 = self.section, time.perf_counter_ns()
                try:
                    return await original(*args, **kwargs)
                finally:
                    self.add(label, (time.perf_counter_ns() - t0) / 1e6, section)
        else:

            @functools.wraps(original)
            def timed(*args: Any, **kwargs: Any) -> Any:
                section, t0 = self.section, time.perf_counter_ns()
                try:
                    return original(*args, **kwargs)
                finally:
                    self.add(label, (time.perf_counter_ns() - t0) / 1e6, section)

        setattr(owner, attr, timed)
        self._originals.append((owner, attr, original))

    def reset(self) -> None:
        self.totals = {}

    def restore(self) -> None:
        for owner, attr, original in reversed(self._originals):
            setattr(owner, attr, original)
        self._originals = []


# --- knowledge seeding (shared by the benches that need indexed knowledge chunks) --------------------------------

KNOWLEDGE_SECTIONS_PER_DOCUMENT = 50


def knowledge_document(i: int, paragraph: Any, sections: int = KNOWLEDGE_SECTIONS_PER_DOCUMENT) -> str:
    """A Markdown document that chunks into exactly ``sections`` chunks: a title, then ``sections`` second-level
    sections of one ``paragraph()`` each (the title has no prose of its own, so it joins the first section)."""
    parts = [f"# Handbook page {i}\n"]
    for s in range(sections):
        parts.append(f"## Topic {i}.{s}\n\n{paragraph()}\n")
    return "\n".join(parts)


def seed_knowledge(
    db: Any, retrieval: Any, principal: Any, *, chunks: int, paragraph: Any, name: str = "bench-handbook"
) -> dict[str, Any]:
    """A registered ``local`` knowledge source whose pushed package (KNOWLEDGE.yaml plus ⌈chunks / 50⌉ generated
    Markdown documents of 50 sections) is indexed through ``knowledge.search.index.index_active``, the path the route
    runs: chunking, links, embedding, vector upsert, chunk rows and index state; the request is repeated while
    it overruns the inline budget (the route's 202: the work done is kept, and the job it queues is left alone,
    no worker runs here). Returns the source, revision and counts."""
    from agentmate.knowledge.search import index
    from agentmate.knowledge.search.schemas import KnowledgeIndexRequest
    from agentmate.knowledge.sources import service
    from agentmate.knowledge.sources.schemas import KnowledgeSnapshotPush
    from agentmate.packages.schemas import FileInput, SourceInput
    from agentmate.packages.service import Actor

    actor = Actor(principal.account_id, principal.user_id)
    documents = max(1, -(-chunks // KNOWLEDGE_SECTIONS_PER_DOCUMENT))
    files = [
        FileInput(
            path="KNOWLEDGE.yaml",
            content=f"name: {name}\ndescription: generated bench handbook\ncapabilities: [operations]\n",
        )
    ]
    files += [
        FileInput(path=f"pages/page-{i:04d}.md", content=knowledge_document(i, paragraph))
        for i in range(documents)
    ]
    source = service.register_source(
        db, actor, SourceInput(type="local", repository_url="file:///bench/knowledge", package_path=name)
    ).source
    ingested = service.push_snapshot(db, actor, source.id, KnowledgeSnapshotPush(files=files))
    requests, items = 0, []
    while not items:
        requests += 1
        items = index.index_active(db, retrieval, principal, KnowledgeIndexRequest(source_id=source.id)).items
    item = items[0]
    if item.failed_chunks:
        raise RuntimeError(f"knowledge indexing failed: {item.error}")
    return {
        "source": source,
        "revision": ingested.revision,
        "documents": item.documents,
        "chunks": item.chunks,
        "index_requests": requests,
    }
