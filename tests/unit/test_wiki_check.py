"""The check gate, rule by rule: each fails on purpose, the order is stable, a clean build passes."""

from __future__ import annotations

from dataclasses import replace

from agentmate.knowledge.wiki.check import RULES, CheckInput, DraftPage, IncrementalPlan, check
from agentmate.knowledge.wiki.profiles import ProfileSettings
from agentmate.knowledge.wiki.prompt import CitationIn, LinkIn
from agentmate.knowledge.wiki.render import content_hash, index_page

DOCS = {"docs/a.md", "docs/b.md"}


def _page(path: str, doc: str = "docs/a.md", **kw) -> DraftPage:
    return DraftPage(path=path, kind=kw.pop("kind", "summary"), title=kw.pop("title", path),
                     content=kw.pop("content", f"# {path}\n\ntext\n"), citations=kw.pop("citations", [CitationIn(doc)]),
                     links=kw.pop("links", []), **kw)


def _with_index(pages: list[DraftPage]) -> list[DraftPage]:
    return [*pages, index_page(pages, "KB")]


def _rules(pages, **kw) -> list[str]:
    inp = CheckInput(pages=pages, profile=kw.pop("profile", ProfileSettings()), document_paths=DOCS,
                     tokens=kw.pop("tokens", 10), **kw)
    return [f.rule for f in check(inp)]


def test_a_clean_build_passes():
    assert _rules(_with_index([_page("wiki/a.md", links=[LinkIn("wiki/b.md", "references")]),
                               _page("wiki/b.md", "docs/b.md")])) == []


def test_each_rule_fails_on_purpose():
    small = ProfileSettings(max_pages=2, max_page_chars=10, max_build_tokens=5)
    cases = {
        "path_unique": (_with_index([_page("wiki/a.md", title="A"), _page("wiki/a.md", title="A!")]), {}),
        "page_count": (_with_index([_page("wiki/a.md", content="x"), _page("wiki/b.md", content="y")]),
                       {"profile": replace(small, max_page_chars=10_000)}),
        "page_count_drift": (_with_index([_page("wiki/a.md")]), {"parent_page_count": 10}),
        "token_budget": (_with_index([_page("wiki/a.md")]), {"tokens": 400_001}),
        "content_non_empty": (_with_index([_page("wiki/a.md", content=" \n")]), {}),
        "page_kind_allowed": (_with_index([_page("wiki/a.md", kind="essay")]), {}),
        "page_size": (_with_index([_page("wiki/a.md", content="x" * 20_001)]), {}),
        "citation_required": (_with_index([_page("wiki/a.md", citations=[])]), {}),
        "citation_resolvable": (_with_index([_page("wiki/a.md", "docs/missing.md")]), {}),
        "link_type_allowed": (_with_index([_page("wiki/a.md", links=[LinkIn("wiki/a.md", "likes")])]), {}),
        "link_closed": (_with_index([_page("wiki/a.md", links=[LinkIn("wiki/gone.md", "references")])]), {}),
        "incremental_coverage": (_with_index([_page("wiki/a.md")]), {"plan": IncrementalPlan(
            scheduled={"wiki/b.md"}, parent_hashes={"wiki/a.md": "h", "wiki/b.md": "h"}, written={}, deleted=set())}),
        "incremental_scope": (_with_index([_page("wiki/a.md")]), {"plan": IncrementalPlan(
            scheduled=set(), parent_hashes={"wiki/a.md": "old"}, written={"wiki/a.md": "new"}, deleted=set())}),
        # an index missing pages (the failure LLM-written indexes are known for)
        "index_coverage": ([_page("wiki/a.md"), _page("wiki/b.md"), index_page([_page("wiki/a.md")], "KB")], {}),
    }
    assert set(cases) == set(RULES)
    for rule, (pages, kw) in cases.items():
        assert rule in _rules(pages, **kw), rule


def test_failures_come_in_the_stable_rule_order():
    pages = [_page("wiki/b.md", kind="essay", citations=[], links=[LinkIn("wiki/x.md", "likes")]),
             _page("wiki/a.md", "docs/missing.md"), _page("wiki/a.md")]
    got = _rules(pages, parent_page_count=30, tokens=500_000)
    assert got == ["path_unique", "page_count_drift", "token_budget", "citation_resolvable", "page_kind_allowed",
                   "citation_required", "link_type_allowed", "link_closed", "index_coverage", "index_coverage",
                   "index_coverage"]
    assert got == _rules(list(reversed(pages)), parent_page_count=30, tokens=500_000)


def test_incremental_rules_allow_planned_and_new_pages_and_unchanged_rewrites():
    plan = IncrementalPlan(scheduled={"wiki/a.md", "wiki/c.md"},
                           parent_hashes={"wiki/a.md": "1", "wiki/b.md": content_hash("same"), "wiki/c.md": "3"},
                           written={"wiki/a.md": "9", "wiki/b.md": content_hash("same"), "wiki/new.md": "n"},
                           deleted={"wiki/c.md"})
    assert _rules(_with_index([_page("wiki/a.md"), _page("wiki/b.md"), _page("wiki/new.md")]), plan=plan) == []
    deleted_outside = replace(plan, deleted={"wiki/c.md", "wiki/b.md"})
    assert _rules(_with_index([_page("wiki/a.md")]), plan=deleted_outside) == ["incremental_scope"]


def test_generated_pages_need_no_citation_and_the_log_is_a_closed_link_target():
    pages = _with_index([_page("wiki/a.md", links=[LinkIn("wiki/log.md", "references")])])
    assert _rules(pages) == []
