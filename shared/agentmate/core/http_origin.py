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
- **Two halves**: a POST is ``send`` (the request written) then ``Exchange.reply`` (the reply read), so a caller
  can do its own work while the provider does its own, on one thread (a memory store sends its embedding request,
  then runs its first database round trip: ``OpenAIEmbedder.start``). ``send(kept_only=True)`` sends only over a
  kept-alive connection and never waits for a connect; ``Exchange.ready(t)`` waits for the reply's first bytes.
- No redirects are followed, no cookies kept, and environment proxies are not used (a deployment reaches its
  providers directly or through a NAT gateway: docs/deploy.md §3).

Errors: ``OriginTimeout`` and ``OriginError`` (connection and protocol failures: worth a retry), ``ReplyTooLarge``
(not). Their messages name no header, so they never carry the caller's credentials.
"""

from __future__ import annotations

import http.client
import os
import select
import ssl
import threading
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from functools import lru_cache
from urllib.parse import urlsplit

__all__ = ["Exchange", "HttpOrigin", "OriginError", "OriginTimeout", "Reply", "ReplyTooLarge"]

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
    """``HttpOrigin(url, headers=...)``, then ``send(body, timeout=...).reply()`` from any thread, with any other
    work between the two halves; ``close()`` when done."""

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

    def send(self, body: bytes, *, timeout: float, kept_only: bool = False) -> Exchange | None:
        """Send the request (``timeout`` bounds the whole exchange, its reply included). With ``kept_only``, only
        over a kept-alive connection: None when there is none, so the caller never waits here for a connect."""
        deadline = time.monotonic() + timeout
        conn, reused = self._checkout(timeout, kept_only)
        if conn is None:
            return None
        exchange = Exchange(self, conn, reused, body, deadline, timeout)
        try:
            try:
                exchange.write()
            except _STALE:
                if kept_only:  # the caller would rather not wait for a connect
                    exchange.abandon()
                    return None
                if not reused:
                    raise
                exchange.reconnect()
        except BaseException as exc:
            exchange.abandon()
            raise _origin_error(exc, f"{timeout:g} s") from exc
        return exchange

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

    def _checkout(self, timeout: float, kept_only: bool) -> tuple[http.client.HTTPConnection | None, bool]:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if now - since <= MAX_IDLE_AGE_S:
                    return conn, True
                conn.close()
        return (None, False) if kept_only else (self._connection(timeout), False)

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < self._max_idle:
                self._idle.append((conn, time.monotonic()))
                return
        conn.close()


def _origin_error(exc: BaseException, bound: str) -> BaseException:
    """What a failed exchange raises: ``ReplyTooLarge`` as it is, a timeout as ``OriginTimeout`` (naming the
    ``bound`` it reached), any other connection or protocol failure as ``OriginError``."""
    if isinstance(exc, ReplyTooLarge | OriginError):
        return exc
    if isinstance(exc, TimeoutError):  # socket.timeout is TimeoutError
        return OriginTimeout(f"timed out after {bound}")
    if isinstance(exc, OSError | http.client.HTTPException):  # ssl.SSLError is an OSError
        return OriginError(f"{type(exc).__name__}: {exc}")
    return exc


class Exchange:
    """One request sent over one connection, its reply still to read (``HttpOrigin.send``)."""

    def __init__(
        self,
        origin: HttpOrigin,
        conn: http.client.HTTPConnection,
        reused: bool,
        body: bytes,
        deadline: float,
        timeout: float,
    ) -> None:
        self._origin = origin
        self._conn = conn
        self._reused = reused
        self._body = body
        self._deadline = deadline
        self._timeout = timeout

    def ready(self, timeout: float) -> bool:
        """Whether the reply has begun to arrive (or the connection closed) within ``timeout`` seconds: ``reply``
        will not wait for its first byte."""
        sock = self._conn.sock
        if sock is None or (isinstance(sock, ssl.SSLSocket) and sock.pending()):
            return True
        poller = select.poll()  # not select.select: it fails on descriptors past 1023
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(max(0.0, timeout) * 1000))

    def reply(self, until: float | None = None) -> Reply:
        """Read the reply, within the exchange's timeout and, if given, by the ``time.monotonic()`` value
        ``until``. The connection goes back to the origin's pool when the reply allows it."""
        deadline = self._deadline if until is None else min(self._deadline, until)
        conn = self._conn
        try:
            try:
                _time_left(conn, deadline)
                response = conn.getresponse()
            except _STALE:
                if not self._reused:
                    raise
                conn = self.reconnect(deadline)
                _time_left(conn, deadline)
                response = conn.getresponse()
            reply = Reply(response.status, response.msg, self._read(response, deadline))
        except BaseException as exc:
            self.abandon()
            cut_short = until is not None and until < self._deadline
            raise _origin_error(
                exc, "the caller's deadline" if cut_short else f"{self._timeout:g} s"
            ) from exc
        if response.will_close:
            conn.close()
        else:
            self._origin._checkin(conn)
        return reply

    def abandon(self) -> None:
        """Give the exchange up: its connection, mid-request, is closed."""
        self._conn.close()

    def write(self, deadline: float | None = None) -> None:
        _time_left(self._conn, self._deadline if deadline is None else deadline)
        self._conn.request("POST", self._origin._target, body=self._body, headers=self._origin._headers)

    def reconnect(self, deadline: float | None = None) -> http.client.HTTPConnection:
        """A kept connection the server had closed: the request again, once, on a new one."""
        self._conn.close()
        self._conn = self._origin._connection(self._timeout)
        self._reused = False
        self.write(deadline)
        return self._conn

    def _read(self, response: http.client.HTTPResponse, deadline: float) -> bytes:
        cap = self._origin._max_reply_bytes
        declared = response.getheader("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > cap:
            raise ReplyTooLarge(f"the reply declares {declared} bytes, more than {cap}")
        chunks: list[bytes] = []
        size = 0
        # read1, not read: one receive per call, so the deadline bounds the body as a whole.
        while response.length is None or response.length > 0:  # None: chunked, or until the server closes
            _time_left(self._conn, deadline)
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
        return _decoded(data, response.getheader("Content-Encoding"), cap)


def _time_left(conn: http.client.HTTPConnection, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    conn.timeout = left  # used by a connect still to come
    if conn.sock is not None:
        conn.sock.settimeout(left)


def _decoded(data: bytes, content_encoding: str | None, cap: int) -> bytes:
    encoding = (content_encoding or "identity").strip().lower()
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
