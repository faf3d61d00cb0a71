"""A page's YAML frontmatter (a leading ``---`` block), read with a safe loader; anything unreadable is empty.

Lint reads ``superseded_by`` from it. A page without frontmatter, or with a block that is not a mapping, simply
has none: lint reports what the page lacks, it does not fail on it.
"""

from __future__ import annotations

from typing import Any

import yaml

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
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(block, Loader=loader)):
            return {}
        data: Any = yaml.load(block, Loader=loader)
    except yaml.YAMLError:
        return {}
    return data if isinstance(data, dict) else {}
