"""Fusion tuning (issue 21): how each way of fusing the lexical and vector legs ranks the dev set, so the retrieval
core's fusion is chosen by measurement.

    .venv/bin/python bench/fusion_tuning.py [--data bench/data/retrieval_dev] [--corpus bench/data/retrieval_dev_knowledge]

Stores the memory dev set and indexes the knowledge corpus exactly as bench/retrieval_quality.py does (same cluster,
same in-process API), then records, per question, each leg's own candidate list (ids and raw scores, the query the
API built, at the legs' full candidate depth of 50) and fuses them offline with every variant below. Prints
recall_any@10, recall_all@10 and MRR@10 per variant on both sets, best first by memory recall_all@10. The variant
the core serves is marked; nothing here asserts a threshold.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import common
import retrieval_quality as rq
from common import machine, print_table

Leg = list[tuple[str, float, float]]  # (document id, raw score, lexical coverage or 1), best first
Fuse = Callable[[Leg, Leg], list[str]]


def rrf(k: float, w_lex: float = 1.0, w_vec: float = 1.0, depth: int = 50, power: float = 0.0) -> Fuse:
    """Reciprocal rank fusion; ``power`` > 0 weighs each lexical hit by its coverage ** power."""

    def fuse(lex: Leg, vec: Leg) -> list[str]:
        score: dict[str, float] = {}
        for w, leg in ((w_lex, lex), (w_vec, vec)):
            for rank, (doc, _, cov) in enumerate(leg[:depth], start=1):
                score[doc] = score.get(doc, 0.0) + w * cov**power / (k + rank)
        return sorted(score, key=lambda d: -score[d])

    return fuse


def convex(alpha: float, norm: str = "max") -> Fuse:
    """alpha x normalised lexical + (1 - alpha) x normalised vector score (0 where a leg did not find it)."""

    def normalise(leg: Leg) -> dict[str, float]:
        if not leg:
            return {}
        hi, lo = leg[0][1], leg[-1][1]
        if norm == "lexmax":  # BM25 over its best, cosine as it is (it already lies in -1..1)
            return {d: s / hi if hi > 1.0 else s for d, s, _ in leg}
        if norm == "max":
            return {d: s / hi if hi > 0 else 0.0 for d, s, _ in leg}
        return {d: (s - lo) / (hi - lo) if hi > lo else 1.0 for d, s, _ in leg}

    def fuse(lex: Leg, vec: Leg) -> list[str]:
        ln, vn = normalise(lex), normalise(vec)
        docs = dict.fromkeys([*ln, *vn])
        return sorted(docs, key=lambda d: -(alpha * ln.get(d, 0.0) + (1 - alpha) * vn.get(d, 0.0)))

    return fuse


def variants() -> dict[str, Fuse]:
    out: dict[str, Fuse] = {
        "lexical only": lambda lex, vec: [d for d, _, _ in lex],
        "dense only": lambda lex, vec: [d for d, _, _ in vec],
    }
    for k in (5, 10, 20, 60):
        for power in (0.5, 1, 2):
            out[f"rrf k={k}, lexical weighed by coverage^{power}"] = rrf(k, power=power)
    for k in (1, 5, 10, 20, 40, 60):
        for w in (0.5, 0.7, 1.0, 1.4):
            out[f"rrf k={k} w_lex={w}"] = rrf(k, w_lex=w)
    out["rrf k=60, each leg cut at 10"] = rrf(60, depth=10)
    for d in (10, 20, 30):
        out[f"rrf k=10, each leg cut at {d}"] = rrf(10, depth=d)
    for a in (0.3, 0.4, 0.5, 0.6, 0.7):
        out[f"convex alpha={a} (max-normalised)"] = convex(a)
        out[f"convex alpha={a} (min-max)"] = convex(a, "minmax")
        out[f"convex alpha={a} (lexical max-normalised, vector raw)"] = convex(a, "lexmax")
    return out


def legs_of(db: Any, recorder: rq.QueryRecorder, account_id: uuid.UUID, key: str = "id") -> tuple[Leg, Leg]:
    """The recorded API query's legs, each alone at depth 50: (document[key], raw score) lists."""
    query = dataclasses.replace(recorder.take_one(), top_k=50)
    out = []
    for legs in (frozenset({"lexical"}), frozenset({"vector"})):
        hits = recorder.original(db, account_id, dataclasses.replace(query, legs=legs)).hits
        out.append(
            [
                (
                    str(h.document[key]),
                    float((h.lexical_score if "lexical" in legs else h.vector_score) or 0),
                    h.lexical_coverage if "lexical" in legs and h.lexical_coverage is not None else 1.0,
                )
                for h in hits
            ]
        )
    return out[0], out[1]


