"""The protected-resource side's words (RFC 9728, RFC 6750): where a resource's metadata document is, and the
``WWW-Authenticate`` challenges REST and MCP answer with. Light on purpose: every function's error path and the
MCP app read it, so it imports only ``auth.audience``."""

from __future__ import annotations

from collections.abc import Sequence

from agentmate.auth.audience import canonical

WELL_KNOWN = "/.well-known/oauth-protected-resource"
INSUFFICIENT_SCOPE = "insufficient_scope"
INVALID_TOKEN = "invalid_token"


def metadata_url(issuer: str, resource: str) -> str:
    """RFC 9728 §3.1: the well-known path inserted between the host and the resource's path
    (``{issuer}/mcp/todos`` → ``{issuer}/.well-known/oauth-protected-resource/mcp/todos``)."""
    base = canonical(issuer)
    target = canonical(resource)
    path = target[len(base) :] if target.startswith(base) else ""
    return f"{base}{WELL_KNOWN}{path}"


def _quoted(value: str) -> str:
    """An RFC 6750 §3 quoted value: printable ASCII without ``"`` or ``\\`` (anything else becomes a space)."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else " " for c in value)


def bearer_challenge(
    issuer: str,
    resource: str,
    scopes: Sequence[str],
    *,
    error: str | None = None,
    description: str | None = None,
    realm: str | None = None,
) -> str:
    """``Bearer [realm=…,] [error=…, error_description=…,] resource_metadata="…", scope="…"`` (RFC 6750 §3,
    RFC 9728 §5.1). ``scope`` lists what the request needs; it is left out when that is nothing."""
    params: list[tuple[str, str]] = []
    if realm:
        params.append(("realm", realm))
    if error:
        params.append(("error", error))
        if description:
            params.append(("error_description", description))
    params.append(("resource_metadata", metadata_url(issuer, resource)))
    if scopes:
        params.append(("scope", " ".join(scopes)))
    return "Bearer " + ", ".join(f'{name}="{_quoted(value)}"' for name, value in params)
