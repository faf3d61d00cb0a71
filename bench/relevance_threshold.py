"""Where does raw vector similarity separate "relevant" from "nothing relevant"? (memory search min_similarity)

The fused score of a hybrid search is rank-normalised (the top hit of a leg scores 0.5 whatever its similarity),
so it cannot say "nothing relevant". The raw cosine similarity (`vector_score`, what `min_similarity` compares)
can, but its scale belongs to the embedder: this measures it for one embedder on bench/data/embedder_eval.json.

- relevant:   similarity of each query to its target document (the answer is in memory);
- unrelated:  the best similarity of each query to the corpus with its target removed (the answer is not in
              memory: what the top hit scores when nothing relevant is stored).

It prints both distributions and, for candidate thresholds, the share of relevant targets kept and of unrelated
top hits dropped; the recommended threshold maximises balanced accuracy (mean of the two). Another embedder needs
its own run (`--embedder`); scores are not comparable across embedders.

    PYTHONPATH=shared .venv/bin/python bench/relevance_threshold.py [--embedder static|hashing]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "shared"))
DATA = Path(__file__).resolve().parent / "data" / "embedder_eval.json"


def _embedder(name: str) -> Any:  # a retrieval Embedder
    from agentmate.retrieval.embedders import HashingEmbedder, StaticModelEmbedder

    return {"static": StaticModelEmbedder, "hashing": lambda: HashingEmbedder(256)}[name]()


def _quantiles(values: list[float]) -> str:
    s = sorted(values)
    pick = [s[min(len(s) - 1, int(p * len(s)))] for p in (0.05, 0.25, 0.5, 0.75, 0.95)]
    return " / ".join(f"{v:.3f}" for v in pick)


def measure(name: str) -> dict:
    import numpy as np

    data = json.loads(DATA.read_text())
    docs, queries = data["documents"], data["queries"]
    emb = _embedder(name)
    d = np.asarray(emb.embed([x["text"] for x in docs]), dtype=np.float32)
    q = np.asarray(emb.embed([x["q"] for x in queries]), dtype=np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True) + 1e-12
    q /= np.linalg.norm(q, axis=1, keepdims=True) + 1e-12
    sims = q @ d.T
    index = {x["id"]: i for i, x in enumerate(docs)}
    relevant, unrelated = [], []
    groups: dict[str, tuple[list[float], list[float]]] = {}
    for i, query in enumerate(queries):
        t = index[query["target"]]
        pair = (float(sims[i, t]), float(np.max(np.delete(sims[i], t))))
        relevant.append(pair[0])
        unrelated.append(pair[1])
        group = groups.setdefault(f"{query['kind']}-{query.get('lang', 'en')}", ([], []))
        group[0].append(pair[0])
        group[1].append(pair[1])
    rows = []
    for step in range(0, 101):
        threshold = step / 100
        kept = sum(v >= threshold for v in relevant) / len(relevant)
        dropped = sum(v < threshold for v in unrelated) / len(unrelated)
        rows.append((threshold, kept, dropped, (kept + dropped) / 2))
    best = max(rows, key=lambda r: (r[3], -r[0]))
    return {
        "embedder": emb.name,
        "n": len(queries),
        "relevant": relevant,
        "unrelated": unrelated,
        "rows": rows,
        "best": best,
        "groups": groups,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", default="static", choices=["static", "hashing"])
    args = parser.parse_args()
    r = measure(args.embedder)
    print(f"embedder {r['embedder']}, {r['n']} queries")
    print(f"relevant  (query → its target)        p5/p25/p50/p75/p95: {_quantiles(r['relevant'])}")
    print(f"unrelated (best other, target removed) p5/p25/p50/p75/p95: {_quantiles(r['unrelated'])}")
    for name, (rel, unr) in sorted(r["groups"].items()):
        print(
            f"  {name} (n={len(rel)}): relevant p50 {_quantiles(rel).split(' / ')[2]}, "
            f"unrelated p50 {_quantiles(unr).split(' / ')[2]}"
        )
    print("| threshold | relevant kept | unrelated dropped | balanced |")
    print("|---|---|---|---|")
    for threshold, kept, dropped, balanced in r["rows"]:
        if abs(threshold * 20 - round(threshold * 20)) < 1e-9 or threshold == r["best"][0]:
            mark = " **best**" if threshold == r["best"][0] else ""
            print(f"| {threshold:.2f}{mark} | {kept:.3f} | {dropped:.3f} | {balanced:.3f} |")
    t, kept, dropped, balanced = r["best"]
    print(
        f"recommended min_similarity {t:.2f}: keeps {kept:.1%} of relevant targets, drops {dropped:.1%} of "
        f"unrelated top hits (balanced accuracy {balanced:.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
