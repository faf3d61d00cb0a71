"""Validation and normalisation shared by the memory use cases."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from agentmate.core.errors import ErrorCollector, invalid
from agentmate.memory.schemas import SCOPE_TYPES


def json_text(value: Any) -> str:
    """Compact JSON (for size limits and for rendering a non-string value as text)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def utc(ts: datetime) -> datetime:
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def check_scope(errors: ErrorCollector, scope_type: str, scope_key: str, prefix: str = "") -> None:
    """Cross-field rule (stated in the schemas): scope_key is required unless scope_type is global, and empty
    when it is; a violation names both fields."""
    if scope_type != "global" and not scope_key:
        errors.add(prefix + "scope_key", f"required when scope_type is {scope_type!r}")
        errors.add(prefix + "scope_type", f"{scope_type!r} needs a scope_key (or use 'global')")
    if scope_type == "global" and scope_key:
        errors.add(
            prefix + "scope_key",
            "must be empty when scope_type is 'global' (pick a scope_type for it)",
            ["project", "repository", "agent", "session"],
        )
        errors.add(
            prefix + "scope_type",
            "is 'global', which takes no scope_key",
            ["project", "repository", "agent", "session"],
        )


def require_scope_type(scope_type: str | None, scope_key: str | None) -> None:
    """A scope_key filter needs its scope_type (the same key can exist under several types): a 400, never a
    filter that silently matches nothing."""
    if scope_type is None and scope_key:
        raise invalid("scope_type", "required with scope_key", list(SCOPE_TYPES))


def check_size(errors: ErrorCollector, field: str, value: Any, limit: int) -> None:
    if len(json_text(value).encode("utf-8")) > limit:
        errors.add(field, f"at most {limit // 1024} KiB of JSON")
