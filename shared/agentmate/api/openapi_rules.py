"""Rules every text input follows, stated in the OpenAPI where pydantic's schemas leave them out.

Postgres text and jsonb cannot hold U+0000, so every string the API takes refuses it (by validation, or the
driver's data error answered as a 400): each string schema without a pattern, format or enum says so with a
pattern, and free-form JSON objects (``metadata``, ``payload``) say it of their keys and, through the recursive
``JsonValue`` component, of every nested string.
"""

from __future__ import annotations

from typing import Any

NO_NUL = "^[^\\u0000]*$"
JSON_VALUE = "JsonValue"
JSON_VALUE_REF = {"$ref": f"#/components/schemas/{JSON_VALUE}"}
JSON_VALUE_SCHEMA: dict[str, Any] = {
    "description": "Any JSON value; strings and object keys never contain U+0000",
    "anyOf": [
        {"type": "string", "pattern": NO_NUL},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "null"},
        {"type": "array", "items": JSON_VALUE_REF},
        {"type": "object", "propertyNames": {"pattern": NO_NUL}, "additionalProperties": JSON_VALUE_REF},
    ],
}
_STATED = ("pattern", "format", "enum", "const", "$ref")


def _is_free_object(node: dict[str, Any]) -> bool:
    return (
        node.get("type") == "object"
        and "properties" not in node
        and node.get("additionalProperties", True) is True
    )


def _visit(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _visit(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "string" and not any(k in node for k in _STATED):
        node["pattern"] = NO_NUL
    elif _is_free_object(node):
        node["propertyNames"] = {"pattern": NO_NUL}
        node["additionalProperties"] = JSON_VALUE_REF
    for key, value in node.items():
        if key not in ("examples", "example", "default", "const", "enum"):
            _visit(value)


def state_text_rules(document: dict[str, Any]) -> None:
    """Add the no-NUL rule to every string and free-form object of ``document`` (in place)."""
    _visit(document.get("paths", {}))
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    _visit(schemas)
    if any(_is_free_object(s) or "JsonValue" in str(s) for s in schemas.values()) or "JsonValue" in str(
        document.get("paths", {})
    ):
        schemas.setdefault(JSON_VALUE, JSON_VALUE_SCHEMA)
