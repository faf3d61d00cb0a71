"""Pydantic validation errors as ``FieldError``s (the same for REST bodies and MCP arguments).

Hints belong to the model that owns the field: a model lists, in ``field_hints``, names an agent is likely to
send by mistake and what to do instead (``EventCreate.field_hints = {"content": "event content belongs inside
payload"}``). An unknown field gets the hint of the model it was sent to, found by walking the error's location
from the validated model, so the same name elsewhere (a todo's ``content``) gets none. A missing field whose
type is an enum or ``Literal`` lists its allowed values (a query, path or header parameter's too, given the route's
parameter annotations), and ``missing_hints`` says where a required field
belongs when agents tend to send it elsewhere (an event's ``idempotency_key`` as a header).

Every unknown field (``extra_forbidden``) also carries ``likely_meant``, the declared field it most likely
stands for: the first declared name its ``field_hints`` entry mentions, else the closest declared name (a known
rename, the same name in another case or spelling, a name containing it, or ``difflib``'s closest spelling), and
without a hint the message asks "did you mean …?"; ``allowed`` lists the fields the model takes. The search is
bounded: names over ``MAX_SUGGESTED_NAME`` characters get no suggestion, and unknown fields past
``MAX_SUGGESTIONS`` per request neither a suggestion nor ``allowed``. A value that fits none of a union's members (``max_chars: "big"`` on ``0 | 500..200000``) is one
error naming the field and what each member allows, not one error per member.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Iterable, Mapping
from enum import Enum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from agentmate.core.errors import FieldError

_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SUGGESTED_NAME = 64
MAX_SUGGESTIONS = 32
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


def _norm(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")


def suggestions(name: str, declared: Iterable[str]) -> list[str]:
    """The declared names ``name`` most likely stands for, best first (at most two; none for a name over
    ``MAX_SUGGESTED_NAME`` characters): a known rename, the same name in another case or spelling
    (``maxChars`` → ``max_chars``), the names containing it (``session`` → ``session_id``), a close spelling."""
    names = sorted(declared)
    if not name or len(name) > MAX_SUGGESTED_NAME:
        return []
    target = _RENAMES.get(name, ("", ""))[0]
    if target in names:
        return [target]
    normal = {_norm(d): d for d in names}
    if _norm(name) in normal:
        return [normal[_norm(name)]]
    containing = [d for d in names if len(name) >= 3 and name.lower() in d.lower()]
    if containing:
        return containing[:2]
    import difflib  # only on this error path: not on every cold start

    return [normal[m] for m in difflib.get_close_matches(_norm(name), list(normal), 2)]


def likely_meant(name: str, declared: Iterable[str]) -> str:
    """What an unknown query parameter ``name`` probably meant, as the text of a fix ("" if nothing is close):
    a known rename's fix (``scope_type plus scope_key``) or the ``suggestions`` joined by "or"."""
    names = sorted(declared)
    target, fix = _RENAMES.get(name, ("", ""))
    if target in names:
        return fix
    return " or ".join(suggestions(name, names))


def declared_fields(model: type[BaseModel]) -> list[str]:
    """The field names a strict model accepts in input: each field's alias, and its name where names are
    accepted too."""
    by_name = bool(model.model_config.get("populate_by_name") or model.model_config.get("validate_by_name"))
    out: set[str] = set()
    for name, info in model.model_fields.items():
        alias = info.validation_alias if isinstance(info.validation_alias, str) else info.alias
        out.add(alias or name)
        if by_name or not alias:
            out.add(name)
    return sorted(out)


def unknown_field(
    field: str, name: str, declared: Iterable[str], hints: Mapping[str, str], *, suggest: bool = True
) -> FieldError:
    """The error for an unknown field ``name`` (reported as ``field``) of a strict model or tool that takes
    ``declared``: the model's hint for that name, else "did you mean …?" with the closest declared name, and
    the declared names as ``allowed``. With ``suggest=False`` (past ``MAX_SUGGESTIONS`` in one request) only
    "unknown field", so the answer to a body of many unknown keys is no larger than before the hints."""
    if not suggest:  # past MAX_SUGGESTIONS: a hostile body of many unknown keys gets no longer an answer
        return FieldError(field, "unknown field")
    names = sorted(declared)
    hint = hints.get(name)
    if hint:
        meant = next((w for w in _WORD.findall(hint) if w in names and w != name), None)
        return FieldError(field, f"unknown field ({hint})", names or None, meant)
    close = suggestions(name, names)
    if not close:
        return FieldError(field, "unknown field", names or None)
    target, fix = _RENAMES.get(name, ("", ""))
    if target == close[0]:  # a known rename says the whole fix (scope_type=repository&scope_key=owner/repo)
        return FieldError(field, f"unknown field (use {fix})", names, target)
    return FieldError(field, f"unknown field (did you mean {' or '.join(close)}?)", names, close[0])


def _field_annotation(model: type[BaseModel], part: Any) -> Any:
    for name, info in model.model_fields.items():
        if part in (name, info.alias, info.validation_alias):
            return info.annotation
    return None


def _members(annotation: Any) -> list[Any]:
    """A union's members other than None ([] for anything else)."""
    annotation = _strip(annotation)
    if get_origin(annotation) not in (Union, types.UnionType):
        return []
    return [a for a in get_args(annotation) if a is not type(None)]


