"""Incremental compilation: the impact set, computed from the database and never asked of the model.

Documents are diffed by path and sha256 against the parent build's revision. A page is scheduled when it cites a
document that changed or disappeared, plus one hop of pages linking to those: the recompile may drop or rename
its target, and a carried-over page pointing at a page that no longer exists is a dangling link check refuses.
Closure stops at one hop on purpose (full transitive closure converges on the whole wiki).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentmate.knowledge.wiki.prompt import RESERVED_PATHS


@dataclass(frozen=True, slots=True)
class DocumentChanges:
    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def touched(self) -> frozenset[str]:
        return frozenset(self.changed) | frozenset(self.removed)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def listing(self) -> tuple[tuple[str, str], ...]:
        rows = [(p, "added") for p in self.added] + [(p, "changed") for p in self.changed]
        rows += [(p, "removed") for p in self.removed]
        return tuple(sorted(rows))


@dataclass(frozen=True, slots=True)
class ImpactSet:
    changes: DocumentChanges
    citing: tuple[str, ...]  # pages citing a changed or removed document
    linking: tuple[str, ...]  # one hop: pages linking to those

    @property
    def scheduled(self) -> frozenset[str]:
        return frozenset(self.citing) | frozenset(self.linking)

    def as_dict(self) -> dict[str, Any]:
        return {
            "documents_added": list(self.changes.added),
            "documents_changed": list(self.changes.changed),
            "documents_removed": list(self.changes.removed),
            "pages_citing_changes": list(self.citing),
            "pages_linking_to_those": list(self.linking),
            "scheduled": sorted(self.scheduled),
        }


def diff_documents(parent: Mapping[str, str], current: Mapping[str, str]) -> DocumentChanges:
    """``parent``/``current``: document path → sha256."""
    return DocumentChanges(
        added=tuple(sorted(p for p in current if p not in parent)),
        changed=tuple(sorted(p for p in current if p in parent and parent[p] != current[p])),
        removed=tuple(sorted(p for p in parent if p not in current)),
    )


def impact_set(changes: DocumentChanges, parent_pages: Sequence[dict[str, Any]]) -> ImpactSet:
    """``parent_pages``: rows of ``repository.build_pages_full`` (path, citations[document_path], links[target])."""
    pages = [p for p in parent_pages if p["path"] not in RESERVED_PATHS]
    touched = changes.touched
    citing = sorted(p["path"] for p in pages if any(c["document_path"] in touched for c in p["citations"]))
    cited = set(citing)
    linking = sorted(
        p["path"]
        for p in pages
        if p["path"] not in cited and any(link["target_path"] in cited for link in p["links"])
    )
    return ImpactSet(changes, tuple(citing), tuple(linking))
