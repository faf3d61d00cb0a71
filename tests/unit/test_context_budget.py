"""Context pack budgets, fit and boundary truncation (prior-art §4.5), without a database."""

from __future__ import annotations

import pytest

from agentmate.context.budget import MIN_TRUNCATE, SHARES, budgets, derived_title, fit, truncate_at_boundary

FIVE = ["SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "TASK"]
SIX = ["SKILL", "KNOWLEDGE", "MEMORY", "FACTS", "WORKING", "TASK"]


# -- budgets -------------------------------------------------------------------------------------------------------


def test_a_pack_without_a_session_splits_over_the_five_shares():
    assert budgets(12000, FIVE) == {
        "SKILL": 3000,
        "KNOWLEDGE": 3500,
        "MEMORY": 2000,
        "FACTS": 1000,
        "TASK": 2500,
    }


def test_skill_memory_task_gets_the_remainder_on_skill():
    # 10000*30//75 = 4000, 10000*20//75 = 2666, 10000*25//75 = 3333: the 1 left over goes to SKILL (largest share)
    assert budgets(10000, ["SKILL", "MEMORY", "TASK"]) == {"SKILL": 4001, "MEMORY": 2666, "TASK": 3333}


def test_a_pack_with_a_session_renormalises_over_135_the_worked_example_of_the_docs():
    # 30/35/20/10/15/25 of 135: floors 2666, 3111, 1777, 888, 1333, 2222 = 11997; +3 to KNOWLEDGE (largest share)
    assert budgets(12000, SIX) == {
        "SKILL": 2666,
        "KNOWLEDGE": 3114,
        "MEMORY": 1777,
        "FACTS": 888,
        "WORKING": 1333,
        "TASK": 2222,
    }


def test_prior_art_shares_keep_their_values_but_task_is_sized_for_the_goal_and_the_checkpoint():
    assert SHARES == {"SKILL": 30, "KNOWLEDGE": 35, "MEMORY": 20, "FACTS": 10, "WORKING": 15, "TASK": 25}


@pytest.mark.parametrize("layers", [FIVE, SIX, ["SKILL", "KNOWLEDGE", "TASK"], ["TASK"]])
def test_task_gets_enough_to_cut_the_goal_at_the_smallest_pack_and_500_from_2700(layers):
    # the two sizing rules of TASK's share (docs/context-pack.md), whatever other layers are requested
    assert budgets(500, layers)["TASK"] >= MIN_TRUNCATE
    assert budgets(2700, layers)["TASK"] >= 500


@pytest.mark.parametrize("max_chars", [500, 501, 777, 12000, 99_999, 200_000])
@pytest.mark.parametrize(
    "layers",
    [FIVE, SIX, ["TASK"], ["WORKING", "TASK"], ["FACTS", "MEMORY"], ["SKILL", "KNOWLEDGE", "WORKING"]],
)
def test_budgets_sum_exactly_to_max_chars(max_chars, layers):
    out = budgets(max_chars, layers)
    assert sum(out.values()) == max_chars
    assert set(out) == set(layers)


def test_the_remainder_goes_to_the_requested_layer_with_the_largest_share():
    # MEMORY (20) + FACTS (10) + WORKING (15) of 45: 1000*20//45 = 444, 222, 333 → 999; +1 to MEMORY
    assert budgets(1000, ["MEMORY", "FACTS", "WORKING"]) == {"MEMORY": 445, "FACTS": 222, "WORKING": 333}


# -- truncation at boundaries -------------------------------------------------------------------------------------


def test_truncation_prefers_a_paragraph_break():
    text = "a" * 60 + "\n\n" + "b" * 30 + ". " + "c" * 100
    # limit 100: window has "\n\n" at 60 (kept 62 ≥ 50) → cut after it, trailing newlines trimmed
    assert truncate_at_boundary(text, 100) == "a" * 60


def test_truncation_uses_the_cjk_full_stop():
    text = "甲" * 40 + "。" + "乙" * 30 + "。" + "丙" * 100
    # no "\n\n"; last "。" within 100 is at 71 → keep 72 characters (≥ 50)
    assert truncate_at_boundary(text, 100) == "甲" * 40 + "。" + "乙" * 30 + "。"


def test_truncation_at_a_sentence_end_keeps_the_full_stop_and_drops_the_space():
    text = "x" * 70 + ". " + "y" * 100
    assert truncate_at_boundary(text, 100) == "x" * 70 + "."


def test_truncation_at_a_line_break():
    text = "x" * 70 + "\n" + "y" * 100
    assert truncate_at_boundary(text, 100) == "x" * 70


def test_truncation_at_a_space():
    text = "word " * 30
    out = truncate_at_boundary(text, 52)
    assert out == ("word " * 10).rstrip()  # the last space inside the 52-character window is at 49


def test_a_separator_that_would_keep_less_than_half_is_passed_over_for_the_next_kind():
    # "\n\n" at 10 keeps only 12 of 100 (< 50); ". " at 80 keeps 82 → the sentence boundary wins
    text = "a" * 10 + "\n\n" + "b" * 68 + ". " + "c" * 100
    assert truncate_at_boundary(text, 100) == "a" * 10 + "\n\n" + "b" * 68 + "."


def test_no_usable_boundary_is_a_hard_cut_at_the_limit():
    text = "z" * 300
    assert truncate_at_boundary(text, 120) == "z" * 120


def test_a_separator_at_position_zero_is_not_a_boundary():
    text = " " + "z" * 300
    assert truncate_at_boundary(text, 120) == " " + "z" * 119


def test_text_within_the_limit_is_unchanged():
    assert truncate_at_boundary("short. text", 100) == "short. text"


def test_lengths_are_code_points_not_bytes():
    text = "日本語" * 100  # 300 characters, 900 UTF-8 bytes
    assert len(truncate_at_boundary(text, 100)) == 100


# -- fit ----------------------------------------------------------------------------------------------------------


def test_fit_keeps_items_that_fit_in_provider_order():
    out = fit(["a" * 30, "b" * 30, "c" * 30], 100)
    assert [(i, f.content, f.truncated) for i, f in out.kept] == [
        (0, "a" * 30, False),
        (1, "b" * 30, False),
        (2, "c" * 30, False),
    ]
    assert (out.dropped, out.chars_used, out.truncated) == (0, 90, False)


def test_fit_truncates_the_first_item_that_does_not_fit_when_80_or_more_remain_then_stops():
    out = fit(["a" * 100, "b" * 500, "c" * 10], 200)
    assert [(i, len(f.content), f.truncated) for i, f in out.kept] == [(0, 100, False), (1, 100, True)]
    assert (out.dropped, out.chars_used, out.truncated) == (1, 200, True)


def test_fit_drops_an_item_that_does_not_fit_when_fewer_than_80_remain_and_never_skips_ahead():
    # 79 remain after the first item: the second does not fit and is not cut; the small third is not tried
    out = fit(["a" * 121, "b" * 100, "c" * 5], 200)
    assert [i for i, _ in out.kept] == [0]
    assert (out.dropped, out.chars_used) == (2, 121)


def test_fit_stops_when_the_budget_is_exhausted():
    out = fit(["a" * 100, "b", "c"], 100)
    assert [i for i, _ in out.kept] == [0]
    assert out.dropped == 2


def test_fit_with_exactly_80_remaining_truncates():
    out = fit(["a" * 20, "b" * 200], 100)
    assert [(i, len(f.content), f.truncated) for i, f in out.kept] == [(0, 20, False), (1, 80, True)]


def test_chars_used_counts_what_a_boundary_cut_kept_not_the_budget():
    out = fit(["x" * 70 + ". " + "y" * 100], 100)
    assert out.kept[0][1].content == "x" * 70 + "."
    assert out.chars_used == 71


# -- derived titles -----------------------------------------------------------------------------------------------


def test_the_derived_title_uses_title_then_summary_then_content_first_line():
    assert derived_title("semantic", "Deploy rule", "s", "c") == "semantic · Deploy rule"
    assert derived_title("semantic", "", "## Summary line\nmore", "c") == "semantic · Summary line"
    assert (
        derived_title("episodic", "  ", "", "\n> - * quoted first line\nsecond")
        == "episodic · quoted first line"
    )
    assert derived_title("procedural", "", "", "") == "procedural"


def test_the_derived_title_is_at_most_80_characters_plus_an_ellipsis():
    assert derived_title("semantic", "t" * 100) == "semantic · " + "t" * 80 + "…"
