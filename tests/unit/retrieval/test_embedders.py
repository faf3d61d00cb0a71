"""Embedders. The OpenAI client is exercised against a real HTTP server on loopback that speaks the
OpenAI embeddings protocol, scripted per test (success, 429, 500, 400, slow responses)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from agentmate.retrieval.embedders import (
    DEFAULT_STATIC_MODEL_PATH,
    Embedder,
    EmbeddingError,
    HashingEmbedder,
    OpenAIEmbedder,
    StaticModelEmbedder,
    build_embedder,
    default_offline_embedder,
)
from tests.fakes.https_server import QuietServer

API_KEY = "sk-test-SECRET-0123456789abcdef"
DIMS = 4


def fake_vector(text: str) -> list[float]:
    """What the fake server returns for a text: deterministic, unnormalised."""
    return [float(len(text)), 1.0, float(sum(map(ord, text)) % 7), 2.0]


def unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


@dataclass
class Script:
    """Actions the server takes, one per request, then 'ok' forever."""

    actions: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_action(self) -> dict[str, Any]:
        with self.lock:
            return self.actions.pop(0) if self.actions else {"do": "ok"}


class OpenAIHandler(BaseHTTPRequestHandler):
    script: Script
    protocol_version = "HTTP/1.1"  # keep-alive, as providers do
    disable_nagle_algorithm = True  # headers and body are two writes (tests/fakes/embeddings_provider.py)

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(
        self, status: int, body: Any, headers: dict[str, str] | None = None, body_after: float = 0.0
    ) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            if body_after:  # the status line and headers now, the body later
                self.wfile.flush()
                time.sleep(body_after)
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        script = self.server.script  # type: ignore[attr-defined]
        with script.lock:
            script.requests.append(
                {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
            )
        action = script.next_action()
        if action.get("sleep"):
            time.sleep(action["sleep"])
        if self.headers.get("Authorization") != f"Bearer {API_KEY}":
            self._send(401, {"error": {"message": "bad key"}})
            return
        if action["do"] == "status":
            self._send(
                action["status"], action.get("body", {"error": {"message": "nope"}}), action.get("headers")
            )
            return
        dims = body.get("dimensions", DIMS)
        data = [
            {"object": "embedding", "index": i, "embedding": (fake_vector(t) + [0.0] * dims)[:dims]}
            for i, t in enumerate(body["input"])
        ]
        if action["do"] == "junk":
            self._send(200, action.get("body", {"unexpected": True}))
            return
        if action["do"] == "wrong_dims":
            data = [{**d, "embedding": d["embedding"] + [0.5]} for d in data]
        data.reverse()  # servers may answer out of order: the client must sort by index
        self._send(
            200,
            {"object": "list", "data": data, "model": body["model"]},
            body_after=action.get("body_after", 0.0),
        )


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script()
    httpd = QuietServer(("127.0.0.1", 0), OpenAIHandler)
    httpd.daemon_threads = True
    httpd.script = script  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def make_client(base_url: str, sleeps: list[float] | None = None, **kw: Any) -> OpenAIEmbedder:
    kw.setdefault("backoff_base_s", 0.001)
    record = sleeps if sleeps is not None else []
    return OpenAIEmbedder(base_url, API_KEY, "text-embedding-test", DIMS, sleep=record.append, **kw)


# --- OpenAI-compatible client -------------------------------------------------------------------


def test_batches_requests_and_orders_results_by_index(server: tuple[str, Script]) -> None:
    base_url, script = server
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    with make_client(base_url, batch_size=2) as emb:
        vectors = emb.embed(texts)
    assert [r["body"]["input"] for r in script.requests] == [
        ["alpha", "beta"],
        ["gamma", "delta"],
        ["epsilon"],
    ]
    for text, vec in zip(texts, vectors, strict=True):
        assert vec == pytest.approx(unit(fake_vector(text)))
    first = script.requests[0]
    assert first["path"] == "/v1/embeddings"
    assert first["auth"] == f"Bearer {API_KEY}"
    assert first["body"]["model"] == "text-embedding-test"
    assert first["body"]["dimensions"] == DIMS
    assert first["body"]["encoding_format"] == "float"
    assert isinstance(emb, Embedder)
    assert emb.name == "text-embedding-test" and emb.dimensions == DIMS


def test_empty_input_makes_no_request_and_blank_text_is_sent_as_a_space(server: tuple[str, Script]) -> None:
    base_url, script = server
    with make_client(base_url) as emb:
        assert emb.embed([]) == []
        assert not script.requests
        emb.embed([""])
    assert script.requests[0]["body"]["input"] == [" "]


def test_429_is_retried_and_retry_after_is_honoured_up_to_the_cap(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [
        {"do": "status", "status": 429, "headers": {"Retry-After": "2"}},
        {"do": "status", "status": 429, "headers": {"Retry-After": "3600"}},
    ]
    sleeps: list[float] = []
    with make_client(base_url, sleeps, retry_after_max_s=5.0) as emb:
        vectors = emb.embed(["hello"])
    assert vectors[0] == pytest.approx(unit(fake_vector("hello")))
    assert len(script.requests) == 3
    assert sleeps == [2.0, 5.0]


def test_500_then_success_is_retried_with_backoff(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "status", "status": 500}, {"do": "status", "status": 503}]
    sleeps: list[float] = []
    with make_client(base_url, sleeps, backoff_base_s=0.1, backoff_max_s=10) as emb:
        assert len(emb.embed(["x"])) == 1
    assert len(script.requests) == 3
    assert 0.05 <= sleeps[0] <= 0.1 and 0.1 <= sleeps[1] <= 0.2  # exponential, with jitter in [0.5, 1]


def test_400_is_not_retried_and_reports_the_server_message(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "status", "status": 400, "body": {"error": {"message": "input too long"}}}]
    with make_client(base_url) as emb, pytest.raises(EmbeddingError, match=r"400.*input too long"):
        emb.embed(["x"])
    assert len(script.requests) == 1


def test_retries_are_bounded_and_then_fail(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "status", "status": 502}] * 10
    with make_client(base_url, max_retries=2) as emb, pytest.raises(EmbeddingError, match="after 3 attempts"):
        emb.embed(["x"])
    assert len(script.requests) == 3


def test_a_timeout_fails_after_bounded_retries(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "ok", "sleep": 0.6}] * 3
    started = time.perf_counter()
    with make_client(base_url, timeout_s=0.15, max_retries=2) as emb:
        with pytest.raises(EmbeddingError, match="timeout") as info:
            emb.embed(["slow"])
    elapsed = time.perf_counter() - started
    assert len(script.requests) == 3
    assert elapsed < 2.0
    assert API_KEY not in str(info.value)


def test_the_api_key_never_appears_in_errors(server: tuple[str, Script]) -> None:
    base_url, script = server
    echo = {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}
    script.actions = [{"do": "status", "status": 401, "body": echo}]
    with make_client(base_url) as emb:
        with pytest.raises(EmbeddingError) as info:
            emb.embed(["x"])
        assert API_KEY not in str(info.value) and "***" in str(info.value)
        assert API_KEY not in repr(emb)


def test_connection_refused_is_retried_then_fails_without_the_key() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    with make_client(f"http://127.0.0.1:{port}", sleeps, max_retries=1) as emb:
        with pytest.raises(EmbeddingError, match="transport error") as info:
            emb.embed(["x"])
    assert len(sleeps) == 1
    assert API_KEY not in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        {"unexpected": True},
        b"not json",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"data": [{"index": 0, "embedding": "ab"}]}',
    ],
    ids=["no data", "not json", "nested too deep", "wrong types"],
)
def test_a_malformed_success_response_is_an_error_and_not_retried(
    server: tuple[str, Script], body: Any
) -> None:
    base_url, script = server
    script.actions = [{"do": "junk", "body": body}]
    with make_client(base_url) as emb, pytest.raises(EmbeddingError, match="malformed"):
        emb.embed(["x"])
    assert len(script.requests) == 1


def test_retry_after_as_an_http_date_is_understood(server: tuple[str, Script]) -> None:
    from email.utils import formatdate

    base_url, script = server
    script.actions = [
        {"do": "status", "status": 503, "headers": {"Retry-After": formatdate(time.time() + 3)}}
    ]
    sleeps: list[float] = []
    with make_client(base_url, sleeps) as emb:
        emb.embed(["x"])
    assert 1.0 < sleeps[0] <= 3.0


def test_credentials_in_the_base_url_are_not_shown(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "status", "status": 400}]
    with make_client(base_url.replace("http://", "http://user:pw-secret@") + "?key=q-secret") as emb:
        with pytest.raises(EmbeddingError) as info:
            emb.embed(["x"])
        assert "secret" not in str(info.value) and "secret" not in repr(emb)


def test_wrong_dimensions_in_the_response_is_an_error(server: tuple[str, Script]) -> None:
    base_url, script = server
    script.actions = [{"do": "wrong_dims"}]
    with make_client(base_url) as emb, pytest.raises(EmbeddingError, match="dimensions"):
        emb.embed(["x"])


def test_concurrent_calls_share_one_client(server: tuple[str, Script]) -> None:
    base_url, _ = server
    with make_client(base_url) as emb:
        results: dict[int, list[list[float]]] = {}

        def work(i: int) -> None:
            results[i] = emb.embed([f"t{i}", f"u{i}"])

        threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for i in range(8):
        assert results[i][0] == pytest.approx(unit(fake_vector(f"t{i}")))


# --- hashing ------------------------------------------------------------------------------------


def cos(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _until(condition: Any) -> None:
    """Wait (at most 10 s) for the loopback server to have seen what the test expects."""
    for _ in range(1000):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the server never saw it")


def _started_over_a_kept_connection(
    emb: OpenAIEmbedder, script: Script, text: str, action: dict[str, Any] | None = None
) -> Any:
    """Keep a connection alive (one embed), script the next reply, and start embedding ``text`` over it."""
    emb.embed(["warm-up"])
    if action is not None:
        script.actions = [action]
    call = emb.start([text])
    assert call is not None
    return call


# -- start(): the request sent now, its reply read later on the caller's thread (a memory store's overlap) -------


def test_start_sends_only_over_a_kept_connection_and_its_result_is_embeds(server: tuple[str, Script]) -> None:
    base_url, script = server
    with make_client(base_url) as emb:
        assert emb.start(["alpha"]) is None  # no connection kept yet: the caller embeds another way
        assert not script.requests
        emb.embed(["warm-up"])
        call = emb.start(["alpha"])
        assert call is not None
        _until(lambda: len(script.requests) == 2)  # sent before anyone asks for the result
        assert call.result()[0] == pytest.approx(unit(fake_vector("alpha")))
        assert emb.start(["a", "b", "c"] * 50) is None  # more than one batch (64)
    assert len(script.requests) == 2


def test_a_result_not_ready_in_time_keeps_its_request_in_flight_for_the_next_wait(
    server: tuple[str, Script],
) -> None:
    base_url, script = server
    with make_client(base_url) as emb:
        call = _started_over_a_kept_connection(emb, script, "slow", {"do": "ok", "sleep": 0.3})
        with pytest.raises(FutureTimeout):
            call.result(timeout=0.01)
        assert call.result(timeout=10)[0] == pytest.approx(unit(fake_vector("slow")))
    assert len(script.requests) == 2  # the warm-up and the one slow request: nothing sent twice


def test_a_reply_begun_within_the_wait_is_read_to_its_end(server: tuple[str, Script]) -> None:
    # The headers come at once, the body 0.1 s later: past the caller's 0.05 s wait but within FINISH_READING_S,
    # so the reply is read, not given up (which would cost a retry after a back-off)
    base_url, script = server
    with make_client(base_url) as emb:
        call = _started_over_a_kept_connection(emb, script, "split", {"do": "ok", "body_after": 0.1})
        _until(lambda: len(script.requests) == 2)
        time.sleep(0.02)  # the headers have left the server (it flushes them before its 0.1 s pause)
        assert call.result(timeout=0.05)[0] == pytest.approx(unit(fake_vector("split")))
    assert len(script.requests) == 2


def test_a_retry_waits_for_a_later_result_and_then_answers(server: tuple[str, Script]) -> None:
    base_url, script = server
    sleeps: list[float] = []
    with make_client(base_url, sleeps, backoff_base_s=1.0) as emb:
        call = _started_over_a_kept_connection(emb, script, "retried", {"do": "status", "status": 503})
        with pytest.raises(FutureTimeout):  # the 503 came, the back-off is longer than this wait
            call.result(timeout=0.15)
        assert sleeps == []
        assert call.result()[0] == pytest.approx(unit(fake_vector("retried")))
    assert len(sleeps) == 1 and 0.5 <= sleeps[0] <= 1.0
    assert len(script.requests) == 3


def test_a_cancelled_call_closes_its_connection(server: tuple[str, Script]) -> None:
    base_url, script = server
    with make_client(base_url) as emb:
        call = _started_over_a_kept_connection(emb, script, "dropped")
        call.cancel()
        assert emb.start(["next"]) is None  # its connection was not kept: nothing to send over
        assert emb.embed(["next"])[0] == pytest.approx(unit(fake_vector("next")))


def test_hashing_is_normalised_and_similar_texts_are_closer() -> None:
    emb = HashingEmbedder(256)
    a, b, c = emb.embed(["reset the user password", "password reset for users", "tomato garden watering"])
    assert len(a) == 256
    assert math.isclose(math.sqrt(sum(x * x for x in a)), 1.0, rel_tol=1e-9)
    assert cos(a, b) > cos(a, c)
    empty = emb.embed(["", "!!!"])
    assert empty[0] == empty[1] and math.isclose(sum(x * x for x in empty[0]), 1.0)


def test_hashing_is_identical_across_processes_and_hash_seeds() -> None:
    code = (
        "import json; from agentmate.retrieval.embedders import HashingEmbedder;"
        "print(json.dumps(HashingEmbedder(64).embed(['知识库 hello world'])[0]))"
    )
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(Path(__file__).parents[3] / "shared")}
        outs.append(
            subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
    assert outs[0] == outs[1]
    assert json.loads(outs[0]) == pytest.approx(HashingEmbedder(64).embed(["知识库 hello world"])[0])


# --- static model -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def static() -> StaticModelEmbedder:
    emb = StaticModelEmbedder()
    emb.load()
    return emb


def test_bundled_static_model_is_small_and_256_dims() -> None:
    size = sum(p.stat().st_size for p in DEFAULT_STATIC_MODEL_PATH.rglob("*") if p.is_file())
    assert size <= 20 * 1024 * 1024
    assert StaticModelEmbedder().dimensions == 256


def test_static_model_matches_paraphrases(static: StaticModelEmbedder) -> None:
    q, target, other = static.embed(
        ["I forgot my login credentials", "how to reset a lost password", "heavy rain expected on the coast"]
    )
    assert cos(q, target) > cos(q, other) + 0.1
    assert math.isclose(sum(x * x for x in q), 1.0, rel_tol=1e-5)


def test_static_model_falls_back_to_hashing_for_text_it_cannot_read(static: StaticModelEmbedder) -> None:
    zh_doc, zh_query, en = static.embed(["知识库中的文档会切分成小段", "知识库文档", "knowledge base"])
    for v in (zh_doc, zh_query, en):
        assert all(math.isfinite(x) for x in v)
        assert math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5)
    assert zh_doc == pytest.approx(HashingEmbedder(256).embed(["知识库中的文档会切分成小段"])[0])
    assert cos(zh_doc, zh_query) > 0.3
    blank = static.embed(["", "   "])
    assert all(math.isclose(sum(x * x for x in v), 1.0, rel_tol=1e-5) for v in blank)
    assert static.embed([]) == []


def test_static_model_is_safe_to_load_from_many_threads() -> None:
    emb = StaticModelEmbedder()
    out: list[list[list[float]]] = []
    threads = [threading.Thread(target=lambda: out.append(emb.embed(["same text"]))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 4 and all(o == out[0] for o in out)


def test_a_missing_model_folder_fails_fast_without_any_hub_lookup(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="not found"):
        StaticModelEmbedder(tmp_path / "nope")


# --- factory and import weight ------------------------------------------------------------------


def test_build_embedder_by_kind(server: tuple[str, Script]) -> None:
    base_url, _ = server
    assert isinstance(build_embedder("hashing", dimensions=32), HashingEmbedder)
    assert build_embedder("hashing").dimensions == 256
    assert isinstance(build_embedder("static"), StaticModelEmbedder)
    assert isinstance(default_offline_embedder(), StaticModelEmbedder)
    emb = build_embedder("openai", base_url=base_url, api_key=API_KEY, model="m", dimensions=DIMS)
    assert isinstance(emb, OpenAIEmbedder)
    emb.close()
    with pytest.raises(ValueError, match="unknown embedder kind"):
        build_embedder("word2vec")


def test_importing_the_retrieval_modules_stays_light() -> None:
    code = (
        "import sys; import agentmate.retrieval.embedders, agentmate.retrieval.vector_index,"
        " agentmate.retrieval.lexical, agentmate.retrieval.fusion;"
        "heavy = [m for m in ('numpy', 'httpx', 'model2vec', 'qdrant_client', 'qdrant_edge', 'tokenizers')"
        " if m in sys.modules]; print(heavy)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[3] / "shared")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
