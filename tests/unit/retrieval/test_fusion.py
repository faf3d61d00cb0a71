from datetime import UTC, datetime, timedelta

import pytest

from agentmate.retrieval.fusion import DEFAULT_K, Candidate, reciprocal_rank_fusion

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def c(doc_id: str, score: float = 0.5, age_days: int = 0) -> Candidate:
    return Candidate(id=doc_id, score=score, updated_at=T0 - timedelta(days=age_days))


def test_rank_one_in_both_legs_scores_one_and_carries_both_raw_scores() -> None:
    hits = reciprocal_rank_fusion([c("a", 0.9)], [c("a", 0.8)])
    assert len(hits) == 1
    hit = hits[0]
    assert hit.score == pytest.approx(1.0)
    assert hit.channels == ("lexical", "vector")
    assert hit.stage == "lexical+vector"
    assert (hit.lexical_score, hit.vector_score) == (0.9, 0.8)
    assert (hit.lexical_rank, hit.vector_rank) == (1, 1)


def test_rank_one_in_one_leg_only_scores_one_half() -> None:
    hits = reciprocal_rank_fusion([c("a")], [])
    assert hits[0].score == pytest.approx(0.5)
    assert hits[0].channels == ("lexical",)
    assert hits[0].vector_score is None


def test_fused_score_follows_the_rrf_formula() -> None:
    # Given b at rank 2 lexically and rank 1 in vector
    hits = reciprocal_rank_fusion([c("a"), c("b")], [c("b"), c("c")])
    by_id = {h.id: h for h in hits}
    k = DEFAULT_K
    norm = 2 / (k + 1)
    assert by_id["b"].score == pytest.approx((1 / (k + 2) + 1 / (k + 1)) / norm)
    assert by_id["a"].score == pytest.approx((1 / (k + 1)) / norm)
    assert by_id["c"].score == pytest.approx((1 / (k + 2)) / norm)
    assert [h.id for h in hits] == ["b", "a", "c"]


def test_documents_found_by_both_legs_outrank_single_leg_top_hits() -> None:
    lexical = [c("lex_only"), c("x"), c("both")]
    vector = [c("vec_only"), c("both")]
    hits = reciprocal_rank_fusion(lexical, vector)
    assert hits[0].id == "both"


def test_ties_break_by_newer_updated_at_then_id_ascending() -> None:
    # Given rank 1 lexical-only vs rank 1 vector-only: exactly equal fused scores
    hits = reciprocal_rank_fusion([c("old", age_days=5)], [c("new", age_days=1)])
    assert [h.id for h in hits] == ["new", "old"]
    hits = reciprocal_rank_fusion([c("b")], [c("a")])  # same timestamp
    assert [h.id for h in hits] == ["a", "b"]
    hits = reciprocal_rank_fusion([Candidate("z", 1.0, None)], [c("y", age_days=100)])
    assert [h.id for h in hits] == ["y", "z"]  # a missing timestamp sorts as the oldest


def test_a_duplicate_id_within_one_leg_keeps_its_best_rank() -> None:
    hits = reciprocal_rank_fusion([c("a", 0.9), c("a", 0.1), c("b")], None)
    assert [h.id for h in hits] == ["a", "b"]
    assert hits[0].lexical_score == 0.9
    assert hits[1].lexical_rank == 2


def test_limit_truncates_and_empty_legs_give_nothing() -> None:
    hits = reciprocal_rank_fusion([c(str(i)) for i in range(10)], [c(str(i)) for i in range(5, 15)], limit=3)
    assert len(hits) == 3
    assert reciprocal_rank_fusion(None, None) == []
    assert reciprocal_rank_fusion([], []) == []


def test_vector_only_hit_reports_vector_channel_and_newest_timestamp() -> None:
    newer = T0 + timedelta(hours=1)
    hits = reciprocal_rank_fusion([c("a")], [Candidate("a", 0.7, newer)])
    assert hits[0].updated_at == newer
    hits = reciprocal_rank_fusion(None, [c("v", 0.3)])
    assert hits[0].channels == ("vector",)
    assert hits[0].lexical_score is None


def test_custom_k_keeps_normalisation_at_one_for_double_rank_one() -> None:
    assert reciprocal_rank_fusion([c("a")], [c("a")], k=10)[0].score == pytest.approx(1.0)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([c("a")], [], k=-1)
