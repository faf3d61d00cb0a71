"""Link extraction over the corpus: kept, dropped, escaping, de-duplicated, capped."""

from __future__ import annotations

from pathlib import Path

from agentmate.knowledge.search.links import MAX_LINKS_PER_DOCUMENT, extract_links, resolve

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "knowledge_corpus"


def test_the_setup_page_links_as_prior_art_says():
    out = extract_links("guide/setup.md", (CORPUS / "en/guide/setup.md").read_text())
    assert [(link.target_path, link.kind) for link in out.links] == [
        ("guide/billing.md", "link"),  # fragment stripped
        ("img/flow.png", "image"),
        ("guide/missing.md", "link"),  # kept: the indexer records it as dangling
        ("guide/config/settings.md", "link"),  # the reference link, query stripped (the definition dedupes)
    ]
    assert out.escaping == 1  # ../../outside.md leaves the package
    assert not out.truncated


def test_links_inside_code_are_not_links():
    text = "```\n[a](a.md)\n```\n\n    [b](b.md)\n\n`[c](c.md)` [d](d.md)\n"
    assert [link.target_path for link in extract_links("x.md", text).links] == ["d.md"]


def test_resolution_rules():
    assert resolve("a/b.md", "../c.md") == "c.md"
    assert resolve("a/b.md", "../../c.md") == ""  # escapes
    assert resolve("a/b.md", "./d/./e.md?x#y") == "a/d/e.md"
    assert resolve("a/b.md", "my%20doc.md") == "a/my doc.md"
    for ignored in ("#top", "/abs.md", "//host/x.md", "https://x/y.md", "mailto:a@b", "", "?q"):
        assert resolve("a/b.md", ignored) is None


def test_chinese_targets_and_dedupe_first_seen():
    text = (CORPUS / "zh/发票.md").read_text() + "\n[again](退款.md) [other](发票.md)\n"
    out = extract_links("发票.md", text)
    assert [link.target_path for link in out.links] == ["退款.md"]  # self link dropped, duplicate deduped


def test_at_most_128_links_per_document():
    text = " ".join(f"[l{i}](p{i}.md)" for i in range(MAX_LINKS_PER_DOCUMENT + 5))
    out = extract_links("x.md", text)
    assert len(out.links) == MAX_LINKS_PER_DOCUMENT and out.truncated
