"""A slow OpenAI-compatible embeddings endpoint on loopback (``POST /v1/embeddings``): every call sleeps
``delay_s`` before answering deterministic vectors of the requested dimensions; ``calls`` counts the requests
and ``texts`` records every text embedded. Setting ``down`` makes it answer 503 (an outage) until it is cleared.
Clearing ``gate`` stalls every request until it is set again (``arrived`` is set when a request comes in), so a
test can order events around an embedder that has not answered yet without timing anything. ``vectors`` replaces
the deterministic digest vectors (bench/peer_mem0.py serves a hashing embedder's through it).

The handler sends with Nagle's algorithm off: its headers and body are two writes, and with Nagle on the body waits
for the client's delayed ACK of the headers, about 40 ms a call on Linux loopback."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def vector(text: str, dimensions: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [float(digest[i % len(digest)] + 1) for i in range(dimensions)]


class SlowEmbeddings:
    """``with SlowEmbeddings(delay_s=0.4) as server:`` serves on ``server.base_url``; ``server.calls`` counts
    the embedding requests answered or being answered."""

    def __init__(
        self,
        delay_s: float,
        vectors: Callable[[list[str], int], list[list[float]]] | None = None,
        port: int = 0,
    ) -> None:
        self.delay_s = delay_s
        make_vectors = vectors or (lambda texts, dims: [vector(t, dims) for t in texts])
        self.calls = 0
        self.texts: list[str] = []
        self.down = False
        self.gate = threading.Event()
        self.gate.set()
        self.arrived = threading.Event()
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                with provider._lock:
                    provider.calls += 1
                    provider.texts.extend(texts)
                provider.arrived.set()
                provider.gate.wait()
                time.sleep(provider.delay_s)
                if provider.down:
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                dims = int(body.get("dimensions") or 8)
                data = json.dumps(
                    {
                        "object": "list",
                        "model": body.get("model", "slow"),
                        "data": [
                            {"object": "embedding", "index": i, "embedding": v}
                            for i, v in enumerate(make_vectors(texts, dims))
                        ],
                        "usage": {"prompt_tokens": 0, "total_tokens": 0},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> SlowEmbeddings:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.gate.set()
        self._server.shutdown()
        self._server.server_close()
