"""Markdown chunking against hand-computed expectations (prior-art §4.6 sizing/ids, CommonMark line meaning)."""

from __future__ import annotations

from pathlib import Path

from agentmate.knowledge.chunking import (
    MAX_CHUNK_CHARS,
    MAX_CHUNKS_PER_DOCUMENT,
    chunk_document,
    chunk_markdown,
    front_matter_end,
)

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "knowledge_corpus"


def _lines(text: str, first: int, last: int) -> str:
    """Lines first..last (1-based, inclusive), each with its newline."""
    return "".join(line + "\n" for line in text.split("\n")[first - 1 : last])


def _vector(chunks):
    return [(c.key, c.heading_path, c.start_line, c.end_line, c.char_count) for c in chunks]


def test_the_corpus_setup_page_chunks_as_computed_by_hand():
    text = (CORPUS / "en/guide/setup.md").read_text()
    chunks = chunk_markdown("guide/setup.md", text)
    # front matter (1-5) | # Setup (6-14) | ### Deep step (15-36) | ## Configure without prose (37-38) joins the
    # next ## Configure (39-41), which keeps its own heading path.
    assert [(c.key, c.heading_path, c.start_line, c.end_line) for c in chunks] == [
        ("chunk-0000", "", 1, 5),
        ("chunk-0001", "Setup", 6, 14),
        ("chunk-0002", "Setup > Deep step", 15, 36),
        ("chunk-0003", "Setup > Configure", 37, 41),
    ]
    assert [c.content for c in chunks] == [
        _lines(text, 1, 5),
        _lines(text, 6, 14),
        _lines(text, 15, 36),
        _lines(text, 37, 41),
    ]
    assert "".join(c.content for c in chunks) == text  # nothing lost, nothing reordered, whitespace intact
    # the YAML comment in front matter is not a heading, and ---/--- is not a setext heading
    assert chunks[0].content.startswith("---\ntitle: Setup guide\n# a YAML comment")
    # no '#' line inside ```, ~~~ or ```` fences (nor the indented one) started a section
    deep = chunks[2].content
    for line in (
        "# not a heading in a backtick fence\n",
        "# not a heading in a tilde fence\n",
        "# still inside the four-backtick fence",
        "    # an indented line is code",
    ):
        assert line in deep
    assert "    return  1   # keep   the spaces\n" in deep  # code whitespace survives byte for byte
    assert (
        chunks[3].content == "## Configure\n\n## Configure\n\nThe heading above is repeated in this chunk's "
        "body on purpose.\n"
    )
    assert chunks[1].title("guide/setup.md") == "guide/setup.md # Setup"
    assert chunks[0].title("guide/setup.md") == "guide/setup.md"
    assert chunks[1].headings == ("Setup",)


def test_heading_stack_pops_by_level_and_titles_are_cleaned():
    text = "# A #\n\na\n\n### C ###\n\nc\n\n## B\n\nb\n\n#\n\nu\n\n#### " + "t" * 300 + "\n\nlong\n"
    chunks = chunk_markdown("x.md", text)
    assert [c.heading_path for c in chunks] == [
        "A",
        "A > C",
        "A > B",
        "(untitled)",
        "(untitled) > " + "t" * 200,
    ]


def test_setext_headings_are_headings_and_quoted_or_listed_hashes_are_not():
    text = "Title\n=====\n\nintro\n\nSub\n---\n\nbody\n\n> # quoted\n\n- # listed\n"
    chunks = chunk_markdown("x.md", text)
    assert _vector(chunks) == [("chunk-0000", "Title", 1, 5, 20), ("chunk-0001", "Title > Sub", 6, 13, 38)]


def test_four_backtick_fence_is_not_closed_by_three():
    text = "# A\n\n````\n```\n# inside\n```\n# still inside\n````\n\n# B\n\nb\n"
    chunks = chunk_markdown("x.md", text)
    assert [c.heading_path for c in chunks] == ["A", "B"]
    assert "# still inside\n````\n" in chunks[0].content


def test_an_unclosed_fence_runs_to_the_end_of_the_document():
    chunks = chunk_markdown("x.md", "# A\n\n~~~\n# hidden\n")
    assert [c.heading_path for c in chunks] == ["A"]


