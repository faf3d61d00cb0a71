"""Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document, as the MCP authorization spec of
2026-07-28 uses it): a client whose ``client_id`` is an https URL is described by the JSON document at that URL.

The document is fetched through git ingest's SSRF-safe fetcher (``packages.net.SafeHttp``) in its any-host mode:
any host and port, https only, every address the host resolves to public (private networks only with
``OAUTH_CIMD_ALLOWED_PRIVATE_NETWORKS``; link-local and cloud-metadata addresses never), the socket pinned to the
checked address, no redirect followed (the document names its own URL, so a redirect could only point elsewhere),
at most ``oauth_cimd_max_bytes`` within ``oauth_cimd_timeout_s`` for the whole fetch, and the CA bundle of
``OAUTH_CIMD_CA_BUNDLE`` trusted beside the system's. The document is then checked (``validate_document``) and
cached in process by URL for ``min(Cache-Control max-age, oauth_cimd_cache_s)``; a failure is cached too, for
``FAILURE_TTL_S`` at most, so a bad URL cannot make every request fetch it again.

A document that cannot be used raises ``DocumentRefused`` with the reason, for the log: the client is then unknown
to the authorization server (``clients.get_client`` answers None), never a 500.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from agentmate.auth.oauth.settings import OAuthSettings

if TYPE_CHECKING:
    from mcp.shared.auth import OAuthClientInformationFull

MAX_URL_CHARS = 2048
MAX_NAME_CHARS = 200
MAX_REDIRECT_URIS = 10
FAILURE_TTL_S = 30
CACHE_ENTRIES = 256
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
# Schemes a redirect URI may never use, even as a native app's private-use scheme (RFC 8252 §7.1).
FORBIDDEN_SCHEMES = frozenset({"javascript", "data", "vbscript", "file", "about", "blob", "filesystem"})
_SECRET_FIELDS = ("client_secret", "client_secret_expires_at")


class DocumentRefused(Exception):
    """Why a client's metadata document cannot be used (logged; the client is then unknown)."""


def is_document_url(client_id: str) -> bool:
    """A client_id that names a metadata document (an http one is one too, to be refused: https only)."""
    return client_id[:8].lower() == "https://" or client_id[:7].lower() == "http://"


def client_id_problem(url: str) -> str | None:
    """Why this client_id URL cannot name a metadata document (checked before any DNS or connection), or None."""
    if len(url) > MAX_URL_CHARS:
        return f"is longer than {MAX_URL_CHARS} characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError:
        return "is not a valid URL"
    if parts.scheme != "https":
        return "must be an https URL"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "must not carry credentials"
    if not parts.hostname:
        return "has no host"
    if "#" in url:
        return "must not carry a fragment"
    segments = parts.path.split("/")
    if parts.path in ("", "/"):
        return "must have a path (the document's own, e.g. https://app.example/oauth/client.json)"
    if "." in segments or ".." in segments:
        return "must not contain . or .. path segments"
    return None


def redirect_uri_problem(uri: str, *, private_use: bool) -> str | None:
    """Why a redirect URI is refused, or None. Absolute, no fragment, no credentials; https, or http on a
    loopback host (a native app, RFC 8252 §7.3); with ``private_use`` also a native app's own scheme (§7.1)."""
    if len(uri) > MAX_URL_CHARS:
        return f"is longer than {MAX_URL_CHARS} characters"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return "is not a valid URL"
    scheme = parts.scheme.lower()
    if not scheme:
        return "must be an absolute URL"
    if "#" in uri:
        return "must not carry a fragment"
    if parts.username is not None or parts.password is not None:
        return "must not carry credentials"
    if scheme in ("https", "http"):
        host = (parts.hostname or "").lower()
        if not host:
            return "has no host"
        if scheme == "http" and host not in LOOPBACK_HOSTS:
            return "may use http only on a loopback host (127.0.0.1, [::1], localhost); use https"
        return None
    if not private_use:
        return "must use https (or http on a loopback host)"
    if scheme in FORBIDDEN_SCHEMES:
        return f"must not use the {scheme}: scheme"
    return None


def _bounded_text(doc: dict[str, Any], name: str, limit: int) -> None:
    value = doc.get(name)
    if value is not None and (not isinstance(value, str) or len(value) > limit):
        raise DocumentRefused(f"{name} must be a string of at most {limit} characters")


def _check_redirect_uris(value: object) -> None:
    if not isinstance(value, list) or not value:
        raise DocumentRefused("redirect_uris must be a non-empty list of URLs")
    if len(value) > MAX_REDIRECT_URIS:
        raise DocumentRefused(f"redirect_uris lists {len(value)} URLs; at most {MAX_REDIRECT_URIS}")
    for i, uri in enumerate(value):
        problem = redirect_uri_problem(uri, private_use=False) if isinstance(uri, str) else "must be a string"
        if problem:
            raise DocumentRefused(f"redirect_uris[{i}] {problem}")


