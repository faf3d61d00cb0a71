"""The per-account limits (``core.limits``, issue 25 §1) stated in the OpenAPI, once for every route group.

- Every authenticated operation answers **429** with ``Retry-After`` when the account's request rate or its
  concurrent expensive requests refuse it (the body names the limit: ``limit``, ``limit_value``,
  ``retry_after``; schema ``RateLimitProblem``). An operation that already documents a 429 of its own (the
  login throttle's) keeps it, with the account limits added to its description and the header stated.
- Every creating operation a stored-volume quota guards (``QUOTA_ROUTES``) documents **409** naming the quota
  (``x-quotas``: the ``max_*`` names, reported at ``GET /api/auth/usage``; the body's ``limit``,
  ``limit_value`` and ``used``).

``QUOTA_ROUTES`` is checked against the document by ``tests/contract/test_openapi_limits.py``: a path renamed
here or there fails it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from fastapi import FastAPI

PROBLEM = "application/problem+json"

QUOTA_ROUTES: dict[tuple[str, str], tuple[str, ...]] = {
    ("post", "/api/memory/entries"): ("max_memories",),
    ("post", "/api/memory/working/sessions/{session_id}/items"): ("max_working_items",),
    ("post", "/api/knowledge/sources"): ("max_sources",),
    ("post", "/api/skills/sources"): ("max_sources",),
    ("post", "/api/knowledge/sources/{source_id}/snapshots"): ("max_package_bytes",),
    ("post", "/api/knowledge/sources/{source_id}/sync"): ("max_package_bytes",),
    ("post", "/api/skills/sources/{source_id}/snapshots"): ("max_package_bytes",),
    ("post", "/api/skills/sources/{source_id}/sync"): ("max_package_bytes",),
    ("post", "/api/knowledge/compile"): ("max_builds_per_day",),
}
"""(method, path) → the quotas that can refuse it with a 409."""

RETRY_AFTER = {
    "description": "Whole seconds to wait before trying again",
    "schema": {"type": "integer", "minimum": 1},
}
_ACCOUNT_LIMITS = (
    "the account's request limits: `requests_per_minute` (LIMIT_REQUESTS_PER_MINUTE with a burst of "
    "LIMIT_REQUEST_BURST) or `concurrent_expensive_requests` (searches, context packs and syncs at once: "
    "LIMIT_CONCURRENT_EXPENSIVE); wait `Retry-After` seconds (GET /api/auth/usage lists the limits)"
)
RATE_LIMIT_PROBLEM: dict[str, Any] = {
    "title": "RateLimitProblem",
    "description": "A refusal by an account limit: a Problem naming the limit, its value and the wait",
    "allOf": [
        {"$ref": "#/components/schemas/Problem"},
        {
            "type": "object",
            "properties": {
                "limit": {
                    "type": "string",
                    "enum": ["requests_per_minute", "concurrent_expensive_requests"],
                    "description": "The limit that refused the request",
                },
                "limit_value": {"type": "integer", "description": "The limit's configured value"},
                "retry_after": {"type": "integer", "minimum": 1, "description": "As the Retry-After header"},
            },
        },
    ],
}


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema.get("paths", {}).items():
        for method, operation in item.items():
            if isinstance(operation, dict) and "responses" in operation:
                yield method, path, operation


def _rate_limited(responses: dict[str, Any]) -> None:
    own = responses.get("429")
    if own is None:
        responses["429"] = {
            "description": "Refused by " + _ACCOUNT_LIMITS,
            "headers": {"Retry-After": RETRY_AFTER},
            "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/RateLimitProblem"}}},
        }
        return
    if _ACCOUNT_LIMITS not in own.get("description", ""):
        own["description"] = own.get("description", "").rstrip(".") + "; or refused by " + _ACCOUNT_LIMITS
    own.setdefault("headers", {}).setdefault("Retry-After", RETRY_AFTER)


def _quota_conflict(operation: dict[str, Any], quotas: tuple[str, ...]) -> None:
    names = ", ".join(f"`{q}` (LIMIT_{q.upper()})" for q in quotas)
    text = (
        f"Or the stored-volume quota {names} is reached: the body's `limit`, `limit_value` and `used` name it "
        "(GET /api/auth/usage); a replay, or a write that stores nothing new, is never refused"
    )
    responses = operation["responses"]
    conflict = responses.setdefault(
        "409",
        {
            "description": "Conflict",
            "content": {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        },
    )
    if text not in conflict.get("description", ""):
        conflict["description"] = conflict.get("description", "Conflict").rstrip(".") + ". " + text
    operation["x-quotas"] = list(quotas)


def _calls(dependant: Any) -> Iterator[Any]:
    for dep in getattr(dependant, "dependencies", []):
        if dep.call is not None:
            yield dep.call
        yield from _calls(dep)


def authenticated_operations(app: FastAPI) -> set[tuple[str, str]]:
    """(method, path) of every operation of ``app`` that resolves its caller (an API key, OAuth token or JWT:
    ``current_principal``, whose admission checks the account limits; or the user's own session, which a
    credential already refused by its account's rate is answered 429 on before routing)."""
    from fastapi import routing

    from agentmate.api.deps import current_principal, user_session

    # FastAPI >= 0.16x keeps included routers nested; iter_route_contexts flattens them (older: app.routes).
    contexts: Iterable[Any] = (
        routing.iter_route_contexts(app.routes) if hasattr(routing, "iter_route_contexts") else app.routes
    )
    out: set[tuple[str, str]] = set()
    for route in contexts:
        original = getattr(route, "original_route", route)
        if not isinstance(original, routing.APIRoute):
            continue
        dependant = getattr(route, "dependant", None) or original.dependant
        if any(call in (current_principal, user_session) for call in _calls(dependant)):
            path: str = route.path_format
            out |= {(str(method).lower(), path) for method in route.methods or ()}
    return out


def state_limit_responses(schema: dict[str, Any], authenticated: set[tuple[str, str]]) -> None:
    """Add the 429 to every operation in ``authenticated`` ((method, path) pairs, lower-case methods) and the
    quota 409s of ``QUOTA_ROUTES``, in place."""
    used = False
    for method, path, operation in _operations(schema):
        if (method, path) in authenticated:
            _rate_limited(operation["responses"])
            used = True
        quotas = QUOTA_ROUTES.get((method, path))
        if quotas:
            _quota_conflict(operation, quotas)
    if used:
        schema.setdefault("components", {}).setdefault("schemas", {}).setdefault(
            "RateLimitProblem", RATE_LIMIT_PROBLEM
        )
