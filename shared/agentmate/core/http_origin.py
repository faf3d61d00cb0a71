"""POST to one HTTP(S) URL over kept-alive connections, on the standard library's ``http.client``.

Why not httpx here: the embedding call sits on a memory store's critical path, and httpx's per-request machinery
(request and response models, the transport stack, header normalisation) costs about half a millisecond more
than ``http.client`` on the same keep-alive connection (``bench/embedder_client.py``). This is the small part of a
client that one JSON API needs, with the bounds a hostile provider calls for:

- **Time**: ``timeout`` bounds connecting and every read of the status line and headers (as httpx's per-phase
  timeout does), and the body's reads *together*, so a server that trickles its body cannot hold the caller.
- **Size**: a reply body over ``max_reply_bytes`` (after gzip decoding) raises ``ReplyTooLarge``; a gzip bomb is
  decoded only up to that bound.
- **Connections**: up to ``max_idle`` idle connections are kept, none longer than ``MAX_IDLE_AGE_S`` (a NAT
  gateway drops idle flows silently; the request would then wait out its timeout). A kept connection the server
  closed in the meantime is replaced once, transparently: callers post only idempotent requests.
- No redirects are followed, no cookies kept, and environment proxies are not used (a deployment reaches its
  providers directly or through a NAT gateway: docs/deploy.md §3).

Errors: ``OriginTimeout`` and ``OriginError`` (connection and protocol failures: worth a retry), ``ReplyTooLarge``
(not). Their messages name no header, so they never carry the caller's credentials.
"""

from __future__ import annotations

import http.client
import os
import ssl
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache
from urllib.parse import urlsplit

__all__ = ["HttpOrigin", "OriginError", "OriginTimeout", "Reply", "ReplyTooLarge"]

MAX_IDLE_AGE_S = 30.0
_READ_CHUNK = 65536


class OriginError(Exception):
    """The exchange failed before a complete reply: connection refused or reset, TLS, a malformed response."""


class OriginTimeout(OriginError):
    """Connecting, a read of the headers, or the whole body took longer than the timeout."""


class ReplyTooLarge(Exception):
    """The reply's body is larger than the bound; retrying will not make it smaller."""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: Message  # case-insensitive ``get``
    body: bytes


# A kept-alive connection the server has closed fails in one of these ways on its next use.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """Verifying TLS with the roots httpx used: SSL_CERT_FILE / SSL_CERT_DIR when set (OpenSSL reads them), else
    certifi's bundle when installed, else the system's."""
    if os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context()
    try:
        import certifi
    except ImportError:  # pragma: no cover - certifi comes with httpx, which the layer carries
        return ssl.create_default_context()
    return ssl.create_default_context(cafile=certifi.where())


class HttpOrigin:
    """``HttpOrigin(url, headers=...)`` then ``post(body, timeout=...)`` from any thread; ``close()`` when done."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str],
        max_reply_bytes: int = 32 << 20,
        max_idle: int = 4,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("the URL must be http:// or https:// with a host")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # Accept-Encoding given here stops http.client from adding its own "identity".
        self._headers = {**headers, "Accept-Encoding": "gzip"}
        self._max_reply_bytes = max_reply_bytes
        self._max_idle = max_idle
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()

    def post(self, body: bytes, *, timeout: float) -> Reply:
        deadline = time.monotonic() + timeout
        conn, reused = self._checkout(timeout)
        try:
            try:
                response = self._exchange(conn, body, deadline)
            except _STALE:
                if not reused:
                    raise
                conn.close()
                conn = self._connection(timeout)
                response = self._exchange(conn, body, deadline)
            reply = Reply(response.status, response.msg, self._body(conn, response, deadline))
        except ReplyTooLarge:
            conn.close()
            raise
        except TimeoutError as exc:  # socket.timeout is TimeoutError
            conn.close()
            raise OriginTimeout(f"timed out after {timeout:g} s") from exc
        except (OSError, http.client.HTTPException) as exc:  # ssl.SSLError is an OSError
            conn.close()
            raise OriginError(f"{type(exc).__name__}: {exc}") from exc
        if response.will_close:
            conn.close()
        else:
            self._checkin(conn)
        return reply

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    # -- internals ---------------------------------------------------------------------------------

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=timeout, context=_tls_context()
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _checkout(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since <= MAX_IDLE_AGE_S:
                    return conn, True
                conn.close()
        return self._connection(timeout), False

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()

    @staticmethod
    def _time_left(conn: http.client.HTTPConnection, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.timeout = left  # used by a connect still to come
        if conn.sock is not None:
            conn.sock.settimeout(left)

    def _exchange(
        self, conn: http.client.HTTPConnection, body: bytes, deadline: float
    ) -> http.client.HTTPResponse:
        self._time_left(conn, deadline)
        conn.request("POST", self._target, body=body, headers=self._headers)
        self._time_left(conn, deadline)
        return conn.getresponse()

    def _body(
        self, conn: http.client.HTTPConnection, response: http.client.HTTPResponse, deadline: float
    ) -> bytes:
        cap = self._max_reply_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise ReplyTooLarge(f"the reply declares {declared} bytes, more than {cap}")
        chunks: list[bytes] = []
        size = 0
        # read1, not read: one receive per call, so the deadline bounds the body as a whole.
        while response.length is None or response.length > 0:  # None: chunked, or until the server closes
            self._time_left(conn, deadline)
            chunk = response.read1(_READ_CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > cap:
                raise ReplyTooLarge(f"the reply is larger than {cap} bytes")
            chunks.append(chunk)
        data = b"".join(chunks)
        if response.length:  # the server closed before the length it declared
            raise http.client.IncompleteRead(data, response.length)
        response.close()  # read to its end: the connection can carry the next request
        encoding = (response.getheader("Content-Encoding") or "identity").strip().lower()
        if encoding == "identity":
            return data
        if encoding != "gzip":
            raise OriginError(f"unsupported Content-Encoding {encoding[:40]!r}")
        decoder = zlib.decompressobj(wbits=31)  # 31: a gzip header and trailer
        try:
            plain = decoder.decompress(data, cap + 1)
        except zlib.error as exc:
            raise OriginError(f"undecodable gzip body: {exc}") from exc
        if len(plain) > cap or decoder.unconsumed_tail:
            raise ReplyTooLarge(f"the reply is larger than {cap} bytes once decoded")
        return plain
