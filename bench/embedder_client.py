"""Issue 26 (session 15): the HTTP embedder's client, ``core.http_origin`` (http.client) against httpx.

    PYTHONPATH=shared:. .venv/bin/python bench/embedder_client.py [--calls 2000] [--texts 1]

A memory store waits for its embedding call, so the client's own cost is on the store's critical path (and, on a
worker thread, competes for the GIL with the request). This times ``OpenAIEmbedder.embed`` as it is (its
``HttpOrigin``) against the same embedder whose origin is an ``httpx.Client`` (the client it used until session
15: same request bytes, same parsing), interleaved in blocks of 20, one keep-alive connection each, against the
tests' loopback fake (``tests/fakes/embeddings_provider.py``, no delay, 384-d vectors) in a subprocess of its own.
Printed: wall time per call and this process's CPU time per call, each as a ratio to httpx in the same run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from typing import Any

from common import ROOT, machine, print_table, ratio, summary

DIMENSIONS = 384
SERVE = (
    "import sys, time; from tests.fakes.embeddings_provider import SlowEmbeddings\n"
    "with SlowEmbeddings(delay_s=0) as s:\n    print(s.base_url, flush=True); sys.stdin.read()\n"
)


class Answered:
    """An exchange whose reply is already in (what ``HttpxOrigin.send`` answers)."""

    def __init__(self, reply: Any) -> None:
        self._reply = reply

    def reply(self, until: float | None = None) -> Any:
        return self._reply


class HttpxOrigin:
    """The httpx client the embedder used until session 15, behind ``HttpOrigin.send`` (the whole POST made at
    once; ``embed`` reads its reply straight after)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        import httpx

        self._url = url
        self._client = httpx.Client(timeout=httpx.Timeout(10.0), headers=headers)

    def send(self, body: bytes, *, timeout: float, kept_only: bool = False) -> Answered:
        from agentmate.core.http_origin import Reply

        response = self._client.post(self._url, content=body, timeout=timeout)
        return Answered(Reply(response.status_code, response.headers, response.content))  # type: ignore[arg-type]

    def close(self) -> None:
        self._client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="measured calls per client")
    parser.add_argument("--texts", type=int, default=1, help="texts per call")
    args = parser.parse_args(argv)

    from agentmate.retrieval.embedders import OpenAIEmbedder

    server = subprocess.Popen(
        [sys.executable, "-c", SERVE], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        base_url = server.stdout.readline().strip()  # type: ignore[union-attr]
        embedders = {
            name: OpenAIEmbedder(base_url, "bench", "fake", DIMENSIONS) for name in ("origin", "httpx")
        }
        embedders["httpx"]._origin = HttpxOrigin(  # type: ignore[assignment]
            embedders["httpx"]._url, {"Authorization": "Bearer bench", "Content-Type": "application/json"}
        )
        wall: dict[str, list[float]] = {name: [] for name in embedders}
        cpu: dict[str, float] = dict.fromkeys(embedders, 0.0)
        texts = [f"I prefer tea over coffee in the morning, note {i}" for i in range(args.texts)]
        for embedder in embedders.values():
            for _ in range(50):
                embedder.embed(texts)
        for block in range(args.calls // 20):
            order = list(embedders) if block % 2 else list(reversed(embedders))
            for name in order:
                c0 = time.process_time()
                for _ in range(20):
                    t0 = time.perf_counter_ns()
                    embedders[name].embed(texts)
                    wall[name].append((time.perf_counter_ns() - t0) / 1e6)
                cpu[name] += time.process_time() - c0
        for embedder in embedders.values():
            embedder.close()
    finally:
        server.stdin.close()  # type: ignore[union-attr]
        server.wait(timeout=10)
    new, old = summary(wall["origin"]), summary(wall["httpx"])
    calls = len(wall["origin"])
    cpu_new, cpu_old = cpu["origin"] / calls * 1e3, cpu["httpx"] / calls * 1e3
    print_table(
        f"Issue 26: one embedding call ({args.texts} text(s), {DIMENSIONS}-d) through the loopback fake",
        ["client", "calls", "p50 ms", "p95 ms", "p50 vs httpx", "CPU ms per call", "CPU vs httpx"],
        [
            ["httpx.Client (until session 15)", old["n"], old["p50"], old["p95"], "1.00x", cpu_old, "1.00x"],
            [
                "core.http_origin.HttpOrigin (now)",
                new["n"],
                new["p50"],
                new["p95"],
                ratio(new["p50"], old["p50"]),
                cpu_new,
                ratio(cpu_new, cpu_old),
            ],
        ],
        notes=[
            f"Command: `PYTHONPATH=shared:. .venv/bin/python bench/embedder_client.py --calls {args.calls} "
            f"--texts {args.texts}`. Machine: {machine()}. Interleaved in blocks of 20; CPU is this process's "
            "(the server runs in its own)."
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