def validate_document(url: str, body: bytes) -> OAuthClientInformationFull:
    """The client a fetched document describes; ``DocumentRefused`` naming the first problem otherwise."""
    from mcp.shared.auth import OAuthClientInformationFull
    from pydantic import ValidationError

    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise DocumentRefused("the document is not JSON") from None
    if not isinstance(doc, dict):
        raise DocumentRefused("the document is not a JSON object")
    if doc.get("client_id") != url:
        raise DocumentRefused("client_id in the document differs from the URL it was fetched from")
    if any(name in doc for name in _SECRET_FIELDS):
        raise DocumentRefused("a metadata document must not carry client_secret or client_secret_expires_at")
    method = doc.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise DocumentRefused(f"token_endpoint_auth_method must be none (a public client), not {method!r}")
    _check_redirect_uris(doc.get("redirect_uris"))
    _bounded_text(doc, "client_name", MAX_NAME_CHARS)
    _bounded_text(doc, "client_uri", MAX_URL_CHARS)
    client_uri = doc.get("client_uri")
    if client_uri and urlsplit(client_uri).scheme.lower() not in ("https", "http"):
        raise DocumentRefused("client_uri must be an http(s) URL")
    _bounded_text(doc, "scope", MAX_URL_CHARS)
    try:
        return OAuthClientInformationFull.model_validate({**doc, "token_endpoint_auth_method": "none"})
    except ValidationError as exc:
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        raise DocumentRefused(
            f"the document's fields are not valid client metadata: {', '.join(fields)}"
        ) from None


def max_age(cache_control: str | None) -> int | None:
    """Seconds a response may be cached by its Cache-Control (0 for no-store / no-cache), None when it says
    nothing."""
    if not cache_control:
        return None
    directives = [d.strip().lower() for d in cache_control.split(",")]
    if "no-store" in directives or "no-cache" in directives:
        return 0
    for directive in directives:
        name, _, value = directive.partition("=")
        if name.strip() == "max-age":
            value = value.strip().strip('"')
            return int(value) if value.isdigit() else 0
    return None


class _Entry(NamedTuple):
    expires_at: float
    client: OAuthClientInformationFull | None
    reason: str


class DocumentCache:
    """Fetched documents (and failures) by URL, at most ``CACHE_ENTRIES`` of them, in process."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(url)
            if entry is not None and entry.expires_at <= self._clock():
                del self._entries[url]
                return None
            return entry

    def put(
        self, url: str, ttl_s: float, client: OAuthClientInformationFull | None, reason: str = ""
    ) -> None:
        if ttl_s <= 0:
            return
        with self._lock:
            self._entries[url] = _Entry(self._clock() + ttl_s, client, reason)
            self._entries.move_to_end(url)
            while len(self._entries) > CACHE_ENTRIES:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


CACHE = DocumentCache()


def client_from_document(
    oauth: OAuthSettings, url: str, *, cache: DocumentCache = CACHE
) -> OAuthClientInformationFull:
    """The client the metadata document at ``url`` describes: from the cache, else fetched and validated.
    ``DocumentRefused`` (the reason) when it cannot be used."""
    problem = client_id_problem(url)
    if problem:
        raise DocumentRefused(f"client_id {problem}")
    entry = cache.get(url)
    if entry is not None:
        if entry.client is None:
            raise DocumentRefused(f"{entry.reason} (remembered)")
        return entry.client
    try:
        body, age = _fetch(oauth, url)
        client = validate_document(url, body)
    except DocumentRefused as exc:
        cache.put(url, min(FAILURE_TTL_S, oauth.oauth_cimd_cache_s), None, str(exc))
        raise
    ttl = oauth.oauth_cimd_cache_s if age is None else min(age, oauth.oauth_cimd_cache_s)
    cache.put(url, ttl, client)
    return client


def _fetch(oauth: OAuthSettings, url: str) -> tuple[bytes, int | None]:
    """The document's bytes and its Cache-Control max-age, fetched SSRF-safe within the size and time limits."""
    import httpx

    from agentmate.packages.net import Deadline, SafeHttp, read_capped
    from agentmate.packages.policy import Exhausted, NetPolicy, Refused, Upstream

    policy = NetPolicy(
        allowed_hosts=(),
        allowed_schemes=("https",),
        allowed_private_networks=_networks(oauth.oauth_cimd_allowed_private_networks),
        any_host=True,
    )
    deadline = Deadline(oauth.oauth_cimd_timeout_s)
    try:
        with SafeHttp(policy, deadline, ssl_context=_ssl_context(oauth.oauth_cimd_ca_bundle)) as http:
            response, _ = http.open("GET", url, headers={"Accept": "application/json"}, max_redirects=0)
            try:
                _check_response(response)
                cap = oauth.oauth_cimd_max_bytes
                body = b"".join(read_capped(response, cap, deadline, "the client metadata document"))
            finally:
                response.close()
    except (Refused, Upstream, Exhausted) as exc:
        raise DocumentRefused(str(exc)) from None
    except (httpx.HTTPError, OSError, ValueError) as exc:  # anything else the network can throw
        raise DocumentRefused(f"the document could not be fetched ({type(exc).__name__})") from None
    return body, max_age(response.headers.get("cache-control"))


def _check_response(response: Any) -> None:
    if response.status_code != 200:
        raise DocumentRefused(f"the document's URL answered HTTP {response.status_code}")
    media_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise DocumentRefused(
            f"the document is served as {media_type or 'no content type'}, not application/json"
        )


def _networks(setting: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in setting.split(",") if n.strip())


@lru_cache(maxsize=4)
def _ssl_context(ca_bundle: str) -> ssl.SSLContext:
    """The system's trusted CAs, plus the operator's bundle (a PEM file) when one is configured."""
    import httpx

    context = httpx.create_ssl_context()
    if ca_bundle:
        try:
            context.load_verify_locations(cafile=ca_bundle)
        except (OSError, ssl.SSLError):
            raise DocumentRefused("OAUTH_CIMD_CA_BUNDLE cannot be read as a PEM file") from None
    return context
