"""MCP vs REST: tools/call latency against the REST twin in the same run, and the MCP app's cold start.

What it measures (everything on 127.0.0.1, Postgres from infra.localpg, offline embeddings):

1. Warm latency. One uvicorn process serves the local runtime (REST route groups + the MCP app on one port,
   ``uvicorn --factory infra.local_app:build_local_app``). Per iteration, in turn:
   - REST   ``GET /api/todos/{id}``                    (httpx, keep-alive)
   - MCP    ``tools/call todo_get`` as raw JSON-RPC    (httpx, keep-alive, after initialize; same client as REST)
   - MCP    ``tools/call todo_get`` via the official SDK client (``ClientSession`` + ``streamable_http_client``)
   and the same three for ``POST /api/memory/search`` / ``memory_search``. Interleaving keeps drift out of
   the comparison. Goal: MCP (raw) p50 <= 1.5x REST p50.
2. Cold start. ``uvicorn functions.mcp.app:app`` (the container command) started fresh, timed from process
   spawn to the first answered ``tools/list``; median of several runs, with the bare import time of
   ``functions.mcp.app`` and of a REST route group for scale.

Run:
    PYTHONPATH=shared:. .venv/bin/python bench/mcp_bench.py [--iterations 300] [--cold-runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "shared"), str(REPO)]

PG_PORT = int(os.environ.get("AGENTMATE_BENCH_PG_PORT", "26433"))
PG_DIR = REPO / ".local" / "test-pg"
DATABASE = "agentmate_bench"
COMMAND = "PYTHONPATH=shared:. .venv/bin/python bench/mcp_bench.py"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare_database() -> dict[str, str]:
    """A fresh, migrated bench database; returns the environment the servers run with."""
    import psycopg

    from agentmate.core import migrate
    from infra import localpg

    localpg.start(PG_DIR, PG_PORT)
    with psycopg.connect(localpg.url(PG_PORT, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DATABASE}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    migrate.apply_all(localpg.url(PG_PORT, DATABASE))
    return {
        **os.environ,
        "PYTHONPATH": f"{REPO / 'shared'}:{REPO}",
        "DATABASE_URL": localpg.url(PG_PORT, DATABASE, role=localpg.APP_ROLE),
        "AGENTMATE_ENV": "dev",
        "EMBEDDING_BASE_URL": "",
        "QDRANT_URL": "",
        "VECTOR_PATH": "",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }


def start_server(args: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            *args,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.02)
    raise RuntimeError(f"server did not answer {url}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def seed(base: str) -> dict[str, Any]:
    """An account, a full-access key, one todo and a few dozen memories (via REST)."""
    import httpx

    email = f"bench-{uuid.uuid4().hex[:10]}@example.com"
    with httpx.Client(base_url=base, timeout=30) as http:
        http.post(
            "/api/auth/register", json={"email": email, "password": "bench password 1"}
        ).raise_for_status()
        token = http.post("/api/auth/login", json={"email": email, "password": "bench password 1"}).json()[
            "token"
        ]
        r = http.post(
            "/api/auth/apikeys",
            json={"name": "bench", "scopes": []},
            headers={"Authorization": f"Bearer {token}"},
        )
        r.raise_for_status()
        key = r.json()["key"]
        h = {"X-Api-Key": key}
        todo = http.post("/api/todos", json={"title": "bench todo", "tags": ["bench"]}, headers=h).json()
        topics = [
            "dark mode",
            "deploy on fridays",
            "python 3.11",
            "postgres row level security",
            "tabs vs spaces",
            "coffee order",
            "release checklist",
            "timezone Asia/Shanghai",
        ]
        for i in range(40):
            topic = topics[i % len(topics)]
            r = http.post(
                "/api/memory/entries",
                headers=h,
                json={
                    "memory_type": "semantic",
                    "content": f"Preference {i}: the user cares about {topic}.",
                    "evidence": [{"source_type": "chat", "source_id": f"msg-{i}", "excerpt": topic}],
                },
            )
            r.raise_for_status()
    return {"key": key, "todo_id": todo["id"]}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def warm_latency(
    base: str, data: dict[str, Any], iterations: int, warmup: int
) -> dict[str, list[float]]:
    import httpx
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    key, todo_id = data["key"], data["todo_id"]
    query = "which theme does the user like"
    samples: dict[str, list[float]] = {
        name: []
        for name in (
            "todo_get REST",
            "todo_get MCP raw",
            "todo_get MCP SDK",
            "memory_search REST",
            "memory_search MCP raw",
            "memory_search MCP SDK",
        )
    }

    async with (
        httpx.AsyncClient(base_url=base, headers={"X-Api-Key": key}, timeout=30) as http,
        httpx2.AsyncClient(headers={"X-Api-Key": key}, timeout=30) as http2,
        streamable_http_client(f"{base}/mcp", http_client=http2) as (read, write),
        ClientSession(read, write) as sdk,
    ):
        await sdk.initialize()
        init = await http.post("/mcp", json=INIT, headers=MCP_HEADERS)
        raw_headers = {
            **MCP_HEADERS,
            "Mcp-Session-Id": init.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        counter = 0

        async def raw_call(name: str, arguments: dict[str, Any]) -> None:
            nonlocal counter
            counter += 1
            r = await http.post(
                "/mcp",
                headers=raw_headers,
                json={
                    "jsonrpc": "2.0",
                    "id": counter,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                },
            )
            body = r.json()
            assert r.status_code == 200 and not body["result"].get("isError"), body

        async def sdk_call(name: str, arguments: dict[str, Any]) -> None:
            result = await sdk.call_tool(name, arguments)
            assert not result.is_error, result

        async def rest_get() -> None:
            r = await http.get(f"/api/todos/{todo_id}")
            assert r.status_code == 200, r.text

        async def rest_search() -> None:
            r = await http.post("/api/memory/search", json={"query": query})
            assert r.status_code == 200, r.text

        cases = [
            ("todo_get REST", rest_get),
            ("todo_get MCP raw", lambda: raw_call("todo_get", {"id": todo_id})),
            ("todo_get MCP SDK", lambda: sdk_call("todo_get", {"id": todo_id})),
            ("memory_search REST", rest_search),
            ("memory_search MCP raw", lambda: raw_call("memory_search", {"query": query})),
            ("memory_search MCP SDK", lambda: sdk_call("memory_search", {"query": query})),
        ]
        for i in range(warmup + iterations):
            for name, fn in cases:
                t0 = time.perf_counter()
                await fn()
                if i >= warmup:
                    samples[name].append((time.perf_counter() - t0) * 1000)
    return samples


def cold_start(env: dict[str, str], key: str, runs: int) -> dict[str, list[float]]:
    import httpx

    out: dict[str, list[float]] = {
        "MCP app: spawn -> first tools/list": [],
        "import functions.mcp.app": [],
        "import functions.todos.app (REST)": [],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for _ in range(runs):
        port = free_port()
        t0 = time.perf_counter()
        proc = start_server(["functions.mcp.app:app"], env, port)
        try:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(proc.stderr.read().decode() if proc.stderr else "server exited")
                try:
                    r = httpx.post(
                        f"http://127.0.0.1:{port}/mcp/todos",
                        json=body,
                        headers={**MCP_HEADERS, "X-Api-Key": key},
                        timeout=5,
                    )
                    if r.status_code == 200 and r.json()["result"]["tools"]:
                        break
                except httpx.TransportError:
                    pass
                time.sleep(0.005)
            out["MCP app: spawn -> first tools/list"].append((time.perf_counter() - t0) * 1000)
        finally:
            stop(proc)
        for module, name in (
            ("functions.mcp.app", "import functions.mcp.app"),
            ("functions.todos.app", "import functions.todos.app (REST)"),
        ):
            code = (
                f"import time; t = time.perf_counter(); import {module}; "
                "print((time.perf_counter() - t) * 1000)"
            )
            done = subprocess.run(
                [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
            )
            out[name].append(float(done.stdout.strip().splitlines()[-1]))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=5)
    args = parser.parse_args(argv)

    env = prepare_database()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start_server(["--factory", "infra.local_app:build_local_app"], env, port)
    try:
        wait_ready(f"{base}/api/health", server)
        data = seed(base)
        samples = asyncio.run(warm_latency(base, data, args.iterations, args.warmup))
    finally:
        stop(server)
    cold = cold_start(env, data["key"], args.cold_runs)

    print(
        f"\nWarm tools/call latency, {args.iterations} calls each after {args.warmup} warm-up, interleaved "
        "(ms; one uvicorn process serving REST + MCP on loopback)\n"
    )
    print(f"| {'operation':<24} | {'p50':>7} | {'p95':>7} | {'mean':>7} | {'p50 vs REST':>11} |")
    print(f"|{'-' * 26}|{'-' * 9}|{'-' * 9}|{'-' * 9}|{'-' * 13}|")
    for name, values in samples.items():
        rest = samples[name.split(" ")[0] + " REST"]
        ratio = statistics.median(values) / statistics.median(rest)
        print(
            f"| {name:<24} | {pct(values, 50):7.2f} | {pct(values, 95):7.2f} | {statistics.mean(values):7.2f} "
            f"| {ratio:10.2f}x |"
        )
    print(f"\nCold start, median of {args.cold_runs} (ms)\n")
    print(f"| {'what':<36} | {'median':>7} | {'min':>7} | {'max':>7} |")
    print(f"|{'-' * 38}|{'-' * 9}|{'-' * 9}|{'-' * 9}|")
    for name, values in cold.items():
        print(f"| {name:<36} | {statistics.median(values):7.0f} | {min(values):7.0f} | {max(values):7.0f} |")
    print(
        f"\ncommand: {COMMAND} --iterations {args.iterations} --warmup {args.warmup} --cold-runs {args.cold_runs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
