"""Validation attribution (prior-art §4.10): one signal made for every rule, without a database."""

from __future__ import annotations

import pytest

from agentmate.knowledge.quality.attribution import (
    CAUSES,
    DERIVED_SIGNALS,
    NO_QUERY,
    RAW_NAMESPACE,
    REPORTABLE_SIGNALS,
    SIGNAL_DIRECTIONS,
    WIKI_NAMESPACE,
    Evidence,
    LoggedSearch,
    attribute,
    evidence_from,
    interpret_skill_pattern,
)

RECURRING = ["question_repeated", "query_rephrased", "answer_rewritten"]
BOTH_EMPTY = Evidence(query_known=True, wiki_hits=0, raw_candidates=0)
RAW_ONLY_HAD_IT = Evidence(query_known=True, wiki_hits=0, raw_candidates=3)
WIKI_HIT = Evidence(query_known=True, wiki_hits=2, raw_candidates=5)


@pytest.mark.parametrize("signal", ["answer_adopted", "citation_verified", "reused_for_similar"])
def test_a_positive_signal_is_unattributed_whatever_the_evidence(signal):
    for evidence in (NO_QUERY, BOTH_EMPTY, RAW_ONLY_HAD_IT, WIKI_HIT):
        got = attribute(signal, "wiki/a.md", evidence)
        assert got.cause == "unattributed"
        assert "positive" in got.basis


def test_never_retrieved_is_unattributed_even_with_evidence():
    assert attribute("never_retrieved", None, WIKI_HIT).cause == "unattributed"


def test_citation_abandoned_with_a_page_is_wiki_synthesis_and_without_one_unattributed():
    assert attribute("citation_abandoned", "wiki/a.md", NO_QUERY).cause == "wiki_synthesis"
    assert attribute("citation_abandoned", None, WIKI_HIT).cause == "unattributed"
    assert attribute("citation_abandoned", "", WIKI_HIT).cause == "unattributed"


@pytest.mark.parametrize("signal", RECURRING)
def test_a_recurring_question_without_a_query_is_unattributed(signal):
    got = attribute(signal, "wiki/a.md", NO_QUERY)
    assert (got.cause, "no query_id" in got.basis) == ("unattributed", True)


@pytest.mark.parametrize("signal", RECURRING)
def test_a_recurring_question_both_layers_empty_is_a_source_gap(signal):
    assert attribute(signal, "wiki/a.md", BOTH_EMPTY).cause == "source_gap"


@pytest.mark.parametrize("signal", RECURRING)
def test_a_recurring_question_raw_had_candidates_but_no_wiki_hit_is_a_retrieval_miss(signal):
    assert attribute(signal, None, RAW_ONLY_HAD_IT).cause == "retrieval_miss"


@pytest.mark.parametrize("signal", RECURRING)
def test_a_recurring_question_with_a_wiki_hit_and_a_named_page_is_wiki_synthesis(signal):
    assert attribute(signal, "wiki/a.md", WIKI_HIT).cause == "wiki_synthesis"


@pytest.mark.parametrize("signal", RECURRING)
def test_a_recurring_question_with_a_wiki_hit_but_no_page_named_is_unattributed(signal):
    assert attribute(signal, None, WIKI_HIT).cause == "unattributed"


def test_a_layer_that_was_not_searched_is_unknown_not_empty():
    # Only the raw layer was searched and found nothing: the wiki said nothing, so no source gap is claimed.
    raw_only = Evidence(query_known=True, wiki_hits=None, raw_candidates=0)
    assert attribute("question_repeated", "wiki/a.md", raw_only).cause == "unattributed"
    # Only the wiki was searched and found nothing: the raw layer may hold it, so neither gap nor miss is claimed.
    wiki_only = Evidence(query_known=True, wiki_hits=0, raw_candidates=None)
    assert attribute("query_rephrased", None, wiki_only).cause == "unattributed"


def test_skill_approach_is_never_the_cause_of_one_signal():
    evidences = [NO_QUERY, BOTH_EMPTY, RAW_ONLY_HAD_IT, WIKI_HIT, Evidence(True, None, 4)]
    causes = {
        attribute(s, p, e).cause for s in SIGNAL_DIRECTIONS for p in (None, "wiki/a.md") for e in evidences
    }
    assert "skill_approach" not in causes
    assert causes <= set(CAUSES)


def test_an_unknown_signal_is_unattributed():
    assert attribute("mystery", "wiki/a.md", WIKI_HIT).cause == "unattributed"


def test_the_reportable_vocabulary_excludes_derived_signals():
    assert "never_retrieved" in DERIVED_SIGNALS
    assert "never_retrieved" not in REPORTABLE_SIGNALS
    assert set(REPORTABLE_SIGNALS) | DERIVED_SIGNALS == set(SIGNAL_DIRECTIONS)


def test_evidence_combines_the_reported_search_with_the_other_layer_asking_the_same_question():
    wiki = LoggedSearch(WIKI_NAMESPACE, hit_count=0)
    raw = LoggedSearch(RAW_NAMESPACE, hit_count=4)
    assert evidence_from(wiki, [raw]) == Evidence(True, wiki_hits=0, raw_candidates=4)
    assert evidence_from(raw, []) == Evidence(True, wiki_hits=None, raw_candidates=4)
    assert evidence_from(None, [raw]) == NO_QUERY
    # Several searches of one layer with the same question: the best answer that layer gave.
    assert evidence_from(wiki, [LoggedSearch(WIKI_NAMESPACE, 2)]).wiki_hits == 2
    # A search of some other namespace says nothing about either layer.
    assert evidence_from(LoggedSearch("memory", 3), []) == Evidence(True, None, None)


def test_skill_pattern_interpretation_never_claims_more_than_the_counts():
    assert "not proof" in interpret_skill_pattern(2, 1)
    assert "better suspect" in interpret_skill_pattern(1, 3)
    assert "too few" in interpret_skill_pattern(1, 2)
