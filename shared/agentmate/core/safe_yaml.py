"""Client YAML (KNOWLEDGE.yaml, SKILL.md frontmatter, model-written page frontmatter) read without surprises.

PyYAML's safe loader builds no Python objects, but its constructors still raise what they raise: ``ValueError``
for ``2024-13-45`` (an implicit timestamp), ``!!int 0x``, ``!!float abc`` or an integer past Python's digit limit,
``KeyError`` for ``!!bool maybe``, ``RecursionError`` for deep nesting. Every parser goes through ``load``, which
turns each of them into one ``YamlProblem`` naming where it happened (the dotted path of the value, e.g.
``description`` or ``knowledge.requirements.0``) so callers answer a 400 or record a finding, never a 500.

Before anything is constructed a pass over the parse events refuses anchors and aliases (an alias bomb expands
only when walked) and bounds nesting (construction recurses once per level).
"""

from __future__ import annotations

from typing import Any

MAX_DEPTH = 8


class YamlProblem(Exception):
    """``path`` is the dotted path of the failing value ('' for the document as a whole)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


def load(text: str, *, max_depth: int = MAX_DEPTH, first_line: int = 1) -> Any:
    """The YAML document as plain data; raises YamlProblem for anything it cannot read. ``first_line`` is the
    line number the text starts at in its file (a frontmatter block starts at line 2)."""
    import yaml  # on first use: most functions never read YAML

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        depth = 0
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise YamlProblem("", "YAML anchors and aliases are not allowed")
            if isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
                depth += 1
                if depth > max_depth:
                    raise YamlProblem("", f"nested deeper than {max_depth} levels")
            elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                depth -= 1
        node = yaml.compose(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + first_line}" if mark is not None else ""
        raise YamlProblem(
            "", f"is not valid YAML{where}: {getattr(exc, 'problem', None) or 'unreadable'}"
        ) from None
    if node is None:
        return None
    try:
        return yaml.constructor.SafeConstructor().construct_document(node)
    except Exception:  # any constructor failure is the client's value, located below
        path, failing = _locate(node, [])
        raise YamlProblem(".".join(path), _describe(failing, first_line)) from None


def _fails(node: Any) -> bool:
    import yaml

    try:
        yaml.constructor.SafeConstructor().construct_document(node)
    except Exception:  # probing which value the constructor refuses
        return True
    return False


def _locate(node: Any, path: list[str]) -> tuple[list[str], Any]:
    """The path of the innermost value that fails on its own (the node itself when no part of it does)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(key.value)[:64] if isinstance(key, yaml.ScalarNode) else "?"
            if _fails(key):
                return [*path, name], key
            if _fails(value):
                return _locate(value, [*path, name])
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            if _fails(item):
                return _locate(item, [*path, str(i)])
    return path, node


_CORE = "tag:yaml.org,2002:"
_SCALARS = ("int", "float", "bool", "null", "timestamp", "binary")
_COLLECTIONS = ("str", "seq", "map", "set", "omap", "pairs")


def _describe(node: Any, first_line: int) -> str:
    tag = str(getattr(node, "tag", "") or "")
    kind = tag.removeprefix(_CORE) if tag.startswith(_CORE) else None
    mark = getattr(node, "start_mark", None)
    where = f" (line {mark.line + first_line})" if mark is not None else ""
    if kind in _SCALARS:
        return f"is not a valid YAML {kind}{where}; quote it to keep it as text"
    if kind in _COLLECTIONS:
        return f"cannot be read as YAML{where}"
    return f"uses a YAML tag the safe loader does not allow{where}"
