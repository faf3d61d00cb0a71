"""Wiki lint rules (spec/001 K3.7, prior-art §4.8) over plain values: each rule fires on a build made for it and
stays quiet on the near miss."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentmate.knowledge.quality.lint import RULES, Citation, Document, Link, Page, counts, run

INDEX = Page("wiki/index.md", "index")
LOG = Page("wiki/log.md", "log")


def rules(findings):
    return [(f.rule, f.page_path, f.related_path) for f in findings]


def index_links(*pages: Page) -> list[Link]:
    return [Link(INDEX.path, p.path, "references") for p in pages]


def test_a_page_linked_only_from_the_index_is_an_orphan_but_an_overview_is_not():
    a, b, ov = Page("wiki/a.md", "concept"), Page("wiki/b.md", "concept"), Page("wiki/ov.md", "overview")
    links = [
        *index_links(a, b, ov),
        Link(a.path, b.path, "references"),
        Link(b.path, b.path, "references"),
        Link(LOG.path, a.path, "references"),
    ]
    found = run([INDEX, LOG, a, b, ov], links, [], [])
    # a: only the index and the log link it; b: a links it (its self link does not count); the overview is an
    # entry page.
    assert rules(found) == [("orphan_page", "wiki/a.md", None)]


def test_citations_of_removed_and_rewritten_documents_are_stale_and_unchanged_ones_are_not():
    a = Page("wiki/a.md", "summary")
    cites = [
        Citation(a.path, "raw/gone.md", "h1"),
        Citation(a.path, "raw/changed.md", "h2"),
        Citation(a.path, "raw/same.md", "h3"),
        Citation(a.path, "raw/same.md", "h3"),
        Citation(a.path, "raw/unresolved.md", None),
    ]
    docs = [
        Document("raw/changed.md", "h2-new"),
        Document("raw/same.md", "h3"),
        Document("raw/unresolved.md", "x"),
    ]
    found = [f for f in run([INDEX, a], index_links(a), cites, docs) if f.rule == "stale_citation"]
    assert [(f.related_path, "removed" in f.detail, "rewritten" in f.detail) for f in found] == [
        ("raw/changed.md", False, True),
        ("raw/gone.md", True, False),
    ]
    assert {f.severity for f in found} == {"warning"}


def test_the_stale_cascade_follows_references_and_elaborates_nearest_first_up_to_four_hops():
    stale = Page("wiki/stale.md", "summary")
    chain = [Page(f"wiki/c{i}.md", "concept") for i in range(1, 7)]
    sup, ent, idx_only = (
        Page("wiki/newer.md", "summary"),
        Page("wiki/e.md", "entity"),
        Page("wiki/x.md", "concept"),
    )
    links = [
        Link(chain[0].path, stale.path, "references"),
        Link(chain[1].path, chain[0].path, "elaborates"),
        Link(chain[2].path, chain[1].path, "references"),
        Link(chain[3].path, chain[2].path, "references"),
        Link(chain[4].path, chain[3].path, "references"),
        Link(chain[5].path, chain[0].path, "references"),
        # not dependencies: a replacement, a mention, the index
        Link(sup.path, stale.path, "supersedes"),
        Link(ent.path, stale.path, "mentions_entity"),
        Link(INDEX.path, stale.path, "references"),
    ]
    cites = [Citation(stale.path, "raw/a.md", "old")]
    found = [
        f
        for f in run([INDEX, stale, *chain, sup, ent, idx_only], links, cites, [Document("raw/a.md", "new")])
        if f.rule == "stale_cascade"
    ]
    assert [(f.page_path, f.detail.split()[0]) for f in found] == [
        ("wiki/c1.md", "1"),
        ("wiki/c2.md", "2"),
        ("wiki/c6.md", "2"),
        ("wiki/c3.md", "3"),
        ("wiki/c4.md", "4"),
    ]
    assert {f.severity for f in found} == {"info"}


def test_a_recorded_contradiction_is_reported_with_its_note():
    a, b = Page("wiki/a.md", "concept"), Page("wiki/b.md", "concept")
    found = run(
        [a, b],
        [
            Link(a.path, b.path, "contradicts", "a says 30 days, b says 60"),
            Link(b.path, a.path, "references"),
        ],
        [],
        [],
    )
    got = [f for f in found if f.rule == "recorded_contradiction"]
    assert [(f.page_path, f.related_path, f.detail) for f in got] == [
        ("wiki/a.md", "wiki/b.md", "a says 30 days, b says 60")
    ]


def test_a_supersede_is_unlabelled_without_a_frontmatter_pointer_or_a_link_forward():
    old = Page("wiki/old.md", "concept", {"superseded_by": ""})
    labelled = Page("wiki/old2.md", "concept", {"superseded_by": "wiki/new2.md"})
    linked = Page("wiki/old3.md", "concept")
    mention_back = Page("wiki/old4.md", "concept")
    new = [Page(f"wiki/new{i}.md", "concept") for i in ("", "2", "3", "4")]
    links = [
        Link("wiki/new.md", old.path, "supersedes"),
        Link("wiki/new2.md", labelled.path, "supersedes"),
        Link("wiki/new3.md", linked.path, "supersedes"),
        Link(linked.path, "wiki/new3.md", "references"),
        Link("wiki/new4.md", mention_back.path, "supersedes"),
        Link(mention_back.path, "wiki/new4.md", "mentions_entity"),
    ]
    found = [
        f
        for f in run([old, labelled, linked, mention_back, *new], links, [], [])
        if f.rule == "unlabelled_supersede"
    ]
    assert rules(found) == [
        ("unlabelled_supersede", "wiki/old.md", "wiki/new.md"),
        ("unlabelled_supersede", "wiki/old4.md", "wiki/new4.md"),
    ]


def test_a_mentions_entity_link_to_a_page_that_is_not_an_entity_is_reported():
    a, ent, con = Page("wiki/a.md", "summary"), Page("wiki/ent.md", "entity"), Page("wiki/con.md", "concept")
    links = [
        Link(a.path, ent.path, "mentions_entity"),
        Link(a.path, con.path, "mentions_entity"),
        Link(a.path, "wiki/missing.md", "mentions_entity"),
    ]
    found = [f for f in run([a, ent, con], links, [], []) if f.rule == "entity_link_kind"]
    assert [(f.page_path, f.related_path, "concept" in f.detail) for f in found] == [
        ("wiki/a.md", "wiki/con.md", True)
    ]


def test_an_indexable_document_with_text_that_no_page_cites_is_uncovered():
    a = Page("wiki/a.md", "summary")
    docs = [
        Document("raw/cited.md", "1"),
        Document("raw/ignored.md", "2"),
        Document("raw/logo.png", "3", indexable=False),
        Document("raw/empty.md", "4", has_text=False),
    ]
    found = [
        f
        for f in run([a], [], [Citation(a.path, "raw/cited.md", "0")], docs)
        if f.rule == "uncovered_document"
    ]
    assert rules(found) == [("uncovered_document", None, "raw/ignored.md")]


def test_a_healthy_wiki_has_no_findings_and_findings_come_grouped_in_rule_order():
    a, b = Page("wiki/a.md", "concept"), Page("wiki/b.md", "concept")
    healthy = run(
        [INDEX, a, b],
        [*index_links(a, b), Link(a.path, b.path, "references"), Link(b.path, a.path, "references")],
        [Citation(a.path, "raw/x.md", "1"), Citation(b.path, "raw/x.md", "1")],
        [Document("raw/x.md", "1")],
    )
    assert healthy == []
    messy = run(
        [INDEX, a, b],
        [Link(a.path, b.path, "contradicts"), Link(a.path, b.path, "mentions_entity")],
        [Citation(a.path, "raw/x.md", "0")],
        [Document("raw/x.md", "1"), Document("raw/y.md", "2")],
    )
    order = [f.rule for f in messy]
    assert order == sorted(order, key=RULES.index)
    assert set(order) == {
        "orphan_page",
        "stale_citation",
        "recorded_contradiction",
        "entity_link_kind",
        "uncovered_document",
    }
    assert counts(messy) == {
        "findings_total": len(messy),
        "findings_warning": sum(f.severity == "warning" for f in messy),
        "findings_info": sum(f.severity == "info" for f in messy),
    }


def test_frontmatter_is_read_safely_and_anything_unreadable_is_empty():
    from agentmate.knowledge.quality.frontmatter import frontmatter

    assert frontmatter("---\nsuperseded_by: wiki/new.md\n---\n# Old\n") == {"superseded_by": "wiki/new.md"}
    assert frontmatter("# no frontmatter\n---\nx: 1\n---\n") == {}
    assert frontmatter("---\n- a list\n---\n") == {}
    assert frontmatter("---\nx: [unclosed\n---\n") == {}
    assert frontmatter("---\nx: &a 1\ny: *a\n---\n") == {}
    assert frontmatter("---\nx: 1\n") == {}


def test_a_frontmatter_value_the_loader_refuses_is_a_finding_not_an_exception():
    # Issue 20: pages are model-written; 2024-13-45 raised ValueError out of the reader and broke every lint run
    from agentmate.knowledge.quality.frontmatter import frontmatter, read

    for value in ("2024-13-45", "!!int 0x", "!!float abc", "9" * 5000, "!!bool maybe"):
        content = f"---\nsuperseded_by: {value}\n---\n# Old\n"
        data, problem = read(content)
        assert data == {} and frontmatter(content) == {}
        assert problem is not None and problem.startswith("superseded_by: ") and "(line 2)" in problem
    assert read("---\nx: [unclosed\n---\n")[1] is not None and read("---\n- a list\n---\n") == ({}, None)
    assert read("# none\n") == ({}, None)
    old = Page("wiki/old.md", "summary", *read("---\nsuperseded_by: 2024-13-45\n---\n# Old\n"))
    new = Page("wiki/new.md", "summary")
    found = run([INDEX, old, new], [*index_links(old, new), Link(new.path, old.path, "supersedes")], [], [])
    assert [(f.rule, f.page_path) for f in found if f.rule == "unreadable_frontmatter"] == [
        ("unreadable_frontmatter", "wiki/old.md")
    ]
    assert "superseded_by: is not a valid YAML timestamp" in found[-1].detail


_BLOCK = st.text(alphabet=st.sampled_from(list("abn:-[]{}!&*?|>#'\"\n 0123456789.,+e_x%@`\t")), max_size=80)


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        _BLOCK,
        st.builds(
            "superseded_by: {}".format,
            st.sampled_from(
                [
                    "!!int 0x",
                    "2024-13-45",
                    "!!binary '@@'",
                    "{[a]: 1}",
                    "!foo x",
                    "[[[[[[[[[[1]]]]]]]]]]",
                    "9" * 4400,
                ]
            ),
        ),
    )
)
def test_any_frontmatter_block_reads_as_a_mapping_with_or_without_a_problem(block):
    from agentmate.knowledge.quality.frontmatter import read

    data, problem = read(f"---\n{block}\n---\n# Page\n")
    assert isinstance(data, dict) and (problem is None or isinstance(problem, str))
