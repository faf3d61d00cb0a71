"""The FACTS layer's term rules (retrieval.bm25) agree with Postgres' english configuration on what they keep."""

from agentmate.retrieval import bm25


def test_terms_drop_stop_words_stem_words_and_keep_numbers_identifiers_and_cjk() -> None:
    assert bm25.terms("When did the deployments of v2 run in 2024? 东京") == [
        "deploy",
        "v2",
        "run",
        "2024",
        "东京",
    ]


def test_a_text_of_stop_words_has_no_terms() -> None:
    assert bm25.terms("the of and to it") == []


def test_rank_weighs_rare_terms_more_and_reports_coverage() -> None:
    texts = ["weekly meeting notes", "weekly meeting agenda", "flights to zanzibar", "nothing here"]
    ranked = bm25.rank(bm25.terms("meeting about zanzibar"), texts)
    assert ranked[0].index == 2
    assert {r.index for r in ranked} == {0, 1, 2}
    assert all(r.coverage == 0.5 for r in ranked)


def test_probes_are_substrings_of_the_inflected_words() -> None:
    for word in ("rotate", "rotating", "happy", "happiness", "agreed", "payments", "databases"):
        (term,) = bm25.terms(word)
        assert any(p in word for p in bm25.probes([term])), (word, term)
