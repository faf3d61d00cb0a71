"""``core.http_origin``: the kept-alive POST client the HTTP embedder uses, against real servers on loopback.

Each behaviour a hostile or flaky provider can cause is scripted per path by ``Provider``: connections reused and
replaced, the total time bound on a trickled body, the reply size bound (declared, streamed, gzip-decoded), TLS."""

from __future__ import annotations

import gzip
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from agentmate.core import http_origin
from agentmate.core.http_origin import HttpOrigin, OriginError, OriginTimeout, Reply, ReplyTooLarge
from tests.fakes.https_server import HttpsServer, QuietServer


class Provider:
    """HTTP/1.1 on loopback. ``connections`` counts the TCP connections accepted, ``seen`` the requests (path,
    headers, body). Paths: ``/ok`` echoes, ``/close-silently`` answers then closes without saying so,
    ``/trickle`` sends a 40-byte body one byte every 50 ms, ``/big`` declares ``big`` bytes, ``/stream`` streams
    ``big`` bytes chunked, ``/hold`` answers as ``/ok`` once ``release`` is set, ``/short`` closes after 10 of the 100 bytes it declares, ``/gzip`` sends ``gzip_plain`` gzip-encoded, ``/br`` claims an encoding not asked for."""

    def __init__(self) -> None:
        self.connections = 0
        self.seen: list[tuple[str, dict[str, str], bytes]] = []
        self.big = 0
        self.gzip_plain = b""
        self.release = threading.Event()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                provider.connections += 1

            def do_POST(self) -> None:
                try:
                    self._answer()
                except OSError:
                    pass  # a client that gave up at its bound

            def _answer(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                provider.seen.append((self.path, dict(self.headers.items()), body))
                route = self.path.split("?", 1)[0]
                if route == "/trickle":
                    self._head(200, 40)
                    for _ in range(40):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.05)
                elif route == "/big":
                    self._head(200, provider.big)
                    self.wfile.write(b"x" * provider.big)
                elif route == "/stream":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for start in range(0, provider.big, 4096):
                        chunk = b"x" * min(4096, provider.big - start)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.write(b"0\r\n\r\n")
                elif route == "/hold":
                    provider.release.wait(10)
                    self._head(200, len(body))
                    self.wfile.write(body)
                elif route == "/short":
                    self._head(200, 100)
                    self.wfile.write(b"x" * 10)
                    self.close_connection = True
                elif route in ("/gzip", "/br"):
                    packed = gzip.compress(provider.gzip_plain)
                    self._head(200, len(packed), {"Content-Encoding": "gzip" if route == "/gzip" else "br"})
                    self.wfile.write(packed)
                else:
                    self._head(200, len(body))
                    self.wfile.write(body)
                    self.close_connection = route == "/close-silently"

            def _head(self, status: int, length: int, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Length", str(length))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()

        self._httpd = QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Provider:
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _post(origin: HttpOrigin, body: bytes, *, timeout: float) -> Reply:
    """One POST, its two halves back to back (as ``OpenAIEmbedder.embed`` makes it)."""
    exchange = origin.send(body, timeout=timeout)
    assert exchange is not None
    return exchange.reply()


@pytest.fixture
def provider() -> Iterator[Provider]:
    with Provider() as server:
        yield server


def test_posts_keep_one_connection_alive_and_send_the_callers_headers(provider: Provider) -> None:
    origin = HttpOrigin(provider.url + "/ok?v=1", headers={"Authorization": "Bearer k"})
    replies = [_post(origin, f"body {i}".encode(), timeout=5) for i in range(3)]
    origin.close()
    assert [r.body for r in replies] == [b"body 0", b"body 1", b"body 2"]
    assert replies[0].status == 200 and replies[0].headers.get("content-length") == "6"
    assert provider.connections == 1
    path, headers, _ = provider.seen[0]
    assert path == "/ok?v=1"
    assert headers["Authorization"] == "Bearer k"
    assert headers["Accept-Encoding"] == "gzip"


def test_a_kept_connection_the_server_closed_is_replaced_once_without_an_error(provider: Provider) -> None:
    origin = HttpOrigin(provider.url + "/close-silently", headers={})
    first = _post(origin, b"one", timeout=5)
    time.sleep(0.1)  # let the server's close reach this side
    second = _post(origin, b"two", timeout=5)
    assert (first.body, second.body) == (b"one", b"two")
    assert provider.connections == 2
    assert [body for _, _, body in provider.seen] == [b"one", b"two"]


def test_a_connection_idle_past_the_age_limit_is_not_reused(
    provider: Provider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(http_origin, "MAX_IDLE_AGE_S", 0.0)
    origin = HttpOrigin(provider.url + "/ok", headers={})
    _post(origin, b"a", timeout=5)
    time.sleep(0.01)
    _post(origin, b"b", timeout=5)
    assert provider.connections == 2


def test_a_request_sent_now_is_read_later_and_kept_only_never_connects(provider: Provider) -> None:
    origin = HttpOrigin(provider.url + "/hold", headers={})
    assert origin.send(b"early", timeout=5, kept_only=True) is None  # no kept connection: nothing sent
    provider.release.set()
    _post(origin, b"warm", timeout=5)
    provider.release.clear()
    exchange = origin.send(b"later", timeout=5, kept_only=True)
    assert exchange is not None
    assert not exchange.ready(0.05)  # the server holds its reply
    provider.release.set()
    assert exchange.ready(5)
    assert exchange.reply().body == b"later"
    assert provider.connections == 1


def test_a_reply_not_read_by_its_bound_is_given_up_with_its_connection(provider: Provider) -> None:
    origin = HttpOrigin(provider.url + "/hold", headers={})
    provider.release.set()
    _post(origin, b"warm", timeout=5)
    provider.release.clear()
    exchange = origin.send(b"held", timeout=5, kept_only=True)
    assert exchange is not None
    with pytest.raises(OriginTimeout):
        exchange.reply(until=time.monotonic() + 0.05)
    provider.release.set()
    assert origin.send(b"next", timeout=5, kept_only=True) is None  # that connection was closed, not kept
    assert _post(origin, b"next", timeout=5).body == b"next"


def test_a_trickled_body_is_bounded_by_the_timeout_as_a_whole(provider: Provider) -> None:
    # Each byte arrives well within the timeout, so a bound per read alone would return the whole body after 2 s
    # (40 bytes, 50 ms apart); only a bound on the body as a whole raises.
    origin = HttpOrigin(provider.url + "/trickle", headers={})
    with pytest.raises(OriginTimeout):
        _post(origin, b"", timeout=0.5)


@pytest.mark.parametrize("route", ["/big", "/stream"])
def test_a_reply_over_the_size_bound_is_refused(provider: Provider, route: str) -> None:
    provider.big = 200_000
    origin = HttpOrigin(provider.url + route, headers={}, max_reply_bytes=100_000)
    with pytest.raises(ReplyTooLarge):
        _post(origin, b"", timeout=5)
    provider.big = 50_000
    assert _post(origin, b"", timeout=5).body == b"x" * 50_000


def test_gzip_is_decoded_and_a_gzip_bomb_stops_at_the_bound(provider: Provider) -> None:
    origin = HttpOrigin(provider.url + "/gzip", headers={}, max_reply_bytes=100_000)
    provider.gzip_plain = b'{"data": []}'
    assert _post(origin, b"", timeout=5).body == b'{"data": []}'
    provider.gzip_plain = b"0" * 50_000_000  # 50 MB that packs into ~50 KB
    with pytest.raises(ReplyTooLarge):
        _post(origin, b"", timeout=5)


def test_an_encoding_not_asked_for_is_an_error(provider: Provider) -> None:
    provider.gzip_plain = b"{}"
    with pytest.raises(OriginError, match="Content-Encoding"):
        _post(HttpOrigin(provider.url + "/br", headers={}), b"", timeout=5)


def test_a_body_cut_short_of_its_declared_length_is_an_origin_error(provider: Provider) -> None:
    with pytest.raises(OriginError, match="IncompleteRead"):
        _post(HttpOrigin(provider.url + "/short", headers={}), b"", timeout=5)


def test_a_refused_connection_is_an_origin_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens once the socket closes
    with pytest.raises(OriginError) as caught:
        _post(
            HttpOrigin(f"http://127.0.0.1:{port}/v1", headers={"Authorization": "Bearer SECRET"}),
            b"",
            timeout=5,
        )
    assert "SECRET" not in str(caught.value)


def test_https_verifies_the_server_against_the_configured_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with HttpsServer() as server:
        url = server.document("/v1/embeddings", {"ok": True})
        http_origin._tls_context.cache_clear()
        with pytest.raises(
            OriginError, match="CERTIFICATE_VERIFY_FAILED"
        ):  # certifi does not know the test CA
            _post(HttpOrigin(url, headers={}), b"{}", timeout=5)
        monkeypatch.setenv("SSL_CERT_FILE", server.ca_pem(tmp_path))
        http_origin._tls_context.cache_clear()
        try:
            reply = _post(HttpOrigin(url, headers={}), b"{}", timeout=5)
        finally:
            http_origin._tls_context.cache_clear()
    assert (reply.status, reply.body) == (200, b'{"ok": true}')


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///nohost", "file:///etc/passwd"])
def test_only_http_and_https_urls_with_a_host_are_accepted(url: str) -> None:
    with pytest.raises(ValueError, match="http"):
        HttpOrigin(url, headers={})
