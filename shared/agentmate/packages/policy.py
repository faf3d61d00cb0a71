"""Where git sync may connect (SSRF policy); pure checks, no HTTP imported (registration uses it).

URLs: an allowed scheme (https by default), no credentials, an allow-listed host and port (or, with ``any_host``,
any host and port: the OAuth client-metadata fetcher, which must reach whatever public host a client names; the
address checks below then carry the whole defence). Addresses: every
address a host resolves to must be public, unless it lies in a network the operator opted in
(``allowed_private_networks``, e.g. a self-hosted GitLab's 10.1.0.0/16); link-local and cloud-metadata addresses
are refused whatever the configuration says. ``resolve`` returns the single
checked address the connection must use (agentmate.packages.net connects to exactly it).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from agentmate.core.errors import TooLarge
from agentmate.packages.limits import PackageSettings

Resolver = Callable[[str, int], list[str]]
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Cloud instance-metadata endpoints: refused even when private networks are opted in.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.170.23",
        "100.100.100.200",
        "fd00:ec2::254",
        "fd00:ec2::23",
        "192.0.0.192",
    )
)
_DEFAULT_PORTS = {"https": 443, "http": 80}


class Refused(Exception):
    """An outbound request the policy does not allow (the message says why, naming no internals)."""


class Upstream(Exception):
    """The remote host failed or answered something unusable."""


class Exhausted(Exception):
    """A sync limit was reached (message names the limit)."""


class OutOfTime(Exhausted):
    """The sync's time budget ran out: unlike a size limit, a longer budget (the job worker's) may finish it."""


class SyncTimedOut(TooLarge):
    """The 413 of a sync that ran out of time (``OutOfTime``): a caller may queue it as a job instead."""


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class NetPolicy:
    """Where sync may connect. ``allowed_hosts`` entries: ``host`` (the scheme's default port only),
    ``host:port`` or ``host:*``. ``any_host`` skips the allow-list (any host, any port); the scheme and address
    checks still apply."""

    allowed_hosts: tuple[str, ...] = ("github.com", "codeload.github.com", "gitlab.com")
    allowed_schemes: tuple[str, ...] = ("https",)
    allowed_private_networks: tuple[str, ...] = ()
    resolver: Resolver = field(default=system_resolver, compare=False)
    any_host: bool = False

    @classmethod
    def from_settings(cls, settings: PackageSettings, resolver: Resolver | None = None) -> NetPolicy:
        return cls(
            allowed_hosts=tuple(h.strip().lower() for h in settings.allowed_hosts.split(",") if h.strip()),
            allowed_schemes=tuple(
                s.strip().lower() for s in settings.allowed_schemes.split(",") if s.strip()
            ),
            allowed_private_networks=tuple(
                n.strip() for n in settings.allowed_private_networks.split(",") if n.strip()
            ),
            resolver=resolver or system_resolver,
        )

    def url_problem(self, url: str) -> str | None:
        """Why this URL may not be fetched (checked before any DNS or connection), or None."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError:
            return "is not a valid URL"
        scheme = parts.scheme.lower()
        if scheme not in self.allowed_schemes:
            return (
                f"scheme {scheme or '(none)'!r} is not allowed (allowed: {', '.join(self.allowed_schemes)})"
            )
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            return "must not carry credentials (configure an access token instead)"
        host = (parts.hostname or "").lower()
        if not host:
            return "has no host"
        if self.any_host:
            return None
        effective = port or _DEFAULT_PORTS[scheme]
        for entry in self.allowed_hosts:
            name, entry_port = _parse_entry(entry)
            if name != host:
                continue
            if (
                entry_port == "*"
                or (entry_port.isdigit() and int(entry_port) == effective)
                or (not entry_port and effective == _DEFAULT_PORTS[scheme])
            ):
                return None
        return f"host {host}:{effective} is not in the allow-list ({self.allowed_hosts_text()})"

    def allowed_hosts_text(self) -> str:
        """The allow-list as a refusal names it: an entry without a port allows the scheme's default port."""
        listed = ", ".join(self.allowed_hosts) or "none"
        return f"allowed hosts: {listed}; an operator adds hosts with PACKAGES_ALLOWED_HOSTS"

    def check_url(self, url: str) -> None:
        problem = self.url_problem(url)
        if problem:
            raise Refused(f"URL {problem}")

    def address_problem(self, ip: IPAddress) -> str | None:
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip in METADATA_ADDRESSES:
            return "a cloud metadata address"
        if ip.is_link_local:
            return "a link-local address"
        if ip.is_multicast or ip.is_unspecified or ip.is_reserved:
            return "not a unicast address"
        if ip.is_global and not _is_shared(ip):
            return None
        if any(ip in ipaddress.ip_network(net, strict=False) for net in self.allowed_private_networks):
            return None
        return "a private or loopback address"

    def resolve(self, host: str, port: int) -> str:
        """The one address to connect to: every address the host resolves to must pass."""
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
            candidates = [str(literal)]
        except ValueError:
            try:
                candidates = self.resolver(host, port)
            except OSError as exc:
                raise Upstream(f"cannot resolve {host}") from exc
        if not candidates:
            raise Upstream(f"cannot resolve {host}")
        for candidate in candidates:
            problem = self.address_problem(ipaddress.ip_address(candidate))
            if problem:
                raise Refused(f"{host} resolves to {problem}")
        return candidates[0]


def _parse_entry(entry: str) -> tuple[str, str]:
    """``host``, ``host:port``, ``host:*``, ``[v6]:port`` → (host, port spec or '')."""
    if entry.startswith("["):
        host, _, rest = entry[1:].partition("]")
        return host, rest[1:] if rest.startswith(":") else ""
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, port
    return entry, ""


def _is_shared(ip: IPAddress) -> bool:
    return isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10")
