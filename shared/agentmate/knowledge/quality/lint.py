"""Advisory wiki lint (spec/001 K3.7, prior-art §4.8): pure rules over one build's pages, links and citations
and the source's current documents. No I/O; the service loads the plain values below and stores the findings.

Lint runs on a wiki that is already serving and blocks nothing: a rule that could stop a wiki from serving
belongs in the check gate. Every rule reports something check cannot see, either because it is only knowable
after the build (staleness is a relation between an old build and the sources as they are now) or because it is a
judgement about quality rather than an invariant.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

Rule = Literal[
    "orphan_page",
    "stale_citation",
    "stale_cascade",
    "recorded_contradiction",
    "unlabelled_supersede",
    "entity_link_kind",
    "uncovered_document",
    "unreadable_frontmatter",
]
RULES: tuple[Rule, ...] = (
    "orphan_page",
    "stale_citation",
    "stale_cascade",
    "recorded_contradiction",
    "unlabelled_supersede",
    "entity_link_kind",
    "uncovered_document",
    "unreadable_frontmatter",
)
Severity = Literal["warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("warning", "info")

# The generated pages: the index links every page (check's index_coverage), so counting its links as inbound
# connectivity would make orphan_page unable to fire; the log is a transcript, not a reader's path.
GENERATED_KINDS = frozenset({"index", "log"})
# Pages a reader is meant to enter through, so having no inbound link is their normal state.
ENTRY_KINDS = GENERATED_KINDS | {"overview"}
# Edges along which staleness propagates ("this page builds on that one"). A page superseding a stale page is its
# replacement, contradicts records a disagreement and mentions_entity a mention: none of them rests on the other.
DEPENDENCY_LINKS = frozenset({"references", "elaborates"})
# Beyond a few hops a well-connected wiki's closure is the whole wiki, and a finding on every page says nothing.
CASCADE_MAX_HOPS = 4


@dataclass(frozen=True, slots=True)
class Page:
    path: str
    kind: str
    frontmatter: Mapping[str, Any] = field(default_factory=dict)
    frontmatter_problem: str | None = None  # why a frontmatter block that is there could not be read


@dataclass(frozen=True, slots=True)
class Link:
    source_path: str
    target_path: (
        str  # as written; it may name no page of the build (a dangling link check would have refused)
    )
    link_type: str
    note: str = ""


@dataclass(frozen=True, slots=True)
class Citation:
    page_path: str
    document_path: str
    cited_sha256: str | None  # the document's hash in the build's revision; None when it was not resolved


@dataclass(frozen=True, slots=True)
class Document:
    """A document of the source's current active revision."""

    path: str
    sha256: str
    indexable: bool = True
    has_text: bool = True


@dataclass(frozen=True, slots=True)
class Finding:
    rule: Rule
    severity: Severity
    page_path: str | None
    related_path: str | None  # the other end: link target, replacing page, cited or uncovered document
    detail: str


def run(
    pages: Sequence[Page], links: Iterable[Link], citations: Iterable[Citation], documents: Iterable[Document]
) -> list[Finding]:
    """Every rule, grouped by rule in the order of RULES; within a rule by page path (the cascade nearest first)."""
    by_path = {p.path: p for p in pages}
    resolved = [lk for lk in links if lk.source_path in by_path]
    current = {d.path: d for d in documents}
    cites = list(citations)
    stale, stale_findings = _stale_citations(by_path, cites, current)
    return [
        *_orphans(by_path, resolved),
        *stale_findings,
        *_cascade(by_path, resolved, stale),
        *_contradictions(resolved),
        *_unlabelled_supersedes(by_path, resolved),
        *_entity_link_kinds(by_path, resolved),
        *_uncovered(current.values(), cites),
        *_unreadable_frontmatter(by_path),
    ]


def _orphans(pages: Mapping[str, Page], links: Sequence[Link]) -> list[Finding]:
    linked = {
        lk.target_path
        for lk in links
        if lk.source_path != lk.target_path and pages[lk.source_path].kind not in GENERATED_KINDS
    }
    return [
        Finding(
            "orphan_page",
            "warning",
            path,
            None,
            "no other content page links here; it is reachable only from the index",
        )
        for path in sorted(pages)
        if pages[path].kind not in ENTRY_KINDS and path not in linked
    ]


def _stale_citations(
    pages: Mapping[str, Page], citations: Sequence[Citation], current: Mapping[str, Document]
) -> tuple[set[str], list[Finding]]:
    stale: set[str] = set()
    found: dict[tuple[str, str], Finding] = {}
    for c in citations:
        if c.page_path not in pages or (c.page_path, c.document_path) in found:
            continue
        doc = current.get(c.document_path)
        if doc is None:
            detail = "the cited document was removed from the source's current revision"
        elif c.cited_sha256 is not None and c.cited_sha256 != doc.sha256:
            detail = (
                "the cited document was rewritten since this build's revision; the claim may no longer hold"
            )
        else:
            continue
        stale.add(c.page_path)
        found[(c.page_path, c.document_path)] = Finding(
            "stale_citation", "warning", c.page_path, c.document_path, detail
        )
    return stale, [found[k] for k in sorted(found)]


