"""Review's pure parts (spec/001 K3.8): page selection, the prompt, reply parsing, status and the standing
warning."""

from __future__ import annotations

import pytest

from agentmate.knowledge.quality.review import (
    PageCitation,
    ReplyRejected,
    ReviewPage,
    cited_documents,
    outcome,
    parse_reply,
    select_pages,
    standing_warning,
    user_prompt,
)
from agentmate.llm import same_model


def page(path: str, n: int, kind: str = "concept") -> ReviewPage:
    return ReviewPage(
        path, kind, path, "body", tuple(PageCitation(f"raw/{i}.md", f"claim {i}") for i in range(n))
    )


def test_pages_are_selected_by_citation_count_then_path_and_generated_pages_never():
    pages = [
        page("wiki/b.md", 1),
        page("wiki/a.md", 1),
        page("wiki/c.md", 3),
        page("wiki/index.md", 9, "index"),
        page("wiki/log.md", 9, "log"),
        page("wiki/d.md", 0),
    ]
    eligible, examined = select_pages(pages, 2)
    assert [p.path for p in eligible] == ["wiki/c.md", "wiki/a.md", "wiki/b.md", "wiki/d.md"]
    assert [p.path for p in examined] == ["wiki/c.md", "wiki/a.md"]


def test_the_prompt_carries_the_raw_source_text_marks_a_cut_and_labels_the_compilers_claims():
    p = ReviewPage(
        "wiki/a.md",
        "concept",
        "A",
        "Retention is 30 days.",
        (PageCitation("raw/r.md", "retention"), PageCitation("raw/r.md", ""), PageCitation("raw/gone.md")),
    )
    sources = cited_documents(p, {"raw/r.md": "Retention is usually 30 days. " * 10, "raw/other.md": "x"})
    assert [path for path, _ in sources] == ["raw/r.md"]
    text = user_prompt(p, sources, per_document_chars=50)
    assert "Retention is usually 30 days." in text
    assert "[document truncated here" in text
    assert "its own account, not evidence" in text and "- retention [raw/r.md]" in text
    assert "raw/other.md" not in text


def test_a_reply_is_parsed_into_findings_of_known_kinds_only():
    reply = (
        '```json\n{"findings":[{"kind":"Overstated","claim":"always 30 days","detail":"usually"},'
        '{"kind":"vibes","claim":"x"},{"kind":"unsupported","claim":"  "},'
        '{"kind":"conflated","claim":"c","detail":"d"}]}\n```'
    )
    got = parse_reply("wiki/a.md", reply)
    assert [(f.kind, f.claim) for f in got] == [("overstated", "always 30 days"), ("conflated", "c")]
    assert parse_reply("wiki/a.md", '{"findings": []}') == []


@pytest.mark.parametrize(
    "reply", ["not json", "{}", '{"findings": null}', "[]", '{"findings":[{"kind":"vibes","claim":"x"}]}']
)
def test_a_reply_that_does_not_answer_is_rejected_rather_than_read_as_clean(reply):
    with pytest.raises(ReplyRejected):
        parse_reply("wiki/a.md", reply)


def test_status_never_claims_more_coverage_than_was_read():
    assert outcome(eligible=3, attempted=3, succeeded=3, findings=0, first_failure=None).status == "clean"
    capped = outcome(eligible=30, attempted=20, succeeded=20, findings=0, first_failure=None)
    assert capped.status == "partial" and "20 of 30" in capped.note and "capped at 20" in capped.note
    one_failed = outcome(eligible=3, attempted=3, succeeded=2, findings=0, first_failure="HTTP 500")
    assert one_failed.status == "partial" and "HTTP 500" in one_failed.note
    flagged = outcome(eligible=30, attempted=20, succeeded=20, findings=2, first_failure=None)
    assert flagged.status == "flagged" and "20 of 30" in flagged.note
    assert (
        outcome(eligible=3, attempted=3, succeeded=0, findings=0, first_failure="timeout").status == "failed"
    )
    assert outcome(eligible=0, attempted=0, succeeded=0, findings=0, first_failure=None).status == "skipped"


def test_the_same_model_is_recognised_whatever_its_case_or_padding():
    assert same_model("qwen3.7-plus", " QWEN3.7-Plus ")
    assert not same_model("qwen3.7-plus", "deepseek-v4-pro")
    assert not same_model(None, "deepseek-v4-pro")


def test_the_standing_warning_is_never_silent_and_says_what_was_and_was_not_reviewed():
    variants = [
        None,
        {"status": "queued"},
        {"status": "skipped", "note": "the reviewer is the compiling model"},
        {"status": "failed", "note": "timeout"},
        {"status": "clean", "pages_examined": 5, "pages_total": 5, "reviewer_independence": "cross_provider"},
        {
            "status": "partial",
            "pages_examined": 20,
            "pages_total": 31,
            "reviewer_independence": "same_provider",
        },
    ]
    texts = [standing_warning(v) for v in variants]
    assert all("check is the only gate" in t for t in texts)
    assert "not been reviewed" in texts[0] and "nothing has been reviewed yet" in texts[1]
    assert "compiling model" in texts[2]
    assert "examined 5 of 5" in texts[4] and "not proof" in texts[4] and "cross_provider" in texts[4]
    assert "examined 20 of 31" in texts[5] and "11 page(s) were not reviewed" in texts[5]
