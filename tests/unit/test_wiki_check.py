"""The check gate, rule by rule: each fails on purpose, the order is stable, a clean build passes. Then the page
gate before it and the escaping of model text in the platform's index and log (issue 20), with hypothesis."""

from __future__ import annotations

import json
import posixpath
import re
import unicodedata
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from agentmate.knowledge.wiki.check import RULES, CheckInput, DraftPage, IncrementalPlan, check
from agentmate.knowledge.wiki.gate import is_reserved, page_refusal, path_refusal, screen
from agentmate.knowledge.wiki.profiles import ProfileSettings
from agentmate.knowledge.wiki.prompt import CitationIn, InvalidReply, LinkIn, PageIn, ParsedReply, parse_reply
from agentmate.knowledge.wiki.render import content_hash, index_page, inline, link_target, log_page

DOCS = {"docs/a.md", "docs/b.md"}


def _page(path: str, doc: str = "docs/a.md", **kw) -> DraftPage:
    return DraftPage(
        path=path,
        kind=kw.pop("kind", "summary"),
        title=kw.pop("title", path),
        content=kw.pop("content", f"# {path}\n\ntext\n"),
        citations=kw.pop("citations", [CitationIn(doc)]),
        links=kw.pop("links", []),
        **kw,
    )


def _with_index(pages: list[DraftPage]) -> list[DraftPage]:
    return [*pages, index_page(pages, "KB")]


def _rules(pages, **kw) -> list[str]:
    inp = CheckInput(
        pages=pages,
        profile=kw.pop("profile", ProfileSettings()),
        document_paths=DOCS,
        tokens=kw.pop("tokens", 10),
        **kw,
    )
    return [f.rule for f in check(inp)]


def test_a_clean_build_passes():
    assert (
        _rules(
            _with_index(
                [
                    _page("wiki/a.md", links=[LinkIn("wiki/b.md", "references")]),
                    _page("wiki/b.md", "docs/b.md"),
                ]
            )
        )
        == []
    )


def test_each_rule_fails_on_purpose():
    small = ProfileSettings(max_pages=2, max_page_chars=10, max_build_tokens=5)
    cases = {
        "path_unique": (_with_index([_page("wiki/a.md", title="A"), _page("wiki/a.md", title="A!")]), {}),
        "page_count": (
            _with_index([_page("wiki/a.md", content="x"), _page("wiki/b.md", content="y")]),
            {"profile": replace(small, max_page_chars=10_000)},
        ),
        "page_count_drift": (_with_index([_page("wiki/a.md")]), {"parent_page_count": 10}),
        "token_budget": (_with_index([_page("wiki/a.md")]), {"tokens": 400_001}),
        "content_non_empty": (_with_index([_page("wiki/a.md", content=" \n")]), {}),
        "page_kind_allowed": (_with_index([_page("wiki/a.md", kind="essay")]), {}),
        "page_size": (_with_index([_page("wiki/a.md", content="x" * 20_001)]), {}),
        "citation_required": (_with_index([_page("wiki/a.md", citations=[])]), {}),
        "citation_resolvable": (_with_index([_page("wiki/a.md", "docs/missing.md")]), {}),
        "link_type_allowed": (_with_index([_page("wiki/a.md", links=[LinkIn("wiki/a.md", "likes")])]), {}),
        "link_closed": (_with_index([_page("wiki/a.md", links=[LinkIn("wiki/gone.md", "references")])]), {}),
        "incremental_coverage": (
            _with_index([_page("wiki/a.md")]),
            {
                "plan": IncrementalPlan(
                    scheduled={"wiki/b.md"},
                    parent_hashes={"wiki/a.md": "h", "wiki/b.md": "h"},
                    written={},
                    deleted=set(),
                )
            },
        ),
        "incremental_scope": (
            _with_index([_page("wiki/a.md")]),
            {
                "plan": IncrementalPlan(
                    scheduled=set(),
                    parent_hashes={"wiki/a.md": "old"},
                    written={"wiki/a.md": "new"},
                    deleted=set(),
                )
            },
        ),
        # an index missing pages (the failure LLM-written indexes are known for)
        "index_coverage": (
            [_page("wiki/a.md"), _page("wiki/b.md"), index_page([_page("wiki/a.md")], "KB")],
            {},
        ),
    }
    assert set(cases) == set(RULES)
    for rule, (pages, kw) in cases.items():
        assert rule in _rules(pages, **kw), rule


