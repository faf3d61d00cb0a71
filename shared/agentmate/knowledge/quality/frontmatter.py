"""A page's YAML frontmatter (a leading ``---`` block), read with ``core.safe_yaml``; anything unreadable is empty.

Lint reads ``superseded_by`` from it. A page without frontmatter, or with a block that is not a mapping, simply
has none: lint reports what the page lacks, it does not fail on it. A block the loader refuses (pages are
model-written: ``2024-13-45`` or ``!!int 0x`` must not break every later lint run) also reads as none, and ``read``
says why, for lint's ``unreadable_frontmatter`` finding.
"""

from __future__ import annotations

from typing import Any

from agentmate.core import safe_yaml

_MAX_BLOCK = 16_384


def frontmatter(content: str) -> dict[str, Any]:
    return read(content)[0]


def read(content: str) -> tuple[dict[str, Any], str | None]:
    """(the frontmatter mapping, why a block that is there cannot be read or None)."""
    if not content.startswith("---"):
        return {}, None
    first, _, rest = content.partition("\n")
    if first.strip() != "---":
        return {}, None
    end = rest.find("\n---")
    block = rest[:end] if end >= 0 else ""
    if not block:
        return {}, None
    if len(block) > _MAX_BLOCK:
        return {}, f"larger than {_MAX_BLOCK} characters"
    try:
        data: Any = safe_yaml.load(block, first_line=2)
    except safe_yaml.YamlProblem as exc:
        return {}, str(exc)[:300]
    return (data, None) if isinstance(data, dict) else ({}, None)
