"""SKILL.md frontmatter: the public Agent Skills keys plus our optional extensions, parsed with a safe loader.

Every field, with its type, values, default and limits, is a row of ``fields.FIELDS`` (the reference rendered
into the agent guide); this module reads its limits and key sets from there. Public keys (so a skill written for
other agent hosts registers unchanged): ``name`` (≤ 64, lowercase letters, digits and single hyphens; it should
equal the skill's folder — a mismatch is a lint finding, never a refusal) and ``description`` (≤ 1,024), both
required by the format (a missing one is a problem, and the compiler refuses a SKILL.md without frontmatter),
``compatibility`` (≤ 500), and optional ``license``, ``metadata`` (string → string) and ``allowed-tools``. Our extensions are further optional top-level keys: ``triggers``, ``capabilities``,
``constraints``, ``dependencies`` (string lists used for routing) and ``knowledge`` (the knowledge contract,
``knowledge_contract.py``). Unknown top-level keys are kept out of the compiled artifact and reported.

YAML is read by ``core.safe_yaml`` (a safe loader, no object construction) after a pass over the parse events
that refuses anchors/aliases (an alias bomb expands only when walked, which the artifact's JSON encoding would
do) and bounds nesting; a value the loader's constructors refuse (``description: 2024-13-45``, ``!!int 0x``)
is a problem naming its key, like any other; the block itself is bounded by ``MAX_FRONTMATTER_BYTES``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentmate.core import safe_yaml
from agentmate.core.validation import suggestions
from agentmate.skills.compile import fields as F
from agentmate.skills.compile import knowledge_contract as kc

MAX_FRONTMATTER_BYTES = 64 * 1024
MAX_YAML_DEPTH = 8
# Limits, key sets and required fields come from the reference table (``fields.py``, rendered into the guide).
MAX_NAME = F.max_length("name")
MAX_DESCRIPTION = F.max_length("description")
MAX_COMPATIBILITY = F.max_length("compatibility")
MAX_LICENSE = F.max_length("license")
MAX_METADATA_ENTRIES = F.max_items("metadata")
MAX_METADATA_KEY = 100
MAX_METADATA_VALUE = F.max_length("metadata")
MAX_ALLOWED_TOOLS = F.max_items("allowed-tools")
MAX_TOOL_CHARS = F.max_length("allowed-tools")
MAX_LIST_ITEMS = F.max_items("triggers")
MAX_LIST_ITEM = F.max_length("triggers")
MAX_ROUTING_CHARS = 16_000
MAX_WARNINGS = 20

NAME_PATTERN = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
PUBLIC_KEYS = tuple(f.key for f in F.FIELDS if f.origin == "Agent Skills" and "." not in f.key)
ROUTING_KEYS = tuple(f.key for f in F.FIELDS if f.routing)
EXTENSION_KEYS = tuple(k for k in F.children("") if k not in PUBLIC_KEYS)
REQUIRED_KEYS = tuple(k for k in F.children("") if F.spec(k).required == "yes")
MISSING_FRONTMATTER = (
    "frontmatter: SKILL.md has none; the Agent Skills format requires a --- block with name and description"
)


class FrontmatterError(Exception):
    """The frontmatter cannot be read as written; ``problems`` lists every reason (``field: message``)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Frontmatter:
    present: bool
    name: str | None = None
    description: str = ""
    compatibility: str | None = None
    license: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: list[str] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    capabilities: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    dependencies: list[str] = field(default_factory=list)
    knowledge: dict[str, Any] | None = None
    unknown_keys: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    """Validation problems (only with ``parse(strict=False)``); ``knowledge: …`` ones concern the contract."""

    def routing(self) -> dict[str, list[str]]:
        return {k: list(getattr(self, k)) for k in ROUTING_KEYS}


def normalise_newlines(content: str) -> str:
    return content.replace("\r\n", "\n").replace("\r", "\n")


def split(content: str) -> tuple[str | None, str]:
    """(frontmatter YAML or None, body). Raises FrontmatterError for an unterminated block."""
    text = normalise_newlines(content)
    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.startswith("---\n") and text.strip() != "---":
        return None, text
    lines = text.split("\n")
    for index in range(1, len(lines)):
        if lines[index].rstrip() in ("---", "..."):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :])
    raise FrontmatterError(["frontmatter: the opening --- has no closing --- line"])


def body_of(content: str) -> str:
    """The instructions (everything after the frontmatter); the whole text when the frontmatter is unreadable."""
    try:
        return split(content)[1].strip("\n")
    except FrontmatterError:
        return normalise_newlines(content).strip("\n")


def _load_yaml(source: str) -> Any:
    if len(source.encode("utf-8")) > MAX_FRONTMATTER_BYTES:
        raise FrontmatterError([f"frontmatter: larger than {MAX_FRONTMATTER_BYTES} bytes"])
    try:  # the block starts on line 2 of SKILL.md, after the opening ---
        return safe_yaml.load(source, max_depth=MAX_YAML_DEPTH, first_line=2)
    except safe_yaml.YamlProblem as exc:
        raise FrontmatterError([f"{exc.path or 'frontmatter'}: {exc.message}"]) from None


def _string(data: dict[str, Any], key: str, limit: int, problems: list[str]) -> str | None:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        problems.append(f"{key}: must be a string")
        return None
    value = value.strip()
    if len(value) > limit:
        problems.append(f"{key}: longer than {limit} characters")
    return value