def test_front_matter_must_open_on_the_first_line_and_close():
    assert front_matter_end(["---", "a: 1", "---", "x"]) == 3
    assert front_matter_end(["---", "a: 1", "...", "x"]) == 3
    assert front_matter_end(["---", "a: 1"]) == 0  # never closed: a thematic break, not front matter
    assert front_matter_end(["x", "---"]) == 0
    # Without front matter a "text / ---" pair is a setext heading, as CommonMark says
    assert [c.heading_path for c in chunk_markdown("x.md", "x\n\ntext\n---\n\nbody\n")] == ["", "text"]


def test_prose_less_sections_carry_forward_and_trailing_ones_are_dropped():
    text = "# A\n\n## B\n\n### C\n\nc text\n\n## D\n\n## E\n"
    chunks = chunk_markdown("x.md", text)
    assert _vector(chunks) == [("chunk-0000", "A > B > C", 1, 8, 26)]
    assert chunks[0].content == "# A\n\n## B\n\n### C\n\nc text\n\n"
    assert chunk_markdown("x.md", "\n\n   \n") == []
    assert chunk_markdown("x.md", "# only a heading\n") == []


def test_an_oversized_section_packs_whole_blocks_greedily():
    para = "p" * 999  # 999 + "\n" + blank line = 1001 characters per block
    text = "# Big\n\n" + "\n\n".join([para] * 10) + "\n"
    chunks = chunk_markdown("big.md", text)
    # "# Big\n\n" (7) + 7 blocks (7007) = 7014 ≤ 8000; an 8th would make 8015 > 8000
    assert _vector(chunks) == [("chunk-0000", "Big", 1, 16, 7014), ("chunk-0001", "Big", 17, 21, 3002)]
    assert "".join(c.content for c in chunks) == text


def test_a_code_fence_is_not_cut_while_it_fits_and_blank_lines_inside_it_survive():
    fence = "```\n" + "line   with  spaces\n\n\n" * 250 + "```\n"  # 5508 characters, blank lines inside
    text = "# Code\n\n" + "q" * 4000 + "\n\n" + fence
    chunks = chunk_markdown("code.md", text)
    assert [c.char_count for c in chunks] == [8 + 4002, len(fence)]
    assert chunks[1].content == fence


def test_one_block_over_the_limit_is_cut_into_fixed_windows():
    text = "## Huge\n\n" + "x" * 17000 + "\n"
    chunks = chunk_markdown("huge.md", text)
    # the heading block is flushed alone (as prior-art's paragraph packing does), then 8000-character windows
    assert [c.char_count for c in chunks] == [9, MAX_CHUNK_CHARS, MAX_CHUNK_CHARS, 1001]
    assert {c.heading_path for c in chunks} == {"Huge"}
    assert "".join(c.content for c in chunks) == text


def test_the_size_check_runs_before_pending_headings_are_prepended():
    body = "b" * 7990 + "\n"
    chunks = chunk_markdown("x.md", "# Pending\n\n## Full\n\n" + body)
    # "## Full\n\n" + body = 8000 fits; the pending "# Pending\n\n" (11) is prepended afterwards
    assert _vector(chunks) == [("chunk-0000", "Pending > Full", 1, 5, 8011)]


def test_documents_stop_at_256_chunks_and_say_so():
    text = "".join(f"# H{i}\n\nbody {i}\n\n" for i in range(300))
    out = chunk_document("many.md", text)
    assert out.truncated and len(out.chunks) == MAX_CHUNKS_PER_DOCUMENT
    assert out.chunks[-1].key == "chunk-0255"
    assert not chunk_document("few.md", "# a\n\nb\n").truncated


def test_non_markdown_text_is_one_section_without_headings():
    out = chunk_document("notes.txt", "# not markdown here\n\nplain\n", "text/plain")
    assert not out.markdown
    assert _vector(out.chunks) == [("chunk-0000", "", 1, 3, 27)]
    assert chunk_document("notes", "# x\n\ny\n", "text/markdown").markdown  # mime decides too


def test_chinese_headings_and_crlf():
    text = (CORPUS / "zh/退款.md").read_text()
    chunks = chunk_markdown("退款.md", text)
    assert [(c.heading_path, c.content) for c in chunks] == [("退款政策", text)]
    crlf = chunk_markdown("x.md", "# 标题\r\n\r\n内容\r\n")
    assert [(c.heading_path, c.content) for c in crlf] == [("标题", "# 标题\n\n内容\n")]


def test_snippet_is_the_first_240_characters():
    long = chunk_markdown("x.md", "# T\n\n" + "字" * 500 + "\n")[0]
    assert long.snippet == ("# T\n\n" + "字" * 500)[:240]
    short = chunk_markdown("x.md", "# T\n\nshort\n")[0]
    assert short.snippet == short.content
