"""The 17 API-key scopes of spec/001. ``X:rw`` implies ``X:r``; an empty list means full access."""

from __future__ import annotations

from collections.abc import Iterable

DOMAINS = ("todos", "notes", "reports", "bookmarks", "expenses", "memory", "skills", "knowledge")
SCOPES: tuple[str, ...] = (*(f"{d}:{m}" for d in DOMAINS for m in ("r", "rw")), "manage_keys")

DESCRIPTIONS = {
    "memory:r": "Read and search durable memories",
    "memory:rw": "Record events and store durable memories (implies memory:r)",
    "knowledge:r": "Read knowledge sources, revisions, and documents",
    "knowledge:rw": "Register/sync knowledge sources and push snapshots (implies knowledge:r)",
    "manage_keys": "Create/delete API keys",
}
for _d in DOMAINS:
    DESCRIPTIONS.setdefault(f"{_d}:r", f"Read {_d}")
    DESCRIPTIONS.setdefault(f"{_d}:rw", f"Read & write {_d} (implies {_d}:r)")


def expand(scopes: Iterable[str]) -> set[str]:
    """Every scope a list grants, with ``:rw`` expanded to include ``:r``."""
    out: set[str] = set()
    for s in scopes:
        out.add(s)
        if s.endswith(":rw"):
            out.add(s[:-1])
    return out


def satisfies(granted: Iterable[str], required: str) -> bool:
    granted = list(granted)
    return not granted or required in expand(granted)


def covers(parent: Iterable[str], child: Iterable[str]) -> bool:
    """True when a key with ``parent`` scopes may mint a key with ``child`` scopes."""
    parent = list(parent)
    child = list(child)
    if not parent:
        return True
    if not child:  # an empty child list would mean full access
        return False
    return expand(child) <= expand(parent)
