"""An https server on loopback whose certificate a ``trustme`` test CA signed: stands in for a client's host serving
its OAuth client ID metadata document (issue 24), or for an https provider (a POST answers as a GET would).

``with HttpsServer() as server:`` listens on ``127.0.0.1`` (a random port); ``server.url(path)`` is an https URL on
it, ``server.ca_pem(tmp_path)`` writes the CA a client must trust (``OAUTH_CIMD_CA_BUNDLE``). Each path answers
what ``server.route(path, ...)`` set: a JSON document (``document``), any body with a status, content type and
headers, a redirect (``redirect``), a huge body streamed without Content-Length (``huge``), or a body that stops
after its first bytes and holds the connection until the server closes (``slow``). ``server.hits[path]`` counts
the requests each path received; an unknown path is a 404.
"""

from __future__ import annotations

import json
import ssl
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import trustme


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    huge: int = 0  # stream this many bytes without Content-Length
    slow: bool = False  # send the first bytes, then hold until the server closes


class QuietServer(ThreadingHTTPServer):
    """A client that refuses the certificate or gives up on a slow body is what the tests ask for: its broken
    connection is not an error worth printing (the plain-HTTP fakes of the embedding client's tests use it too)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        if not isinstance(exc, (ConnectionError, ssl.SSLError, TimeoutError)):
            super().handle_error(request, client_address)


class HttpsServer:
    def __init__(self) -> None:
        self.ca = trustme.CA()
        self.hits: Counter[str] = Counter()
        self.routes: dict[str, Route] = {}
        self.released = threading.Event()
        server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_context)
        self._httpd = QuietServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.socket = server_context.wrap_socket(
            self._httpd.socket, server_side=True, do_handshake_on_connect=False
        )
        self.port = self._httpd.server_address[1]

    def __enter__(self) -> HttpsServer:
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def ca_pem(self, folder: Path) -> str:
        path = folder / "test-ca.pem"
        self.ca.cert_pem.write_to_path(str(path))
        return str(path)

    def route(self, path: str, **route: Any) -> str:
        self.routes[path] = Route(**route)
        return self.url(path)

    def document(self, path: str, doc: dict[str, Any], **route: Any) -> str:
        return self.route(path, body=json.dumps(doc).encode(), **route)

    def redirect(self, path: str, location: str) -> str:
        return self.route(path, status=302, headers={"Location": location})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                server.hits[path] += 1
                route = server.routes.get(path)
                if route is None:
                    self._answer(Route(status=404, body=b'{"error": "not found"}'))
                    return
                self._answer(route)

            def do_POST(self) -> None:  # the same routes; the request body is read and dropped
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def _answer(self, route: Route) -> None:
                self.send_response(route.status)
                self.send_header("Content-Type", route.content_type)
                for name, value in route.headers.items():
                    self.send_header(name, value)
                if route.huge:
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self._stream_huge(route.huge)
                    return
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                if route.slow:
                    self.wfile.write(route.body[:10])
                    self.wfile.flush()
                    server.released.wait()  # never finishes while the test runs
                    return
                self.wfile.write(route.body)

            def _stream_huge(self, size: int) -> None:
                chunk = b" " * 1024
                try:
                    for _ in range(size // len(chunk)):
                        self.wfile.write(chunk)
                except OSError:
                    pass  # the client hung up at its limit

        return Handler
