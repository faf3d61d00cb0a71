"""Pydantic validation errors as ``FieldError``s (the same for REST bodies and MCP arguments).

Hints belong to the model that owns the field: a model lists, in ``field_hints``, names an agent is likely to
send by mistake and what to do instead (``EventCreate.field_hints = {"content": "event content belongs inside
payload"}``). An unknown field gets the hint of the model it was sent to, found by walking the error's location
from the validated model, so the same name elsewhere (a todo's ``content``) gets none. A missing field whose
type is an enum or ``Literal`` lists its allowed values (a query, path or header parameter's too, given the route's
parameter annotations), and ``missing_hints`` says where a required field
belongs when agents tend to send it elsewhere (an event's ``idempotency_key`` as a header).
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from agentmate.core.errors import FieldError

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_LOCATIONS = ("body", "query", "path", "header")


def field_name(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    name = ""
    for p in parts:
        name += f"[{p}]" if p.isdigit() else (f".{p}" if name else p)
    return name or "body"


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The models an annotation can hold: ``M``, ``M | None``, ``list[M]``, ``dict[str, M]``."""
    annotation = _strip(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out: list[type[BaseModel]] = []
    if get_origin(annotation) in (Union, types.UnionType, list, tuple, set, frozenset, dict):
        for arg in get_args(annotation):
            out += models_in(arg)
    return out


def owner_of(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model that owns the last element of ``loc`` (walking nested models, skipping list indexes)."""
    parts = [p for p in loc if not (isinstance(p, int) or str(p).isdigit())]
    if parts and parts[0] in _LOCATIONS:
        parts = parts[1:]
    owner = model
    for part in parts[:-1]:
        if owner is None:
            return None
        info = owner.model_fields.get(str(part))
        nested = models_in(info.annotation) if info is not None else []
        owner = nested[0] if nested else None
    return owner


def _allowed_values(annotation: Any) -> list[Any] | None:
    annotation = _strip(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        for arg in get_args(annotation):
            found = _allowed_values(arg)
            if found:
                return found
        return None
    if get_origin(annotation) is Literal:
        return list(get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return [m.value for m in annotation]
    return None


# Names agents use for what this API spells otherwise: name -> (the name it stands for, the fix to suggest).
_RENAMES = {
    "scope": ("scope_type", "scope_type plus scope_key"),
    "repo": ("scope_type", "scope_type=repository&scope_key=owner/repo"),
    "repository": ("scope_type", "scope_type=repository&scope_key=owner/repo"),
    "q": ("query", "query"),
    "page": ("offset", "offset"),
    "per_page": ("limit", "limit"),
    "page_size": ("limit", "limit"),
    "sessionId": ("session_id", "session_id"),
}


def likely_meant(name: str, declared: Iterable[str]) -> str:
    """Which of ``declared`` an unknown query parameter or tool argument ``name`` probably meant ("" if none):
    a known rename, the declared names containing it (``session`` → ``session_id``), or a close spelling."""
    names = sorted(declared)
    target, fix = _RENAMES.get(name, ("", ""))
    if target in names:
        return fix
    import difflib  # only on this error path: not on every cold start

    return " or ".join([d for d in names if name and name in d] or difflib.get_close_matches(name, names, 2))


def pydantic_errors(
    raw: Iterable[Mapping[str, Any]],
    model: type[BaseModel] | None = None,
    params: Mapping[str, Any] | None = None,
) -> list[FieldError]:
    """``model`` is the one validated (a route's body, a tool's domain model); it supplies hints and enums.
    ``params`` maps a route's query/path/header parameter names to their annotations (for their enums)."""
    out: list[FieldError] = []
    for err in raw:
        loc = tuple(err.get("loc", ()))
        field = field_name(loc)
        kind = err.get("type", "")
        ctx = err.get("ctx") or {}
        allowed: list[Any] | None = None
        message = str(err.get("msg", "invalid value"))
        last = str(loc[-1]) if loc else ""
        if kind in ("literal_error", "enum"):
            allowed = _QUOTED.findall(str(ctx.get("expected", ""))) or None
            message = "must be one of the allowed values"
        elif kind == "extra_forbidden":
            message = "unknown field"
            owner = owner_of(model, loc)
            hint = getattr(owner, "field_hints", {}).get(last) if owner is not None else None
            if hint:
                message += f" ({hint})"
        elif kind in ("empty_patch", "not_nullable"):  # agentmate.core.patch: updatable fields / enum values
            allowed = list(ctx.get("allowed", [])) or None
        elif kind == "missing":
            message = "field required"
            owner = owner_of(model, loc)
            info = owner.model_fields.get(last) if owner is not None else None
            if info is not None:
                allowed = _allowed_values(info.annotation)
            elif loc and loc[0] != "body" and params and last in params:
                allowed = _allowed_values(params[last])
            missing_hint = getattr(owner, "missing_hints", {}).get(last) if owner is not None else None
            if missing_hint:
                message += f" ({missing_hint})"
        elif kind in ("too_short", "too_long") and isinstance(err.get("input"), str):
            # A text checked after trimming: pydantic would count "items" of a "Value".
            if kind == "too_short":
                n = ctx.get("min_length", 1)
                message = "must not be blank" if n == 1 else f"must be at least {n} characters"
            else:
                message = f"must be at most {ctx.get('max_length')} characters"
        elif kind == "json_invalid":
            field, message = "body", "request body is not valid JSON"
        elif message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        out.append(FieldError(field, message, allowed))
    return out