def _string_list(data: dict[str, Any], key: str, problems: list[str]) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"{key}: must be a list of strings")
        return []
    items = [v.strip() for v in value if v.strip()]
    if len(items) > MAX_LIST_ITEMS:
        problems.append(f"{key}: more than {MAX_LIST_ITEMS} items")
    for i, item in enumerate(items):
        if len(item) > MAX_LIST_ITEM:
            problems.append(f"{key}[{i}]: longer than {MAX_LIST_ITEM} characters")
    return items


def _metadata(data: dict[str, Any], problems: list[str]) -> dict[str, str]:
    value = data.get("metadata")
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        problems.append("metadata: must map strings to strings")
        return {}
    if len(value) > MAX_METADATA_ENTRIES:
        problems.append(f"metadata: more than {MAX_METADATA_ENTRIES} entries")
    for k, v in value.items():
        if len(k) > MAX_METADATA_KEY or len(v) > MAX_METADATA_VALUE:
            problems.append(
                f"metadata.{k[:40]}: key over {MAX_METADATA_KEY} or value over {MAX_METADATA_VALUE} "
                "characters"
            )
    return {k: value[k] for k in sorted(value)}


def _allowed_tools(data: dict[str, Any], problems: list[str]) -> list[str]:
    value = data.get("allowed-tools")
    if value is None:
        return []
    if isinstance(value, str):  # the public format: space-delimited
        tools = value.split()
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        tools = [v.strip() for v in value if v.strip()]
    else:
        problems.append("allowed-tools: must be a space-delimited string or a list of strings")
        return []
    if len(tools) > MAX_ALLOWED_TOOLS or any(len(t) > MAX_TOOL_CHARS for t in tools):
        problems.append(f"allowed-tools: at most {MAX_ALLOWED_TOOLS} tools of {MAX_TOOL_CHARS} characters")
    return tools


def parse(content: str, *, strict: bool = True) -> Frontmatter:
    """Parse and validate the frontmatter of a SKILL.md; raises FrontmatterError listing every problem.

    ``strict=False`` still raises when the block cannot be read at all (unterminated, not YAML, not a mapping)
    but returns field-level problems in ``problems`` instead (the quality lint reports them per check)."""
    source, _ = split(content)
    if source is None:
        return Frontmatter(present=False)
    data = _load_yaml(source) if source.strip() else {}
    if data is None:
        data = {}
    if not isinstance(data, dict) or not all(isinstance(k, str) for k in data):
        raise FrontmatterError(["frontmatter: must be a YAML mapping with string keys"])
    problems: list[str] = []
    name = _string(data, "name", MAX_NAME, problems)
    if name is not None and name and not NAME_PATTERN.match(name):
        problems.append("name: only lowercase letters, digits and single hyphens (not at the start or end)")
    description = _string(data, "description", MAX_DESCRIPTION, problems) or ""
    for key, value in (("name", name), ("description", description)):
        if key in REQUIRED_KEYS and not value and not any(p.startswith(f"{key}:") for p in problems):
            problems.append(f"{key}: required (the Agent Skills format requires name and description)")
    routing = {k: _string_list(data, k, problems) for k in ROUTING_KEYS}
    if sum(len(v) for items in routing.values() for v in items) + len(description) > MAX_ROUTING_CHARS:
        problems.append(f"routing metadata: more than {MAX_ROUTING_CHARS} characters in total")
    knowledge: dict[str, Any] | None = None
    if "knowledge" in data:
        try:
            knowledge = kc.parse(data["knowledge"])
        except kc.ContractError as exc:
            problems.extend(f"knowledge: {p}" for p in exc.problems)
    result = Frontmatter(
        present=True,
        name=name or None,
        description=description,
        compatibility=_string(data, "compatibility", MAX_COMPATIBILITY, problems),
        license=_string(data, "license", MAX_LICENSE, problems),
        metadata=_metadata(data, problems),
        allowed_tools=_allowed_tools(data, problems),
        knowledge=knowledge,
        unknown_keys=sorted(k for k in data if k not in PUBLIC_KEYS and k not in EXTENSION_KEYS),
        problems=list(problems),
        **routing,
    )
    if problems and strict:
        raise FrontmatterError(problems)
    return result


def public_only(fm: Frontmatter) -> bool:
    """True when the frontmatter uses only the public Agent Skills keys (installable in any host as is)."""
    return not fm.unknown_keys and not any(getattr(fm, k) for k in ROUTING_KEYS) and fm.knowledge is None


def unknown_key_warnings(unknown_keys: list[str]) -> list[str]:
    """One compile warning per unknown top-level key (at most ``MAX_WARNINGS``), with the declared key it most
    likely meant (``trigers`` → ``triggers``) when one is close."""
    known = PUBLIC_KEYS + EXTENSION_KEYS
    out = []
    for key in unknown_keys[:MAX_WARNINGS]:
        close = suggestions(key, known)
        meant = f"; did you mean {' or '.join(close)}?" if close else ""
        out.append(f"frontmatter: unknown key {key[:100]!r} is ignored (kept out of the artifact){meant}")
    if len(unknown_keys) > MAX_WARNINGS:
        out.append(f"frontmatter: {len(unknown_keys) - MAX_WARNINGS} more unknown keys")
    return out


def warnings_of(content: str) -> list[str]:
    """The compile warnings of a SKILL.md's frontmatter (unknown keys); none when it cannot be read at all."""
    try:
        return unknown_key_warnings(parse(content, strict=False).unknown_keys)
    except FrontmatterError:
        return []
