"""The check gate (prior-art §4.8): deterministic, machine-decidable invariants, the only activation gate.

Rules run in a stable order so the same build always reports the same failures in the same order:
``path_unique``, ``page_count``, ``page_count_drift`` (only with a parent), ``token_budget``; then per page in
path order ``content_non_empty``, ``page_kind_allowed``, ``page_size``, ``citation_required``,
``citation_resolvable``, ``link_type_allowed``, ``link_closed``; then the incremental-only
``incremental_coverage`` and ``incremental_scope``; finally ``index_coverage``. Any failure fails the build and
no page is written. Pure: no database, no model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from uuid import UUID

from agentmate.knowledge.wiki.profiles import ProfileSettings
from agentmate.knowledge.wiki.prompt import INDEX_PATH, LOG_PATH, CitationIn, LinkIn

RULES = ("path_unique", "page_count", "page_count_drift", "token_budget", "content_non_empty",
         "page_kind_allowed", "page_size", "citation_required", "citation_resolvable", "link_type_allowed",
         "link_closed", "incremental_coverage", "incremental_scope", "index_coverage")
GENERATED_KINDS = ("index", "log")


@dataclass(slots=True)
class DraftPage:
    path: str
    kind: str
    title: str
    content: str
    citations: list[CitationIn] = field(default_factory=list)
    links: list[LinkIn] = field(default_factory=list)
    derived_from_build_id: UUID | None = None  # set on a page carried over from the parent build


@dataclass(frozen=True, slots=True)
class IncrementalPlan:
    scheduled: Set[str]               # pages the impact set says must be rewritten or deleted
    parent_hashes: Mapping[str, str]  # every parent page path → content hash
    written: Mapping[str, str]        # pages the model wrote this build → content hash
    deleted: Set[str]                 # pages the model deleted


@dataclass(frozen=True, slots=True)
class Failure:
    rule: str
    detail: str
    page_path: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"rule": self.rule, "page_path": self.page_path, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class CheckInput:
    pages: Sequence[DraftPage]
    profile: ProfileSettings
    document_paths: Set[str]
    tokens: int
    parent_page_count: int | None = None
    plan: IncrementalPlan | None = None


def check(inp: CheckInput) -> list[Failure]:
    p = inp.profile
    out: list[Failure] = []
    counts = Counter(page.path for page in inp.pages)
    out += [Failure("path_unique", f"{n} pages share the path", path) for path, n in sorted(counts.items()) if n > 1]
    total = len(inp.pages)
    if total > p.max_pages:
        out.append(Failure("page_count", f"{total} pages, more than the profile's max_pages {p.max_pages}"))
    if inp.parent_page_count is not None and max(total, inp.parent_page_count) > 0:
        drift = abs(total - inp.parent_page_count) / max(total, inp.parent_page_count)
        if drift > p.max_page_count_drift:
            out.append(Failure("page_count_drift", f"{inp.parent_page_count} → {total} pages is a drift of "
                                                   f"{drift:.2f}, more than {p.max_page_count_drift:.2f}"))
    if inp.tokens > p.max_build_tokens:
        out.append(Failure("token_budget", f"{inp.tokens} tokens, more than max_build_tokens {p.max_build_tokens}"))
    paths = set(counts) | {LOG_PATH}
    for page in sorted(inp.pages, key=lambda pg: pg.path):
        out += _page_failures(page, inp, paths)
    if inp.plan is not None:
        out += _incremental_failures(inp.plan)
    out += _index_failures(inp.pages)
    return out


def _page_failures(page: DraftPage, inp: CheckInput, paths: Set[str]) -> list[Failure]:
    p = inp.profile
    out: list[Failure] = []
    if not page.content.strip():
        out.append(Failure("content_non_empty", "the page has no content", page.path))
    if page.kind not in p.allowed_page_kinds:
        out.append(Failure("page_kind_allowed", f"kind {page.kind!r} is not one of "
                                                f"{', '.join(p.allowed_page_kinds)}", page.path))
    if len(page.content) > p.max_page_chars:
        out.append(Failure("page_size", f"{len(page.content)} characters, more than max_page_chars "
                                        f"{p.max_page_chars}", page.path))
    if p.citation_policy == "required" and page.kind not in GENERATED_KINDS and not page.citations:
        out.append(Failure("citation_required", "the profile requires citations and the page has none", page.path))
    for c in page.citations:
        if c.path not in inp.document_paths:
            out.append(Failure("citation_resolvable", f"cites {c.path!r}, which is not a document of the compiled "
                                                      "revision", page.path))
    for link in page.links:
        if link.type not in p.allowed_link_types:
            out.append(Failure("link_type_allowed", f"link type {link.type!r} is not one of "
                                                    f"{', '.join(p.allowed_link_types)}", page.path))
    for link in page.links:
        if link.target not in paths:
            out.append(Failure("link_closed", f"links to {link.target!r}, which is not a page of this build",
                               page.path))
    return out


def _incremental_failures(plan: IncrementalPlan) -> list[Failure]:
    out = [Failure("incremental_coverage", "scheduled for recompilation but neither rewritten nor deleted", path)
           for path in sorted(plan.scheduled) if path not in plan.written and path not in plan.deleted]
    for path in sorted(set(plan.written) | set(plan.deleted)):
        if path in plan.scheduled or path not in plan.parent_hashes:
            continue  # in the plan, or a new page
        if path in plan.deleted:
            out.append(Failure("incremental_scope", "deleted although it was not scheduled", path))
        elif plan.written[path] != plan.parent_hashes[path]:
            out.append(Failure("incremental_scope", "changed although it was not scheduled", path))
    return out


def _index_failures(pages: Sequence[DraftPage]) -> list[Failure]:
    index = next((pg for pg in pages if pg.path == INDEX_PATH), None)
    linked = {link.target for link in index.links} if index else set()
    return [Failure("index_coverage", "not linked from wiki/index.md", pg.path)
            for pg in sorted(pages, key=lambda pg: pg.path)
            if pg.kind not in GENERATED_KINDS and pg.path not in (INDEX_PATH, LOG_PATH) and pg.path not in linked]