def union_at(annotation: Any, loc: tuple[Any, ...]) -> tuple[int, Any] | None:
    """Where ``loc`` (from ``annotation``, the validated type) enters a union of several members: the index of
    the member tag pydantic appends there and the union. ``None`` when it enters none."""
    for i, part in enumerate(loc):
        annotation = _strip(annotation)
        members = _members(annotation)
        if len(members) > 1:
            return i, annotation
        if len(members) == 1:
            annotation = _strip(members[0])
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = _field_annotation(annotation, part)
        elif get_origin(annotation) in (list, tuple, set, frozenset) and get_args(annotation):
            annotation = get_args(annotation)[0]
        elif get_origin(annotation) is dict and len(get_args(annotation)) == 2:
            annotation = get_args(annotation)[1]
        else:
            return None
    return None


def _bounds(schema: Mapping[str, Any], low: str, high: str) -> str:
    lo, hi = schema.get(low), schema.get(high)
    if lo is not None and hi is not None:
        return f"{lo}..{hi}"
    return f">= {lo}" if lo is not None else (f"<= {hi}" if hi is not None else "")


def _describe(member: Any) -> tuple[list[Any], str]:
    """A union member as (its allowed values or range, its description), from its JSON schema."""
    from pydantic import TypeAdapter  # only on this error path

    try:
        schema = TypeAdapter(member).json_schema()
    except Exception:  # a type without a JSON schema: described by its name
        return [], getattr(member, "__name__", "a valid value")
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        return values, " or ".join(json.dumps(v) for v in values)
    kind = schema.get("type")
    if kind in ("integer", "number"):
        bounds = _bounds(schema, "minimum", "maximum")
        noun = "an integer" if kind == "integer" else "a number"
        return ([bounds] if ".." in bounds else []), f"{noun} {bounds}".strip()
    if kind == "string":
        length = _bounds(schema, "minLength", "maxLength")
        return [], "a string" + (f" of {length} characters" if length else "")
    nouns = {"array": "a list", "object": "an object", "boolean": "true or false"}
    return [], nouns.get(str(kind), "a valid value")


def union_error(field: str, union: Any) -> FieldError:
    """One error for a value that fits none of ``union``'s members, naming what each member allows."""
    allowed: list[Any] = []
    parts: list[str] = []
    for member in _members(union):
        values, text = _describe(member)
        allowed += values
        parts.append(text)
    return FieldError(field, "must be " + " or ".join(dict.fromkeys(parts)), allowed or None)


def _union_in(
    loc: tuple[Any, ...], model: type[BaseModel] | None, params: Mapping[str, Any] | None
) -> tuple[int, Any] | None:
    """Where ``loc`` enters a union (the tag's index in ``loc``, the union), from the validated model or, for a
    query/path/header parameter, the parameter's annotation."""
    if loc and loc[0] != "body" and loc[0] in _LOCATIONS:
        if not params or len(loc) < 2 or loc[1] not in params:
            return None
        found = union_at(params[loc[1]], loc[2:])
        return None if found is None else (found[0] + 2, found[1])
    if model is None:
        return None
    start = 1 if loc and loc[0] == "body" else 0
    found = union_at(model, loc[start:])
    return None if found is None else (found[0] + start, found[1])


def _merge_unions(
    raw: Iterable[Mapping[str, Any]], model: type[BaseModel] | None, params: Mapping[str, Any] | None
) -> list[Mapping[str, Any] | FieldError]:
    """The errors with each union's per-member errors merged into one ``FieldError`` where two or more members
    failed; the errors of a single failing member stay, without the member's tag in their location."""
    out: list[Mapping[str, Any] | FieldError | None] = []
    groups: dict[tuple[Any, ...], tuple[Any, set[Any], list[int]]] = {}
    for err in raw:
        loc = tuple(err.get("loc", ()))
        found = _union_in(loc, model, params)
        if found is None or found[0] >= len(loc):
            out.append(err)
            continue
        at, union = found
        union, tags, slots = groups.setdefault(loc[:at], (union, set(), []))
        tags.add(loc[at])
        slots.append(len(out))
        out.append({**err, "loc": loc[:at] + loc[at + 1 :]})
    for prefix, (union, tags, slots) in groups.items():
        if len(tags) > 1:
            out[slots[0]] = union_error(field_name(prefix), union)
            for slot in slots[1:]:
                out[slot] = None
    return [e for e in out if e is not None]


def pydantic_errors(
    raw: Iterable[Mapping[str, Any]],
    model: type[BaseModel] | None = None,
    params: Mapping[str, Any] | None = None,
) -> list[FieldError]:
    """``model`` is the one validated (a route's body, a tool's domain model); it supplies hints and enums.
    ``params`` maps a route's query/path/header parameter names to their annotations (for their enums)."""
    out: list[FieldError] = []
    suggested = 0
    for err in _merge_unions(raw, model, params):
        if isinstance(err, FieldError):
            out.append(err)
            continue
        if err.get("type") == "extra_forbidden":
            suggested += 1
            out.append(_unknown(err, model, suggest=suggested <= MAX_SUGGESTIONS))
        else:
            out.append(_one(err, model, params))
    return out


def _unknown(err: Mapping[str, Any], model: type[BaseModel] | None, *, suggest: bool) -> FieldError:
    loc = tuple(err.get("loc", ()))
    owner = owner_of(model, loc)
    if owner is None:
        return FieldError(field_name(loc), "unknown field")
    hints: Mapping[str, str] = getattr(owner, "field_hints", {})
    return unknown_field(field_name(loc), str(loc[-1]), declared_fields(owner), hints, suggest=suggest)


def _one(
    err: Mapping[str, Any], model: type[BaseModel] | None, params: Mapping[str, Any] | None
) -> FieldError:
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
    elif kind in ("empty_patch", "not_nullable", "value_rule"):
        # agentmate.core.patch: updatable fields / enum values; value_rule: a field's own rule with its values
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
    return FieldError(field, message, allowed)
