"""The SKILL.md frontmatter reference (``skills.compile.fields``) is what the guide shows and what the parsers do:
the guide carries the rendered table verbatim, every listed key is accepted, every listed value is accepted and
any other refused, every default is applied, every limit is enforced."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agentmate.skills.compile import fields as F
from agentmate.skills.compile import frontmatter as fm

ROOT = Path(__file__).resolve().parents[3]
REQ = "knowledge.requirements[]"
BASE: dict[str, Any] = {
    "name": "domain-web",
    "description": "Build web services",
    "knowledge": {"requirements": [{"id": "docs", "match": {"capabilities": ["api"]}}]},
}


def _parse(data: dict[str, Any]) -> fm.Frontmatter:
    return fm.parse(f"---\n{json.dumps(data)}\n---\nbody\n", strict=False)


def _with(key: str, value: Any) -> dict[str, Any]:
    """BASE with ``key`` (a dotted path of the table, [] = the first item) set to ``value``."""
    data = copy.deepcopy(BASE)
    node: Any = data
    parts = key.split(".")
    for part in parts[:-1]:
        name, is_list = part.removesuffix("[]"), part.endswith("[]")
        node = node.setdefault(name, [{}] if is_list else {})
        if is_list:
            node = node[0]
    node[parts[-1]] = value
    return data


def _requirement(front: fm.Frontmatter) -> dict[str, Any]:
    assert front.knowledge is not None, front.problems
    return dict(front.knowledge["requirements"][0])


@pytest.mark.parametrize("doc", ["docs/agent-integration.md", "shared/agentmate/system/agent-integration.md"])
def test_the_guide_carries_the_rendered_reference(doc: str) -> None:
    text = (ROOT / doc).read_text()
    assert F.render_markdown() in text, (
        f"{doc}: paste `python -m agentmate.skills.compile.fields` output, then make guide"
    )


def test_every_top_level_key_of_the_table_is_a_key_the_parser_knows() -> None:
    assert set(F.children("")) == set(fm.PUBLIC_KEYS) | set(fm.EXTENSION_KEYS)
    front = _parse(
        {**BASE, "license": "MIT", "compatibility": "py", "metadata": {"a": "b"}, "triggers": ["x"]}
    )
    assert front.problems == [] and front.unknown_keys == []
    assert _parse({**BASE, "not-in-table": 1}).unknown_keys == ["not-in-table"]


@pytest.mark.parametrize("key", [f.key for f in F.FIELDS if f.required == "yes" and "." not in f.key])
def test_a_required_top_level_field_is_a_problem_when_missing(key: str) -> None:
    data = {k: v for k, v in BASE.items() if k != key}
    assert any(p.startswith(f"{key}: required") for p in _parse(data).problems)


@pytest.mark.parametrize("spec", [f for f in F.FIELDS if f.values], ids=lambda f: f.key)
def test_every_listed_value_is_accepted_and_any_other_refused(spec: F.FieldSpec) -> None:
    for value in spec.values:
        data = _with(spec.key, value)
        if spec.key == "knowledge.mode" and value == "pinned":
            data = _with(f"{REQ}.pinned", [{"source_name": "kb"}])
            data["knowledge"]["mode"] = "pinned"
            data["knowledge"]["requirements"][0]["match"] = {}
        if spec.key == "knowledge.mode" and value == "scoped_discover":
            data["knowledge"]["scope"] = {"tags": ["t"]}
        if spec.key.endswith("on_no_match") and value == "proceed_without_knowledge":
            data["knowledge"]["requirements"][0]["required"] = False
        assert _parse(data).problems == [], (spec.key, value)
    problems = _parse(_with(spec.key, "not-a-listed-value")).problems
    leaf = spec.key.rsplit(".", 1)[-1]
    assert any(leaf in p and "not one of" in p for p in problems), problems


@pytest.mark.parametrize(
    "spec", [f for f in F.FIELDS if f.default is not None and f.key.startswith(REQ)], ids=lambda f: f.key
)
def test_every_requirement_default_is_what_the_parser_applies(spec: F.FieldSpec) -> None:
    req = _requirement(_parse(BASE))
    node: Any = req
    for part in spec.key.removeprefix(f"{REQ}.").split("."):
        node = node[part]
    assert node == spec.default


def test_the_contract_level_defaults_and_the_conditional_fallback() -> None:
    front = _parse(BASE)
    assert front.knowledge is not None and front.knowledge["mode"] == F.spec("knowledge.mode").default
    assert _requirement(front)["fallback"]["on_no_match"] == "proceed_without_knowledge"
    required = _requirement(_parse(_with(f"{REQ}.required", True)))
    assert required["fallback"]["on_no_match"] == "ask_user"
    note = F.spec(f"{REQ}.fallback.on_no_match").default_note
    assert note.startswith("ask_user when required") and note.endswith("proceed_without_knowledge")


@pytest.mark.parametrize(
    "spec",
    [f for f in F.FIELDS if f.type == "string" and f.max_length and f.key != "name"],
    ids=lambda f: f.key,
)
def test_every_string_limit_is_enforced(spec: F.FieldSpec) -> None:
    assert spec.max_length is not None
    ok = _with(spec.key, "a" * spec.max_length)
    too_long = _with(spec.key, "a" * (spec.max_length + 1))
    if "pinned" in spec.key:  # pins belong to mode pinned
        for data in (ok, too_long):
            data["knowledge"]["mode"] = "pinned"
            data["knowledge"]["requirements"][0]["match"] = {}
    leaf = spec.key.rsplit(".", 1)[-1]
    assert not [p for p in _parse(ok).problems if "longer than" in p], spec.key
    assert any(leaf in p and f"longer than {spec.max_length}" in p for p in _parse(too_long).problems)


@pytest.mark.parametrize("spec", [f for f in F.FIELDS if f.type == "integer"], ids=lambda f: f.key)
def test_every_integer_range_is_enforced(spec: F.FieldSpec) -> None:
    assert spec.min_value is not None and spec.max_value is not None
    assert _parse(_with(spec.key, spec.max_value)).problems == []
    for bad in (spec.min_value - 1, spec.max_value + 1):
        problems = _parse(_with(spec.key, bad)).problems
        assert any(f"between {spec.min_value} and {spec.max_value}" in p for p in problems), problems


@pytest.mark.parametrize("spec", [f for f in F.FIELDS if f.routing], ids=lambda f: f.key)
def test_every_routing_list_limit_is_enforced(spec: F.FieldSpec) -> None:
    assert spec.max_items is not None and spec.max_length is not None
    assert _parse(_with(spec.key, ["x"] * spec.max_items)).problems == []
    assert any("more than" in p for p in _parse(_with(spec.key, ["x"] * (spec.max_items + 1))).problems)
    assert any("longer than" in p for p in _parse(_with(spec.key, ["a" * (spec.max_length + 1)])).problems)
