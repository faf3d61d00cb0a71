"""A page's YAML frontmatter (a leading ``---`` block), read with ``core.safe_yaml``; anything unreadable is empty.

Lint reads ``superseded_by`` from it. A page without frontmatter, or with a block that is not a mapping or that
the loader refuses (pages are model-written: ``2024-13-45`` or ``!!int 0x`` must not break every later lint
run), simply has none: lint reports what the page lacks, it does not fail on it.
"""

from __future__ import annotations

from typing import Any

from agentmate.core import safe_yaml

_MAX_BLOCK = 16_384


def frontmatter(content: str) -> dict[str, Any]:
    if not content.startswith("---"):
        return {}
    first, _, rest = content.partition("\n")
    if first.strip() != "---":
        return {}
    end = rest.find("\n---")
    block = rest[:end] if end >= 0 else ""
    if not block or len(block) > _MAX_BLOCK:
        return {}
    try:
        data: Any = safe_yaml.load(block)
    except safe_yaml.YamlProblem:
        return {}
    return data if isinstance(data, dict) else {}