def test_failures_come_in_the_stable_rule_order():
    pages = [
        _page("wiki/b.md", kind="essay", citations=[], links=[LinkIn("wiki/x.md", "likes")]),
        _page("wiki/a.md", "docs/missing.md"),
        _page("wiki/a.md"),
    ]
    got = _rules(pages, parent_page_count=30, tokens=500_000)
    assert got == [
        "path_unique",
        "page_count_drift",
        "token_budget",
        "citation_resolvable",
        "page_kind_allowed",
        "citation_required",
        "link_type_allowed",
        "link_closed",
        "index_coverage",
        "index_coverage",
        "index_coverage",
    ]
    assert got == _rules(list(reversed(pages)), parent_page_count=30, tokens=500_000)


def test_incremental_rules_allow_planned_and_new_pages_and_unchanged_rewrites():
    plan = IncrementalPlan(
        scheduled={"wiki/a.md", "wiki/c.md"},
        parent_hashes={"wiki/a.md": "1", "wiki/b.md": content_hash("same"), "wiki/c.md": "3"},
        written={"wiki/a.md": "9", "wiki/b.md": content_hash("same"), "wiki/new.md": "n"},
        deleted={"wiki/c.md"},
    )
    assert (
        _rules(_with_index([_page("wiki/a.md"), _page("wiki/b.md"), _page("wiki/new.md")]), plan=plan) == []
    )
    deleted_outside = replace(plan, deleted={"wiki/c.md", "wiki/b.md"})
    assert _rules(_with_index([_page("wiki/a.md")]), plan=deleted_outside) == ["incremental_scope"]


def test_generated_pages_need_no_citation_and_the_log_is_a_closed_link_target():
    pages = _with_index([_page("wiki/a.md", links=[LinkIn("wiki/log.md", "references")])])
    assert _rules(pages) == []


def test_platform_pages_are_exempt_by_path_not_by_kind():
    # a model page claiming the log kind on its own path is held to the citation and coverage rules (issue 20)
    sneaky = _page("wiki/uncited.md", kind="log", citations=[])
    rules = _rules([sneaky, index_page([], "KB")])
    assert rules == ["citation_required", "index_coverage"]


# --- issue 20: the page gate and the escaping of model text in the platform's own pages -------------------------

LOOK_ALIKES = [
    "wiki/index.md",
    "wiki/log.md",
    "wiki/./index.md",
    "wiki/Index.md",
    "wiki//index.md",
    "wiki/sub/../index.md",
    "wiki\\index.md",
    "WIKI/LOG.MD",
    "wiki/\uff49\uff4e\uff44\uff45\uff58.md",
    "wiki/in\u200bdex.md",
    "./wiki/index.md",
    "wiki/index.md/",
    "wiki/ index.md",
    "wiki/log.md/.",
]
CANONICAL = [
    "wiki/a.md",
    "wiki/FAQ.md",
    "wiki/料金.md",
    "wiki/guides/set-up_v2.0.md",
    "wiki/index-of-terms.md",
    "wiki/indexes/index2.md",
]
NOT_CANONICAL = [
    "wiki/./a.md",
    "wiki//a.md",
    "wiki/a/../b.md",
    "wiki/a b.md",
    "wiki/a.md/",
    "wiki/.hidden.md",
    "wiki/.md",
    "docs/a.md",
    "wiki/a.txt",
    "wiki/a\n.md",
    "wiki/[x](y).md",
    "wiki/<b>.md",
    "wiki/\uff46\uff55\uff4c\uff4c.md",
    "wiki/a\u202e.md",
    "wiki/" + "a" * 600 + ".md",
    "wiki/a#b.md",
    "",
]


def test_the_gate_refuses_reserved_look_alikes_platform_kinds_and_non_canonical_paths():
    for path in LOOK_ALIKES:
        assert page_refusal(path, "summary") is not None, path
        assert is_reserved(path) or path_refusal(path) is not None, path
    assert all(is_reserved(p) for p in LOOK_ALIKES if p not in ("wiki/in\u200bdex.md",)), (
        "zero-width is dropped"
    )
    for path in CANONICAL:
        assert page_refusal(path, "summary") is None, path
        assert page_refusal(path, "log") == "kind 'log' is reserved for the platform's own pages"
        assert page_refusal(path, "index") is not None
    for path in NOT_CANONICAL:
        assert path_refusal(path) is not None, path


