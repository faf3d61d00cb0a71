"""Issue 26 (session 14): the loopback embedding server's delayed-ACK stall, and why the fakes send with Nagle off.

    PYTHONPATH=shared:. .venv/bin/python bench/embedder_stall.py [--calls 100]

The OpenAI-compatible fake the tests and ``bench/peer_mem0.py`` embed through (``tests/fakes/embeddings_provider.py``,
no delay) answers in two writes, the headers then the body. With Nagle's algorithm on, the body waits for the
client's delayed ACK of the headers. This times ``OpenAIEmbedder.embed`` (one keep-alive connection; httpx until session 15, core.http_origin since) against
the fake with Nagle on (as it was, and as ``bench/peer_mem0.py``'s copy of it was until session 14) and off (as it is),
interleaved in blocks. Every store-vs-mem0 ratio measured through the stalling server compared two times each that
much larger than the work compared (docs/benchmarks.md, "Issue 26: session 14").
"""

from __future__ import annotations

import argparse
import time

from common import machine, print_table, ratio, summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="measured calls per variant")
    args = parser.parse_args(argv)

    from agentmate.retrieval.embedders import OpenAIEmbedder
    from tests.fakes.embeddings_provider import SlowEmbeddings

    times: dict[bool, list[float]] = {True: [], False: []}
    with SlowEmbeddings(delay_s=0) as server:
        handler = server._server.RequestHandlerClass
        embedder = OpenAIEmbedder(base_url=server.base_url, model="fake", dimensions=8, api_key="bench")
        for i in range(args.calls // 10 + 1):
            for nagle_off in (True, False):
                handler.disable_nagle_algorithm = nagle_off  # type: ignore[attr-defined]
                embedder.close()  # a new connection: the option is set when the server accepts it
                embedder = OpenAIEmbedder(
                    base_url=server.base_url, model="fake", dimensions=8, api_key="bench"
                )
                embedder.embed(["warm-up"])
                for j in range(10):
                    t0 = time.perf_counter_ns()
                    embedder.embed([f"text {i} {j}"])
                    times[nagle_off].append((time.perf_counter_ns() - t0) / 1e6)
        embedder.close()
    off, on = summary(times[True]), summary(times[False])
    print_table(
        "Issue 26: one embedding call through the loopback fake, Nagle on vs off",
        ["server", "calls", "p50 ms", "p95 ms", "p50 vs Nagle off"],
        [
            ["Nagle off (disable_nagle_algorithm = True, as now)", off["n"], off["p50"], off["p95"], "1.00x"],
            ["Nagle on (as before session 14)", on["n"], on["p50"], on["p95"], ratio(on["p50"], off["p50"])],
        ],
        notes=[
            f"Command: `PYTHONPATH=shared:. .venv/bin/python bench/embedder_stall.py --calls {args.calls}`. "
            f"Machine: {machine()}."
        ],
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
