"""bench/retrieval_quality.py end to end on a small sample (tests/fixtures/retrieval_quality_sample.json) and on the
knowledge dev corpus: stores and searches through the REST API, leg-only rankings through the retrieval core, the
report's shape. No quality threshold: only sanity checks that can fail (figures in [0, 1], a question naming a
unique identifier is found by the lexical leg, deduplicated turns map back to every turn id)."""

from __future__ import annotations

import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import retrieval_quality as rq  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "retrieval_quality_sample.json"


@pytest.fixture
def session(client: Any, account: Any, make_retrieval: Any, serve_retrieval: Any) -> rq.Session:
    from agentmate.core.db import get_database

    retrieval = serve_retrieval(make_retrieval())  # the REST requests' Retrieval is the leg-only runs' one
    post = rq.api_poster(client, account.headers("memory:rw", "knowledge:rw"))
    return rq.Session(post, get_database(), retrieval, uuid.UUID(account.account_id))


def _check_figures(report: dict[str, Any], questions: int) -> None:
    assert set(report["figures"]) == set(rq.MODES)
    for mode in rq.MODES:
        figures = report["figures"][mode]
        assert figures["overall"]["n"] == questions
        assert sum(f["n"] for name, f in figures.items() if name != "overall") == questions
        for f in figures.values():
            for key in (*rq.METRICS, "lexical_contributed", "empty"):
                assert 0.0 <= f[key] <= 1.0, (mode, key, f[key])
            assert f["recall_all@10"] <= f["recall_any@10"]
            assert f["recall_any@5"] <= f["recall_any@10"]
        assert len(report["per_question"][mode]) == questions
    for t in report["timings"].values():
        assert t["n"] >= 1 and 0 < t["p50_ms"] <= t["p95_ms"]


def test_memory_variant_stores_every_turn_and_scores_all_three_modes(
    session: rq.Session, capsys: Any
) -> None:
    # Given the sample (two conversations; one turn text repeats within a scope)
    dataset = rq.load_dataset(SAMPLE)
    turns = sum(len(c.turns) for c in dataset.conversations)
    # When the memory variant runs on it
    report = rq.run_memory(session.post, session.db, session.retrieval, session.account_id, dataset, top_k=10)
    # Then every turn was stored through the API, the repeated one deduplicated into the earlier memory
    counts = report["counts"]
    assert (counts["turns"], counts["deduplicated"], counts["memories"]) == (turns, 1, turns - 1)
    assert counts["future_dates_not_kept"] == 0
    assert report["timings"]["store (POST /api/memory/entries)"]["n"] == turns
    _check_figures(report, len(dataset.questions))
    # And a question that is a unique ticket id is found by the lexical leg alone, ranked first
    assert report["per_question"]["lexical"]["s1-q002"]["mrr@10"] == 1.0
    assert report["per_question"]["hybrid"]["s1-q002"]["lexical_contributed"] == 1.0
    # And the Retrieval's own search is back once the run is over (the recorder that replays the API's query is gone)
    assert "begin_search" not in vars(session.retrieval)
    # And the report prints and serialises
    rq.print_report(report)
    assert "memory: hybrid (POST /api/memory/search)" in capsys.readouterr().out
    json.dumps(report)


def test_knowledge_variant_indexes_the_corpus_and_scores_gold_chunks(session: rq.Session) -> None:
    files, questions = rq.load_knowledge(rq.DEFAULT_CORPUS)
    report = rq.run_knowledge(
        session.post, session.db, session.retrieval, session.account_id, rq.DEFAULT_CORPUS
    )
    assert report["counts"]["documents"] == len([f for f in files if f["path"].endswith(".md")])
    _check_figures(report, len(questions))
    identifiers = [q.id for q in questions if q.category == "identifier"]
    assert (
        identifiers and max(report["per_question"]["lexical"][i]["recall_any@10"] for i in identifiers) == 1.0
    )


def test_scoring_counts_rank_of_first_gold_and_all_gold_within_ten() -> None:
    r = rq.Ranked
    ranking = [
        r(frozenset({"x"}), False),
        r(frozenset({"a", "dup"}), True),
        *[r(frozenset(), False)] * 8,
        r(frozenset({"b"}), False),
    ]
    s = rq.score_question(["a", "b"], ranking)
    assert (s["recall_any@5"], s["recall_all@10"], s["mrr@10"], s["lexical_contributed"]) == (
        1.0,
        0.0,
        0.5,
        1.0,
    )
    assert rq.score_question(["a"], [])["empty"] == 1.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["questions"][0].update(category="fuzzy"), "category 'fuzzy' is not one of"),
        (
            lambda d: d["questions"][0].update(evidence=["s2-t0001"]),
            "evidence 's2-t0001' is not a turn of s1",
        ),
        (lambda d: d["conversations"][0]["turns"][1].update(id="s1-t0001"), "id 's1-t0001' is used twice"),
        (lambda d: d["conversations"][0]["turns"][0].update(date="March 2"), "is not ISO 8601"),
        (lambda d: d["questions"][0].pop("evidence"), "questions[0]: missing 'evidence'"),
        (lambda d: d["questions"][0].update(evidence=[]), "'evidence' must be a non-empty list"),
        (
            lambda d: d["questions"][0].update(evidence=[{"id": "s1-t0003"}]),
            "'evidence' must be a non-empty list",
        ),
        (
            lambda d: d["conversations"][0]["turns"][0].update(speaker="Ann"),
            "speaker 'Ann' is not in speakers",
        ),
        (lambda d: d.pop("license"), "missing 'license'"),
    ],
)
def test_a_malformed_dataset_is_refused_naming_the_item(tmp_path: Path, change: Any, message: str) -> None:
    doc = json.loads(SAMPLE.read_text(encoding="utf-8"))
    change(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(rq.DatasetError, match=re.escape(message)):
        rq.load_dataset(tmp_path)