def _cascade(pages: Mapping[str, Page], links: Sequence[Link], stale: set[str]) -> list[Finding]:
    """Pages resting, through references/elaborates edges, on a page with stale citations (breadth first, so each
    page gets its nearest distance)."""
    dependents: dict[str, set[str]] = {}
    for lk in links:
        if (
            lk.link_type in DEPENDENCY_LINKS
            and lk.target_path in pages
            and pages[lk.source_path].kind not in GENERATED_KINDS
        ):
            dependents.setdefault(lk.target_path, set()).add(lk.source_path)
    hops: dict[str, int] = dict.fromkeys(stale, 0)
    queue = deque(sorted(stale))
    while queue:
        path = queue.popleft()
        if hops[path] >= CASCADE_MAX_HOPS:
            continue
        for dep in sorted(dependents.get(path, ())):
            if dep not in hops:
                hops[dep] = hops[path] + 1
                queue.append(dep)
    cascaded = sorted((h, p) for p, h in hops.items() if h > 0)
    return [
        Finding("stale_cascade", "info", p, None, f"{h} hop(s) from a page with stale citations")
        for h, p in cascaded
    ]


def _contradictions(links: Sequence[Link]) -> list[Finding]:
    out = [
        Finding(
            "recorded_contradiction",
            "warning",
            lk.source_path,
            lk.target_path,
            lk.note or "the compiler recorded that these pages disagree; nobody has resolved it",
        )
        for lk in links
        if lk.link_type == "contradicts"
    ]
    return _sorted(out)


def _unlabelled_supersedes(pages: Mapping[str, Page], links: Sequence[Link]) -> list[Finding]:
    forward = {
        (lk.source_path, lk.target_path) for lk in links if lk.link_type in ("references", "supersedes")
    }
    out: dict[tuple[str, str], Finding] = {}
    for lk in links:
        if lk.link_type != "supersedes" or lk.target_path not in pages or lk.target_path == lk.source_path:
            continue
        older, newer = pages[lk.target_path], lk.source_path
        # Key presence is not a pointer: a null or empty superseded_by tells a reader nothing.
        marker = older.frontmatter.get("superseded_by")
        if (isinstance(marker, str) and marker.strip()) or (older.path, newer) in forward:
            continue
        out[(older.path, newer)] = Finding(
            "unlabelled_supersede",
            "warning",
            older.path,
            newer,
            "this superseded page carries no pointer to the page that replaced it "
            "(no superseded_by in its frontmatter, no link forward)",
        )
    return [out[k] for k in sorted(out)]


def _entity_link_kinds(pages: Mapping[str, Page], links: Sequence[Link]) -> list[Finding]:
    out = {
        (lk.source_path, lk.target_path): Finding(
            "entity_link_kind",
            "info",
            lk.source_path,
            lk.target_path,
            f"a mentions_entity link points at a {pages[lk.target_path].kind} page, not an entity",
        )
        for lk in links
        if lk.link_type == "mentions_entity"
        and lk.target_path in pages
        and pages[lk.target_path].kind != "entity"
    }
    return [out[k] for k in sorted(out)]


def _uncovered(documents: Iterable[Document], citations: Sequence[Citation]) -> list[Finding]:
    # Matched on path alone: a covered document whose bytes changed is stale_citation's finding, not this one.
    cited = {c.document_path for c in citations}
    return [
        Finding("uncovered_document", "info", None, d.path, "no page of this build cites this document")
        for d in sorted(documents, key=lambda d: d.path)
        if d.indexable and d.has_text and d.path not in cited
    ]


def _unreadable_frontmatter(pages: Mapping[str, Page]) -> list[Finding]:
    # The page reads as having no frontmatter (so a superseded_by in it is missed); the model wrote a value the
    # YAML loader refuses, such as 2024-13-45.
    return [
        Finding(
            "unreadable_frontmatter",
            "warning",
            path,
            None,
            f"the page's frontmatter cannot be read, so lint treats it as absent: {page.frontmatter_problem}",
        )
        for path, page in sorted(pages.items())
        if page.frontmatter_problem
    ]


def _sorted(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f.page_path or "", f.related_path or "", f.detail))


def counts(findings: Iterable[Finding]) -> dict[str, int]:
    fs = list(findings)
    return {
        "findings_total": len(fs),
        "findings_warning": sum(1 for f in fs if f.severity == "warning"),
        "findings_info": sum(1 for f in fs if f.severity == "info"),
    }
