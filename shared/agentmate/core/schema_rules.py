"""Cross-field rules stated in a model's JSON schema (``if``/``then``/``else``), next to the service check that
enforces them with a 400 naming both fields. Text is "blank" when it is empty or only whitespace (the models
strip it), hence the ``\\S`` patterns.

    model_config = ConfigDict(extra="forbid", json_schema_extra=rules(scope_rule(), requires("sequence_no", "session_id")))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

NOT_BLANK = {"type": "string", "pattern": r"\S"}
# A pattern for text that is trimmed and must not end up empty (and, like all text, holds no U+0000).
NON_BLANK_TEXT = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
BLANK = {"type": "string", "pattern": r"^\s*$"}
NOT_NULL = {"not": {"type": "null"}}

Rule = dict[str, Any]


def scope_rule(default_global: bool = True) -> Rule:
    """``scope_key`` is required (not blank) unless ``scope_type`` is ``global``, and blank when it is."""
    is_global: Rule = {"properties": {"scope_type": {"const": "global"}}}
    if not default_global:
        is_global["required"] = ["scope_type"]
    return {
        "if": is_global,
        "then": {"properties": {"scope_key": BLANK}},
        "else": {"required": ["scope_key"], "properties": {"scope_key": NOT_BLANK}},
    }


def requires(field: str, other: str, *, other_text: bool = True, field_text: bool = False) -> Rule:
    """When ``field`` is sent (not null; for text: not blank), ``other`` must be sent too (for text: not blank)."""
    return {
        "if": {"required": [field], "properties": {field: NOT_BLANK if field_text else NOT_NULL}},
        "then": {"required": [other], "properties": {other: NOT_BLANK if other_text else NOT_NULL}},
    }


def together(a: str, b: str) -> list[Rule]:
    """Two text fields that are both given (not blank) or both left blank."""
    return [requires(a, b, field_text=True), requires(b, a, field_text=True)]


def only_when(field: str, other: str, value: str) -> Rule:
    """``field`` is required (not null) when ``other`` is ``value`` and absent or null otherwise."""
    return {
        "if": {"required": [other], "properties": {other: {"const": value}}},
        "then": {"required": [field], "properties": {field: NOT_NULL}},
        "else": {"properties": {field: {"type": "null"}}},
    }


def rules(*found: Rule) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` adding the rules to the model's schema (``allOf`` when there are several)."""

    def extra(schema: dict[str, Any]) -> None:
        if len(found) == 1:
            schema.update(found[0])
        else:
            schema.setdefault("allOf", []).extend(found)

    return extra