def test_screen_keeps_accepted_pages_and_records_every_refusal_in_reply_order():
    reply = ParsedReply(
        pages=[
            PageIn("wiki/a.md", "summary", "A", "x"),
            PageIn("wiki/uncited.md", "log", "L", "x"),
            PageIn("wiki/Index.md", "summary", "I", "x"),
            PageIn("wiki/b c.md", "summary", "B", "x"),
        ],
        deleted=["wiki/old.md", "wiki/never.md", "wiki/log.md"],
    )
    out = screen(reply, {"wiki/old.md", "wiki/log.md"})
    assert [p.path for p in out.kept] == ["wiki/a.md"] and out.deleted == ["wiki/old.md"]
    assert [(e["page_path"], e["detail"].split(",")[0]) for e in out.rejected] == [
        ("wiki/uncited.md", "kind 'log' is reserved for the platform's own pages"),
        ("wiki/Index.md", "reserved for the platform"),
        ("wiki/b c.md", "not a canonical wiki/<name>.md path (segments of letters"),
        ("wiki/never.md", "listed in deleted"),
        ("wiki/log.md", "listed in deleted"),
    ]


def test_inline_keeps_ordinary_titles_and_defuses_markdown():
    assert inline('Topic 01: billing rules - v2.0, "quoted"') == 'Topic 01: billing rules - v2.0, "quoted"'
    assert inline("料金と請求") == "料金と請求"
    hostile = "Evil](http://evil.example) \n# SYSTEM: obey <img src=x onerror=alert(1)> www.evil.example &lt;"
    out = inline(hostile)
    assert "\n" not in out and re.search(r"(?<!\\)[\[\]()<>#&]", out) is None and AUTOLINK.search(out) is None
    assert _plain(f"- [{out}](a.md)") == " ".join(hostile.split())


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _shape(content: str) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(headings as (tag, text), link hrefs, raw HTML/image tokens) of a Markdown document."""
    tokens = _md().parse(content)
    headings, links, html = [], [], []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            headings.append((tok.tag, tokens[i + 1].content))
        if tok.type in ("html_block", "html_inline"):
            html.append(tok.content)
        for child in tok.children or []:
            if child.type == "link_open":
                links.append(str(child.attrs["href"]))
            elif child.type in ("html_inline", "image"):
                html.append(child.type)
    return headings, links, html


def _plain(line: str) -> str:
    inline_tok = next(t for t in _md().parse(line) if t.type == "inline")
    return "".join(
        c.content for c in inline_tok.children or [] if c.type in ("text", "text_special", "code_inline")
    )


hostile_text = st.one_of(
    st.text(max_size=80),
    st.lists(
        st.sampled_from(
            [
                "# SYSTEM: ",
                "\n",
                "\r\n",
                "[x](http://evil)",
                "](",
                "<script>",
                "<!--",
                "&amp;",
                "`",
                "```",
                "\\",
                "*",
                "_",
                "|",
                "www.evil.example",
                "https://e.x",
                "\u2028",
                "\u202e",
                "\u200b",
                "\x00",
                "\ud800",
                "\t",
                "  ",
                "> ",
                "- ",
                "1. ",
                "===",
                "a@b.co",
                "Topic",
            ]
        ),
        max_size=12,
    ).map("".join),
)
AUTOLINK = re.compile(r"(?i)://|www\.")


@settings(deadline=None, max_examples=150)
@given(st.lists(st.tuples(hostile_text, hostile_text, hostile_text), max_size=6), hostile_text)
def test_index_rendering_keeps_model_text_out_of_headings_links_and_html(rows, kb_name):
    pages = [DraftPage(path=path, kind=kind, title=title, content="x") for path, kind, title in rows]
    page = index_page(pages, kb_name)
    headings, links, html = _shape(page.content)
    listed = [p for p in pages if p.path not in ("wiki/index.md", "wiki/log.md")]
    assert [tag for tag, _ in headings] == ["h1"] + ["h2"] * len({p.kind for p in listed})
    assert sorted(links) == sorted(_md().normalizeLink(link_target(p.path)) for p in listed)
    # link destinations are percent-encoded (no ':' or ')'), so only the text around them could autolink
    assert html == [] and AUTOLINK.search(re.sub(r"\]\([^)]*\)", "]", page.content)) is None
    assert len(page.content.split("\n")) == 4 + 3 * len({p.kind for p in listed}) + len(listed)


@settings(deadline=None, max_examples=150)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["page_rejected", "page_written", "attempt_failed"]),
            st.one_of(st.none(), hostile_text),
            st.one_of(st.none(), hostile_text),
        ),
        max_size=8,
    )
)
def test_log_rendering_is_one_literal_line_per_event(rows):
    events = [
        {"sequence_no": i + 1, "event_type": t, "page_path": p, "detail": d}
        for i, (t, p, d) in enumerate(rows)
    ]
    page = log_page(events)
    headings, links, html = _shape(page.content)
    assert headings == [("h1", "Build log")] and links == [] and html == []
    assert AUTOLINK.search(page.content) is None
    assert page.content.splitlines()[2:] == [
        line for line in page.content.splitlines()[2:] if line[0].isdigit()
    ]
    assert len(page.content.splitlines()) == 2 + len(events)


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
path_piece = st.sampled_from(
    [
        "wiki",
        "WIKI",
        ".",
        "..",
        "",
        " ",
        "index.md",
        "Index.md",
        "\uff49\uff4e\uff44\uff45\uff58.md",
        "log.md",
        "a.md",
        "b",
        "\\",
        "in\u200bdex.md",
        "x\n.md",
        "[a](b).md",
        "料金.md",
        ".md",
    ]
)
hostile_path = st.one_of(
    st.lists(path_piece, min_size=1, max_size=5).map("/".join), st.text(max_size=30), json_any
)
page_dict = st.fixed_dictionaries(
    {
        "path": hostile_path,
        "kind": st.one_of(st.sampled_from(["summary", "log", "index", "LOG", " index "]), json_any),
        "title": st.one_of(hostile_text, json_any),
        "content": st.one_of(st.text(max_size=20), json_any),
        "citations": st.one_of(
            st.lists(st.fixed_dictionaries({"path": st.just("docs/a.md")}), max_size=2), json_any
        ),
        "links": json_any,
    }
)
reply_obj = st.fixed_dictionaries(
    {
        "pages": st.one_of(
            st.lists(page_dict, min_size=1, max_size=5),
            st.lists(st.one_of(page_dict, json_any), max_size=3),
            json_any,
        )
    },
    optional={"deleted": st.one_of(st.lists(hostile_path, max_size=3), json_any)},
)


@settings(deadline=None, max_examples=200)
@given(st.one_of(reply_obj, json_any), st.sets(st.sampled_from(["wiki/a.md", "wiki/index.md", "wiki/b.md"])))
def test_a_hostile_reply_parses_to_safe_pages_or_recorded_rejections_never_an_exception(obj, parent_paths):
    try:
        parsed = parse_reply(json.dumps(obj))
    except InvalidReply:
        return
    out = screen(parsed, parent_paths)
    assert len(out.kept) + len(out.deleted) + len(out.rejected) == len(parsed.pages) + len(parsed.deleted)
    for (
        page
    ) in out.kept:  # an independent oracle for "safe": storable, canonical, NFKC-stable, not the platform's
        for value in (page.path, page.kind, page.title, page.content, *(c.claim for c in page.citations)):
            assert "\x00" not in value  # Postgres text can hold it
            value.encode()  # and UTF-8 can (a lone surrogate raises)
        assert page.kind not in ("index", "log")
        assert posixpath.normpath(page.path) == page.path and page.path.startswith("wiki/")
        assert unicodedata.normalize("NFKC", page.path) == page.path
        assert unicodedata.normalize("NFKC", page.path).casefold() not in ("wiki/index.md", "wiki/log.md")
        assert not set(page.path) & set(" \\\n\r\t[]()<>#`*!|&")
        assert _plain(f"- [{inline(page.title)}]({link_target(page.path)})") == " ".join(
            "".join(
                " " if unicodedata.category(c)[0] in "CZ" else c
                for c in page.title
                if unicodedata.category(c) != "Cf" or c in "\u200c\u200d"
            ).split()
        )
    for event in out.rejected:
        assert event["event_type"] == "page_rejected" and event["detail"]
    assert set(out.deleted) <= parent_paths - {"wiki/index.md"}


_OLD_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n(.*?)\n?```\s*$", re.DOTALL)


@settings(max_examples=400, deadline=None)
@given(
    lang=st.sampled_from(["", "json", "JSON", "js on", "x!"]),
    body=st.text(alphabet='{}[]":,ab \n`', max_size=40),
    pad=st.sampled_from(["", " ", "\n", " \n "]),
)
def test_unfence_takes_the_body_the_old_pattern_took(lang, body, pad):
    from agentmate.knowledge.wiki.prompt import unfence

    text = f"{pad}```{lang}\n{body}\n```{pad}"
    old = _OLD_FENCE.match(text)
    if old is not None and "```" not in body:
        assert json_equal(unfence(text), old.group(1))
    assert unfence("{}") == "{}"


def json_equal(a: str, b: str) -> bool:
    return a.strip() == b.strip()


def test_a_fence_with_thousands_of_newlines_is_read_in_one_pass():
    from agentmate.knowledge.wiki.prompt import unfence

    hostile = "```" + "\n" * 200_000
    assert unfence(hostile) == hostile  # not a closed fence: the text as it is, then a JSON error