def evaluate(
    cases: Sequence[tuple[Leg, Leg, Callable[[str], frozenset[Any]], frozenset[Any]]], fuse: Fuse
) -> dict[str, float]:
    totals = {"recall_any@10": 0.0, "recall_all@10": 0.0, "mrr@10": 0.0}
    for lex, vec, covers, gold in cases:
        ranking = [rq.Ranked(covers(d), False) for d in fuse(lex, vec)]
        s = rq.score_question(gold, ranking)
        for m in totals:
            totals[m] += s[m]
    return {m: v / max(len(cases), 1) for m, v in totals.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=rq.DEFAULT_DATA)
    parser.add_argument("--corpus", type=Path, default=rq.DEFAULT_CORPUS)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    dataset = rq.load_dataset(args.data)
    common.prepare_database("agentmate_bench_quality", pg_dir=rq.PG_DIR, pg_port=rq.PG_PORT)
    warnings.filterwarnings("ignore", "No application metrics")
    from starlette.testclient import TestClient

    from infra.local_app import build_local_app

    memory_cases: list[Any] = []
    knowledge_cases: list[Any] = []
    with TestClient(build_local_app(), base_url="http://127.0.0.1:26001") as client:
        s = rq.open_session(client)
        s.post("/api/memory/search", {"query": "warm up", "top_k": 1}, (200,))
        turns_of, _, _ = rq.memory_store(s.post, dataset)
        files, kquestions = rq.load_knowledge(args.corpus)
        rq.knowledge_ingest(s.post, files)
        recorder = rq.QueryRecorder(s.retrieval)
        try:
            for q in dataset.questions:
                s.post(
                    "/api/memory/search",
                    {"query": q.question, "top_k": 10, "scope_type": rq.SCOPE_TYPE, "scope_key": q.scope},
                    (200,),
                )
                lex, vec = legs_of(s.db, recorder, s.account_id, "source_id")  # the memory id
                memory_cases.append(
                    (lex, vec, lambda d, t=turns_of: t.get(d, frozenset()), frozenset(q.gold))
                )
            docs: dict[str, tuple[str, str]] = {}
            for q in kquestions:
                s.post("/api/knowledge/search", {"query": q.question, "top_k": 10}, (200,))
                lex, vec = legs_of(s.db, recorder, s.account_id)
                ids = [d for d, _, _ in [*lex, *vec] if d not in docs]
                if ids:
                    with s.db.tenant(s.account_id) as conn:
                        for row in conn.execute(
                            "SELECT id::text AS id, metadata->>'path' AS path, content "
                            "FROM retrieval_documents WHERE id = ANY(%s::uuid[])",
                            (ids,),
                        ).fetchall():
                            docs[row["id"]] = (row["path"], row["content"])
                knowledge_cases.append(
                    (
                        lex,
                        vec,
                        lambda d, q=q: rq._knowledge_covers(q, *docs[d]),
                        frozenset(range(len(q.gold))),
                    )
                )
        finally:
            recorder.close()

    rows = []
    for name, fuse in variants().items():
        m, k = evaluate(memory_cases, fuse), evaluate(knowledge_cases, fuse)
        rows.append(
            (
                m["recall_all@10"],
                m["mrr@10"],
                [
                    name,
                    f"{m['recall_any@10']:.3f}",
                    f"{m['recall_all@10']:.3f}",
                    f"{m['mrr@10']:.3f}",
                    f"{k['recall_any@10']:.3f}",
                    f"{k['recall_all@10']:.3f}",
                    f"{k['mrr@10']:.3f}",
                ],
            )
        )
    rows.sort(key=lambda r: (-r[0], -r[1]))
    cats = sorted({q.category for q in dataset.questions})
    picked = [r[2][0] for r in rows[:3]] + ["rrf k=60 w_lex=1.0", "dense only", "lexical only"]
    cat_rows = []
    for name in dict.fromkeys(picked):
        fuse = variants()[name]
        row = [name]
        for c in cats:
            sub = [case for case, q in zip(memory_cases, dataset.questions, strict=True) if q.category == c]
            m = evaluate(sub, fuse)
            row.append(f"{m['recall_all@10']:.2f} / {m['mrr@10']:.2f}")
        cat_rows.append(row)
    print_table(
        f"Fusion variants on the dev sets ({len(memory_cases)} memory questions, {len(knowledge_cases)} "
        "knowledge questions; legs at depth 50)",
        ["variant", "mem any@10", "mem all@10", "mem MRR@10", "kn any@10", "kn all@10", "kn MRR@10"],
        [r[2] for r in rows],
        notes=[
            f"{machine()}; {time.perf_counter() - started:.0f} s; command: "
            f".venv/bin/python bench/fusion_tuning.py {' '.join(argv or sys.argv[1:])}"
        ],
    )
    print_table("Memory, per category: recall_all@10 / MRR@10", ["variant", *cats], cat_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
