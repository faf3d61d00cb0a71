"""Which resource a request is for, and whether a token's audience covers it (RFC 8707, matched by path).

This server's resources are ``{issuer}/api`` (the REST API), ``{issuer}/mcp`` (the aggregate MCP endpoint and
every module under it) and ``{issuer}/mcp/<module>`` (that module alone). A token issued for a resource serves
that resource and every resource below it: a token for ``{issuer}/mcp`` serves ``/mcp/todos`` too, one for
``{issuer}/mcp/todos`` serves only ``/mcp/todos``. A token requested without a ``resource`` is bound to the
issuer itself, which covers every resource of this server (and no other server).
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from agentmate.core.mcp_modules import MCP_MODULES, MODULE_TABLE
from agentmate.core.scopes import SCOPES


def canonical(url: str) -> str:
    """A resource URL as compared: scheme and host lower-cased, no trailing slash, no query or fragment."""
    parts = urlsplit(url.strip())
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", ""))


def resource_for_path(issuer: str, path: str) -> str:
    """The resource a request path belongs to: ``/api/...`` → ``{issuer}/api``, ``/mcp`` → ``{issuer}/mcp``,
    ``/mcp/<module>/...`` → ``{issuer}/mcp/<module>``."""
    base = canonical(issuer)
    segments = [s for s in path.split("/") if s]
    if segments[:1] == ["mcp"]:
        if len(segments) > 1 and segments[1] in MCP_MODULES:
            return f"{base}/mcp/{segments[1]}"
        return f"{base}/mcp"
    return f"{base}/api"


def known_resources(issuer: str) -> tuple[str, ...]:
    """Every resource a token may be requested for (anything else is ``invalid_target``)."""
    base = canonical(issuer)
    return (base, f"{base}/api", f"{base}/mcp", *(f"{base}/mcp/{m}" for m in MCP_MODULES))


def covers(granted: str, requested: str) -> bool:
    """True when a token issued for ``granted`` may be used at ``requested`` (both canonical)."""
    return requested == granted or requested.startswith(granted + "/")


def scopes_for_resource(issuer: str, resource: str) -> tuple[str, ...]:
    """The scopes a token for ``resource`` may carry, in ``core.scopes`` order: all of them for the issuer itself
    and ``{issuer}/api``; for ``{issuer}/mcp/<module>`` the scopes that module's tools require or read (the
    context pack's layers); for
    ``{issuer}/mcp`` the union of every module's. Empty for a resource this server does not have."""
    base = canonical(issuer)
    target = canonical(resource)
    if target in (base, f"{base}/api"):
        return SCOPES
    wanted = {
        scope
        for module in MODULE_TABLE
        if target in (f"{base}/mcp", f"{base}/mcp/{module.name}")
        for scope in (*module.scopes, *module.reads)
    }
    return tuple(s for s in SCOPES if s in wanted)
