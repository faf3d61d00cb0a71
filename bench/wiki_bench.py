"""Wiki compiler benchmarks (issue 13 "Measured"): enqueue through the knowledge Lambda handler, the check gate on
a 200-page build, and an incremental vs a full build on a 40-document corpus with one document changed.

    .venv/bin/python bench/wiki_bench.py [--enqueues 200] [--checks 30]

Postgres: a cluster of its own in .local/bench-wiki-pg (port $AGENTMATE_WIKI_BENCH_PG_PORT, default 26455), a fresh
migrated database, the application as ``agentmate_app`` (RLS applies), DB_POOL_MAX_SIZE=2. The compiler points at
the loopback fake provider (tests/fakes/chat_provider.py), which counts ~4 characters per token.

1. Enqueue: ``POST /api/knowledge/compile`` with force=true (each call inserts a queued build and its job; nothing is
   compiled) as API Gateway v2 events handed to ``functions.knowledge_wiki.app.handler`` in-process. Baseline in the
   same run: ``GET /api/knowledge/sources?limit=1`` through ``functions.knowledge.app.handler``. Goal: p50 ≤ 20 ms.
2. Check gate: ``check()`` over a 200-page draft (198 summaries with a citation and two links each, an overview, the
   generated index), and the whole pipeline (``compile_build``: model call to the fake, parse, check, the outcome
   transaction writing 201 pages with the log) for a 198-document corpus. Goal: check ≤ 1 s.
3. Incremental vs full: a 40-document corpus compiled in full, one document changed, compiled incrementally:
   output and input tokens, pages recompiled and carried over.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from typing import Any
from uuid import UUID

from common import PASSWORD, ROOT, bench_environment, machine, print_table, summary

COMMAND = ".venv/bin/python bench/wiki_bench.py"
ENQUEUE_GOAL_P50_MS = 20.0
CHECK_GOAL_S = 1.0
PG_DIR = ROOT / ".local" / "bench-wiki-pg"
PG_PORT = int(os.environ.get("AGENTMATE_WIKI_BENCH_PG_PORT", "26455"))


def prepare_database(name: str) -> None:
    import atexit

    import psycopg

    from agentmate.core import migrate
    from infra import localpg

    already = localpg._ready(PG_PORT)
    localpg.start(PG_DIR, PG_PORT)
    admin = localpg.url(PG_PORT, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # type: ignore[arg-type]
    migrate.apply_all(localpg.url(PG_PORT, name))
    os.environ.update(bench_environment(localpg.url(PG_PORT, name, role=localpg.APP_ROLE)))

    def cleanup() -> None:
        try:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
        except psycopg.Error:
            pass
        if not already:
            localpg.stop(PG_DIR)

    atexit.register(cleanup)


def corpus(n: int, changed: int | None = None) -> list[dict[str, str]]:
    files = [{"path": "KNOWLEDGE.yaml", "content": "name: Bench KB\ndescription: billing rules\n"}]
    for i in range(n):
        nxt = f"topic-{(i + 1) % n:03d}.md"
        extra = " This rule changed in the last release." if i == changed else ""
        files.append(
            {
                "path": f"docs/topic-{i:03d}.md",
                "content": f"# Topic {i:03d}\n\nTopic {i:03d} explains billing rule {i} for invoices, refunds "
                f"and credits in detail.{extra} See [the next topic]({nxt}).\n",
            }
        )
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--enqueues", type=int, default=200)
    parser.add_argument("--checks", type=int, default=30)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    prepare_database("agentmate_bench_wiki")
    os.environ["DB_POOL_MAX_SIZE"] = "2"
    warnings.filterwarnings("ignore", "No application metrics")

    from tests.fakes.chat_provider import FakeChatProvider

    fake = FakeChatProvider().__enter__()
    os.environ.update({"COMPILER_BASE_URL": fake.base_url, "COMPILER_MODEL": "fake-compiler"})

    from agentmate.core.db import get_database
    from agentmate.knowledge.wiki import service as wiki
    from agentmate.knowledge.wiki.check import CheckInput, DraftPage, check
    from agentmate.knowledge.wiki.compiler import CompileContext, compile_build
    from agentmate.knowledge.wiki.profiles import ProfileSettings
    from agentmate.knowledge.wiki.prompt import CitationIn, LinkIn
    from agentmate.knowledge.wiki.render import index_page
    from agentmate.llm import ChatClient
    from agentmate.packages.service import Actor
    from functions.auth.app import handler as auth_handler
    from functions.knowledge.app import handler as knowledge_handler
    from functions.knowledge_wiki.app import handler as wiki_handler
    from tests.apigw import LambdaContext, http_event, parse_response

    def call(
        method: str, path: str, expect: tuple[int, ...] = (200,), handler: Any = knowledge_handler, **kw: Any
    ) -> Any:
        r = parse_response(handler(http_event(method, path, **kw), LambdaContext()))
        if r.status_code not in expect:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.body[:500]}")
        return r.json()

    email = f"bench-{time.time_ns()}@example.com"
    call("POST", "/api/auth/register", (201,), auth_handler, json_body={"email": email, "password": PASSWORD})
    token = call(
        "POST", "/api/auth/login", (200,), auth_handler, json_body={"email": email, "password": PASSWORD}
    )["token"]
    me = call("GET", "/api/auth/me", (200,), auth_handler, headers={"Authorization": f"Bearer {token}"})
    key = call(
        "POST",
        "/api/auth/apikeys",
        (201,),
        auth_handler,
        headers={"Authorization": f"Bearer {token}"},
        json_body={"name": "bench", "scopes": ["knowledge:rw"]},
    )["key"]
    headers = {"X-Api-Key": key}
    actor = Actor(UUID(me["account_id"]), UUID(me["user_id"]))

    def source(name: str, files: list[dict[str, str]]) -> str:
        sid = call(
            "POST",
            "/api/knowledge/sources",
            (201,),
            headers=headers,
            json_body={"type": "local", "repository_url": "file:///bench", "package_path": f"bench/{name}"},
        )["id"]
        call(
            "POST",
            f"/api/knowledge/sources/{sid}/snapshots",
            (201,),
            headers=headers,
            json_body={"files": files},
        )
        return str(sid)

    # ---- 1. enqueue -----------------------------------------------------------------------------------------
    sid = source("enqueue", corpus(3))
    base_ms, enq_ms = [], []
    for i in range(args.enqueues + 20):
        t0 = time.perf_counter_ns()
        call("GET", "/api/knowledge/sources", headers=headers, query={"limit": "1"})
        t1 = time.perf_counter_ns()
        out = call(
            "POST",
            "/api/knowledge/compile",
            (202,),
            wiki_handler,
            headers=headers,
            json_body={"source_id": sid, "force": True},
        )
        t2 = time.perf_counter_ns()
        assert out["queued"] and out["build"]["status"] == "queued"
        if i >= 20:
            base_ms.append((t1 - t0) / 1e6)
            enq_ms.append((t2 - t1) / 1e6)
    b, e = summary(base_ms), summary(enq_ms)
    print_table(
        "POST /api/knowledge/compile (enqueue: build row + job row, nothing compiled) through the handler",
        ["request", "n", "p50 ms", "p95 ms", "p50 vs baseline"],
        [
            [
                "GET /api/knowledge/sources?limit=1 (baseline)",
                b["n"],
                f"{b['p50']:.1f}",
                f"{b['p95']:.1f}",
                "1.0x",
            ],
            [
                "POST /api/knowledge/compile force=true",
                e["n"],
                f"{e['p50']:.1f}",
                f"{e['p95']:.1f}",
                f"{e['p50'] / b['p50']:.1f}x",
            ],
        ],
        notes=[
            f"Goal p50 ≤ {ENQUEUE_GOAL_P50_MS:g} ms: "
            f"{'met' if e['p50'] <= ENQUEUE_GOAL_P50_MS else 'NOT met'} ({e['p50']:.1f} ms)."
        ],
    )

    # ---- 2. check gate on 200 pages -------------------------------------------------------------------------
    docs = {f"docs/topic-{i:03d}.md" for i in range(200)}
    pages = [
        DraftPage(
            path=f"wiki/topic-{i:03d}.md",
            kind="summary",
            title=f"Topic {i}",
            content=f"# Topic {i}\n\n" + "billing rule text " * 60,
            citations=[CitationIn(f"docs/topic-{i:03d}.md", "Topic", "claim", "excerpt")],
            links=[
                LinkIn(f"wiki/topic-{(i + 1) % 198:03d}.md", "references"),
                LinkIn(f"wiki/topic-{(i + 7) % 198:03d}.md", "elaborates"),
            ],
        )
        for i in range(198)
    ]
    pages.append(
        DraftPage(
            path="wiki/overview.md",
            kind="overview",
            title="Overview",
            content="# Overview\n",
            citations=[CitationIn("docs/topic-000.md")],
        )
    )
    pages.append(index_page(pages, "Bench KB"))
    check_ms = []
    for _ in range(args.checks):
        t0 = time.perf_counter_ns()
        failures = check(
            CheckInput(
                pages=pages,
                profile=ProfileSettings(),
                document_paths=docs,
                tokens=100_000,
                parent_page_count=len(pages),
            )
        )
        check_ms.append((time.perf_counter_ns() - t0) / 1e6)
        assert failures == [], failures[:3]
    c = summary(check_ms)
    big = source("big", corpus(198))
    build_id = wiki.compile_source(
        get_database(), actor, wiki.CompileRequest(source_id=UUID(big))
    ).result.build.id
    chat = ChatClient.from_settings("compiler")
    t0 = time.perf_counter_ns()
    outcome = compile_build(
        get_database(), build_id, CompileContext(account_id=actor.account_id), client=chat
    )
    pipeline_s = (time.perf_counter_ns() - t0) / 1e9
    assert outcome.status == "succeeded", outcome
    n_pages = wiki.list_pages(get_database(), actor, build_id, wiki.PageParams(limit=1, offset=0)).total
    print_table(
        "Check gate on a 200-page build (198 summaries + overview + generated index)",
        ["what", "n", "p50 ms", "p95 ms"],
        [
            ["check() alone (14 rules)", c["n"], f"{c['p50']:.1f}", f"{c['p95']:.1f}"],
            [
                f"compile_build, 198 documents → {n_pages} pages (fake model call, parse, check, outcome tx)",
                1,
                f"{pipeline_s * 1000:.0f}",
                "-",
            ],
        ],
        notes=[
            f"Goal check ≤ {CHECK_GOAL_S:g} s: {'met' if c['p50'] / 1000 <= CHECK_GOAL_S else 'NOT met'}."
        ],
    )

    # ---- 3. incremental vs full ------------------------------------------------------------------------------
    inc_src = source("incremental", corpus(40))

    def compile_one(mode: str) -> Any:
        queued = wiki.compile_source(
            get_database(), actor, wiki.CompileRequest(source_id=UUID(inc_src), mode=mode)
        )
        bid = queued.result.build.id
        assert (
            compile_build(
                get_database(), bid, CompileContext(account_id=actor.account_id), client=chat
            ).status
            == "succeeded"
        )
        return wiki.get_build(get_database(), actor, bid)

    full = compile_one("full")
    call(
        "POST",
        f"/api/knowledge/sources/{inc_src}/snapshots",
        (201,),
        headers=headers,
        json_body={"files": corpus(40, changed=17)},
    )
    inc = compile_one("incremental")
    assert inc.impact is not None
    print_table(
        "Full vs incremental build, 40 documents, one changed (fake provider, ~4 characters per token)",
        ["build", "output tokens", "input tokens", "pages written by the model", "pages carried over"],
        [
            ["full", full.output_tokens, full.input_tokens, full.pages_written, full.pages_reused],
            ["incremental", inc.output_tokens, inc.input_tokens, inc.pages_written, inc.pages_reused],
        ],
        notes=[
            f"output tokens {inc.output_tokens / full.output_tokens:.2f}x of full; input tokens "
            f"{inc.input_tokens / full.input_tokens:.2f}x; scheduled: {', '.join(inc.impact['scheduled'])}."
        ],
    )
    chat.close()
    fake.__exit__(None, None, None)
    print(f"\n{machine()}; `{COMMAND}` took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
