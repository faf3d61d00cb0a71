"""Outbound HTTP for git sync, safe against SSRF.

Every request goes through ``SafeHttp``: the URL must use an allowed scheme, carry no credentials and name an
allow-listed host (and port); the host is resolved **once per connection** by the policy's resolver, every
address it returns must be public (or private with the operator's opt-in; link-local and cloud-metadata never),
and the socket connects to the address that was checked, while TLS still verifies the certificate and sends SNI
for the host name. A later DNS answer therefore cannot swap the address (DNS rebinding). Redirects are never
followed automatically: each hop is checked again as a new URL, and credentials are sent only to the host they
were configured for. Environment proxies are ignored (a proxy would connect on our behalf, unchecked).
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx

from agentmate.packages.policy import Exhausted, NetPolicy, OutOfTime, Refused, Upstream

_MAX_REDIRECTS = 5


class _CheckedBackend(httpcore.NetworkBackend):
    """Connects to the address the policy checked; TLS (SNI, certificate) still uses the host name."""

    def __init__(self, policy: NetPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        address = self._policy.resolve(host, port)
        return self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise Refused("unix sockets are not allowed")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Stream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except httpcore.TimeoutException as exc:
            raise OutOfTime("the sync time budget ran out while downloading") from exc
        except httpcore.NetworkError as exc:
            raise Upstream("the connection failed while downloading") from exc

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close:
            close()


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport over httpcore whose every TCP connection goes through the policy."""

    def __init__(self, policy: NetPolicy, ssl_context: ssl.SSLContext | None = None) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            network_backend=_CheckedBackend(policy),
            max_connections=4,
            retries=0,
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        req = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        try:
            resp = self._pool.handle_request(req)
        except httpcore.TimeoutException as exc:
            raise OutOfTime("the sync time budget ran out waiting for the host") from exc
        except (httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise Upstream(f"could not reach {request.url.host}") from exc
        assert isinstance(resp.stream, Iterable)
        return httpx.Response(
            status_code=resp.status,
            headers=resp.headers,
            stream=_Stream(resp.stream),
            extensions=resp.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class Deadline:
    """The time left of one sync's budget."""

    def __init__(self, budget_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._end = clock() + budget_s
        self.budget_s = budget_s

    def remaining(self) -> float:
        left = self._end - self._clock()
        if left <= 0:
            raise OutOfTime(f"the sync took longer than sync_budget_s={self.budget_s:g}")
        return left


class SafeHttp:
    """Requests with per-hop checks. ``tokens`` maps host → access token, sent to that host only."""

    def __init__(
        self,
        policy: NetPolicy,
        deadline: Deadline,
        tokens: dict[str, str] | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.policy = policy
        self.deadline = deadline
        self._tokens = {k.lower(): v for k, v in (tokens or {}).items()}
        self._client = httpx.Client(
            transport=PinnedTransport(policy, ssl_context), follow_redirects=False, trust_env=False
        )

    def __enter__(self) -> SafeHttp:
        return self

    def __exit__(self, *exc: object) -> None:
        self._client.close()

    def token_for(self, url: str) -> str | None:
        return self._tokens.get((urlsplit(url).hostname or "").lower())

    def open(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        content: bytes | Iterable[bytes] | None = None,
        auth: Callable[[str], dict[str, str]] | None = None,
        max_redirects: int = _MAX_REDIRECTS,
    ) -> tuple[httpx.Response, str]:
        """Send, following up to ``max_redirects`` redirects (GET only), each hop checked; returns the streaming
        final response and its URL. ``auth(url)`` gives the credential headers for a URL (only called for a
        token's host)."""
        for _ in range(max_redirects + 1):
            self.policy.check_url(url)
            hop_headers = dict(headers or {})
            if auth and self.token_for(url):
                hop_headers.update(auth(url))
            timeout = httpx.Timeout(self.deadline.remaining())
            request = self._client.build_request(
                method, url, headers=hop_headers, content=content, timeout=timeout
            )
            response = self._client.send(request, stream=True)
            if response.status_code in (301, 302, 303, 307, 308) and "location" in response.headers:
                response.close()
                if max_redirects == 0:
                    raise Upstream(
                        f"{urlsplit(url).hostname} answered with a redirect, which is not followed"
                    )
                if method != "GET":
                    raise Upstream(f"{urlsplit(url).hostname} redirected a {method} request")
                url = urljoin(url, response.headers["location"])
                continue
            return response, url
        raise Upstream(f"more than {max_redirects} redirects")


def read_capped(response: httpx.Response, cap: int, deadline: Deadline, what: str) -> Iterator[bytes]:
    """The response body in chunks, stopping with Exhausted past ``cap`` bytes or the deadline."""
    seen = 0
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > cap:
        raise Exhausted(f"{what} is {declared} bytes; the limit is max_download_bytes={cap}")
    for chunk in response.iter_raw():
        seen += len(chunk)
        if seen > cap:
            raise Exhausted(f"{what} exceeds max_download_bytes={cap}")
        deadline.remaining()
        yield chunk
