"""Issue 23 item 7: every unknown field of every strict write model, and every unknown argument of every MCP
tool, names the field it most likely stands for (``likely_meant``) and says the fix, over both transports."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, ValidationError

import agentmate
from agentmate.core.validation import (
    MAX_SUGGESTED_NAME,
    MAX_SUGGESTIONS,
    declared_fields,
    pydantic_errors,
    suggestions,
)
from agentmate.mcp import registry
from agentmate.mcp.errors import unknown_arguments


def _strict_models() -> list[type[BaseModel]]:
    for info in pkgutil.walk_packages(agentmate.__path__, "agentmate."):
        if info.name.endswith(".schemas"):
            importlib.import_module(info.name)
    seen: dict[str, type[BaseModel]] = {}
    stack = list(BaseModel.__subclasses__())
    while stack:
        cls = stack.pop()
        stack += cls.__subclasses__()
        if cls.__module__.startswith("agentmate.") and cls.model_config.get("extra") == "forbid":
            seen[f"{cls.__module__}.{cls.__qualname__}"] = cls
    return [seen[k] for k in sorted(seen)]


MODELS = _strict_models()
TOOLS = [spec for toolset in registry.load().values() for spec in toolset.specs]


def _misspelt(name: str) -> str:
    return name + name[-1]  # a doubled last letter: "title" → "titlee"


def _unknown_errors(model: type[BaseModel], body: dict[str, Any]) -> dict[str, Any]:
    try:
        model.model_validate(body)
    except ValidationError as exc:
        located = [{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]  # as REST validates a body
        return {e.field: e for e in pydantic_errors(located, model) if e.message.startswith("unknown field")}
    return {}


def test_the_strict_models_are_found():
    assert len(MODELS) > 50 and len(TOOLS) > 50


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__qualname__}")
def test_every_misspelt_field_of_every_write_model_names_the_field_meant(model):
    hints = getattr(model, "field_hints", {})
    for name in declared_fields(model):
        wrong = _misspelt(name)
        if wrong in hints or wrong in declared_fields(model):
            continue
        error = _unknown_errors(model, {wrong: 1}).get(wrong)
        assert error is not None, (model, wrong)
        assert error.likely_meant == name, (model, wrong, error)
        assert error.message.startswith(f"unknown field (did you mean {name}"), error
        assert error.allowed == declared_fields(model)


@pytest.mark.parametrize(
    "model", [m for m in MODELS if getattr(m, "field_hints", None)], ids=lambda m: m.__qualname__
)
def test_every_hint_is_the_message_and_names_a_declared_field_or_none(model):
    for name, hint in model.field_hints.items():
        if name in declared_fields(model):
            continue  # a hint for a field the model now takes is never used
        error = _unknown_errors(model, {name: 1})[name]
        assert error.message == f"unknown field ({hint})"
        assert error.likely_meant is None or error.likely_meant in declared_fields(model)


@pytest.mark.parametrize("spec", TOOLS, ids=lambda s: s.name)
def test_every_misspelt_argument_of_every_tool_names_the_argument_meant(spec):
    for name in sorted(spec.arguments):
        wrong = _misspelt(name)
        if wrong in spec.arguments or wrong in getattr(spec.hints, "field_hints", {}):
            continue
        [error] = unknown_arguments([wrong], spec.arguments, spec.hints)
        assert error.likely_meant == name, error
        assert error.message.startswith(f"unknown field (did you mean {name}"), error


class _Pack(BaseModel):
    model_config = ConfigDict(extra="forbid")
    budget: Literal[0] | int = Field(default=0, ge=10, le=20)
    mode: Literal["a", "b"] | list[str] = "a"
    tags: list[str] = []


def test_a_union_that_fits_no_member_is_one_error_naming_every_member():
    with pytest.raises(ValidationError) as exc:
        _Pack.model_validate({"budget": "x", "mode": 3})
    errors = pydantic_errors([{**e, "loc": ("body", *e["loc"])} for e in exc.value.errors()], _Pack)
    assert [e.as_dict() for e in errors] == [
        {"field": "budget", "message": "must be 0 or an integer", "allowed": [0]},
        {"field": "mode", "message": 'must be "a" or "b" or a list', "allowed": ["a", "b"]},
    ]


def test_a_hostile_unknown_name_costs_a_bounded_search():
    # A name longer than any field gets no guess; past MAX_SUGGESTIONS unknown fields, none is searched
    assert suggestions("t" * (MAX_SUGGESTED_NAME + 1), ["t" * (MAX_SUGGESTED_NAME + 1)]) == []
    body = {f"titl{i}": 1 for i in range(MAX_SUGGESTIONS + 5)}
    errors = _unknown_errors(_strict_models_todo(), body)
    guessed = [e for e in errors.values() if e.likely_meant is not None]
    assert len(guessed) == MAX_SUGGESTIONS and len(errors) == MAX_SUGGESTIONS + 5
    # and the rest carry neither a guess nor the field list (the answer does not grow with the hints)
    assert [e.as_dict() for e in errors.values()][MAX_SUGGESTIONS:] == [
        {"field": f"titl{i}", "message": "unknown field"} for i in range(MAX_SUGGESTIONS, MAX_SUGGESTIONS + 5)
    ]


def _strict_models_todo() -> type[BaseModel]:
    from agentmate.todos.schemas import TodoCreate

    return TodoCreate


@given(st.text(max_size=200), st.lists(st.text(min_size=1, max_size=30), max_size=30))
def test_suggestions_are_declared_names_and_at_most_two(name, declared):
    found = suggestions(name, declared)
    assert len(found) <= 2 and all(f in declared for f in found)
