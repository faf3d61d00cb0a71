"""Pick the embedded vector engine for the local runtime and tests by measurement.

Candidates, all holding N vectors of 256 dims spread over 10 accounts (3 namespaces each); every
search runs inside ONE account + namespace (+ optionally a payload filter), as the retrieval service
does:

- qdrant-local   qdrant-client local mode, QdrantClient(":memory:") — the BASELINE; a Python scan
- edge           qdrant-edge-py EdgeShard on a folder (WAL, persisted), plain segments, keyword payload
                 indexes on account_id (is_tenant) and namespace only (metadata.status unindexed)
- edge+optimize  the same shard after EdgeShard.optimize() (HNSW built; time reported separately)
- numpy          brute force: one float32 matrix per account, namespace codes as an int array, payload
                 filters as a Python mask; persistence not included (np.save time reported separately)
- numpy+np.save  the same made durable: each upsert rewrites the touched accounts' files (atomic rename)
- EmbeddedIndex  the chosen implementation (agentmate.retrieval.vector_index) on a folder: edge plus
                 validation, tenant-conditional upserts, keyword indexes on the usual filter keys

Reported: bulk upsert wall time (batches of 1000), the median cost of one single-point upsert into
the loaded index (what indexing one memory entry costs), filtered search p50/p95 in ms, recall@10 against exact
brute force (correctness), tenant leaks (any hit from another account or namespace must be 0), and
ratios against qdrant-local measured in the same run.

Run:
    PYTHONPATH=shared .venv/bin/python bench/vector_engines.py            # 10k and 100k
    PYTHONPATH=shared .venv/bin/python bench/vector_engines.py --sizes 10000 --queries 100
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "shared"))

DIMS = 256
ACCOUNTS = 10
NAMESPACES = ("memory", "knowledge", "skills")
BATCH = 1000
TOP = 10


def make_data(n: int, seed: int = 7) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    # Clustered vectors so nearest neighbours are meaningful (pure noise makes every engine "right").
    centers = rng.standard_normal((64, DIMS)).astype(np.float32)
    vectors = centers[rng.integers(0, 64, n)] + 0.6 * rng.standard_normal((n, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    accounts = rng.integers(0, ACCOUNTS, n)
    namespaces = rng.integers(0, len(NAMESPACES), n)
    statuses = rng.integers(0, 2, n)
    ids = [str(uuid.UUID(int=int(x))) for x in rng.integers(0, 2**63, n, dtype=np.int64)]
    payloads = [
        {
            "account_id": f"acct-{accounts[i]}",
            "namespace": NAMESPACES[namespaces[i]],
            "source_type": "memory_entry",
            "source_id": f"src-{i}",
            "document_id": f"doc-{i}",
            "metadata": {"status": "active" if statuses[i] else "archived"},
        }
        for i in range(n)
    ]
    return {
        "ids": ids,
        "vectors": vectors,
        "payloads": payloads,
        "accounts": accounts,
        "namespaces": namespaces,
        "statuses": statuses,
    }


def make_queries(data: dict[str, Any], count: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        # Query near a random stored vector of ANOTHER account so the global nearest is a foreign
        # tenant's point: any leak would show.
        j = int(rng.integers(0, len(data["ids"])))
        q = data["vectors"][j] + 0.05 * rng.standard_normal(DIMS).astype(np.float32)
        q /= np.linalg.norm(q)
        acct = (int(data["accounts"][j]) + 1) % ACCOUNTS
        ns = int(rng.integers(0, len(NAMESPACES)))
        status = "active" if i % 2 else None  # half the queries also filter on metadata.status
        out.append(
            {
                "vector": q,
                "account": f"acct-{acct}",
                "acct_idx": acct,
                "ns": NAMESPACES[ns],
                "ns_idx": ns,
                "status": status,
            }
        )
    return out


def exact_truth(data: dict[str, Any], query: dict[str, Any]) -> list[str]:
    mask = (data["accounts"] == query["acct_idx"]) & (data["namespaces"] == query["ns_idx"])
    if query["status"] is not None:
        mask &= data["statuses"] == (1 if query["status"] == "active" else 0)
    idx = np.nonzero(mask)[0]
    scores = data["vectors"][idx] @ query["vector"]
    order = np.argsort(-scores)[:TOP]
    return [data["ids"][idx[k]] for k in order]


# --- candidates ---------------------------------------------------------------------------------


class QdrantLocal:
    name = "qdrant-local"

    def __init__(self) -> None:
        from qdrant_client import QdrantClient, models

        self.m = models
        self.client = QdrantClient(":memory:")
        self.client.create_collection(
            "bench",
            vectors_config={"semantic": models.VectorParams(size=DIMS, distance=models.Distance.COSINE)},
        )

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        m = self.m
        self.client.upsert(
            "bench",
            [
                m.PointStruct(id=i, vector={"semantic": v}, payload=p)
                for i, v, p in zip(ids, vectors.tolist(), payloads, strict=True)
            ],
        )

    def search(self, q: dict[str, Any]) -> list[tuple[str, dict]]:
        m = self.m
        must = [
            m.FieldCondition(key="account_id", match=m.MatchValue(value=q["account"])),
            m.FieldCondition(key="namespace", match=m.MatchValue(value=q["ns"])),
        ]
        if q["status"]:
            must.append(m.FieldCondition(key="metadata.status", match=m.MatchValue(value=q["status"])))
        res = self.client.query_points(
            "bench",
            query=q["vector"].tolist(),
            using="semantic",
            query_filter=m.Filter(must=must),
            limit=TOP,
            with_payload=True,
        )
        return [(str(p.id), p.payload) for p in res.points]

    def close(self) -> None:
        self.client.close()


class Edge:
    name = "edge"

    def __init__(self) -> None:
        import qdrant_edge as qe

        self.qe = qe
        self.dir = tempfile.mkdtemp(prefix="bench-edge-")
        cfg = qe.EdgeConfig(vectors={"semantic": qe.EdgeVectorParams(size=DIMS, distance=qe.Distance.Cosine)})
        self.shard = qe.EdgeShard.create(self.dir, cfg)
        self.shard.update(
            qe.UpdateOperation.create_field_index("account_id", qe.KeywordIndexParams(is_tenant=True))
        )
        self.shard.update(qe.UpdateOperation.create_field_index("namespace", qe.PayloadSchemaType.Keyword))

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        qe = self.qe
        self.shard.update(
            qe.UpdateOperation.upsert_points(
                [
                    qe.Point(i, {"semantic": v}, p)
                    for i, v, p in zip(ids, vectors.tolist(), payloads, strict=True)
                ]
            )
        )

    def finish(self) -> None:
        self.shard.flush()

    def search(self, q: dict[str, Any]) -> list[tuple[str, dict]]:
        qe = self.qe
        must = [
            qe.FieldCondition("account_id", match=qe.MatchValue(q["account"])),
            qe.FieldCondition("namespace", match=qe.MatchValue(q["ns"])),
        ]
        if q["status"]:
            must.append(qe.FieldCondition("metadata.status", match=qe.MatchValue(q["status"])))
        res = self.shard.search(
            qe.SearchRequest(
                query=qe.Query.Nearest(q["vector"].tolist(), using="semantic"),
                limit=TOP,
                filter=qe.Filter(must=must),
                with_payload=True,
            )
        )
        return [(str(p.id), p.payload) for p in res]

    def close(self) -> None:
        self.shard.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class EdgeOptimized(Edge):
    name = "edge+optimize"

    def finish(self) -> None:
        started = time.perf_counter()
        self.shard.optimize()
        self.shard.flush()
        self.optimize_s = time.perf_counter() - started


class NumpyBrute:
    """Brute force per account. Uses einsum, not `matrix @ q`: OpenBLAS's threaded gemv was erratic on
    this 2-core machine (0.04 to 8 ms for the same product, depending on other busy threads)."""

    name = "numpy"
    NS = {ns: i for i, ns in enumerate((*NAMESPACES, "single"))}

    def __init__(self) -> None:
        self.accounts: dict[str, dict[str, Any]] = {}

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        by_acct: dict[str, list[int]] = {}
        for k, p in enumerate(payloads):
            by_acct.setdefault(p["account_id"], []).append(k)
        for acct, rows in by_acct.items():
            a = self.accounts.setdefault(
                acct,
                {
                    "ids": [],
                    "pos": {},
                    "payloads": [],
                    "ns": np.zeros(0, np.int16),
                    "m": np.zeros((0, DIMS), np.float32),
                },
            )
            new_rows = []
            for k in rows:
                pid = ids[k]
                if pid in a["pos"]:
                    r = a["pos"][pid]
                    a["m"][r] = vectors[k]
                    a["payloads"][r] = payloads[k]
                    a["ns"][r] = self.NS[payloads[k]["namespace"]]
                else:
                    a["pos"][pid] = len(a["ids"]) + len(new_rows)
                    new_rows.append(k)
            if new_rows:
                a["ids"].extend(ids[k] for k in new_rows)
                a["payloads"].extend(payloads[k] for k in new_rows)
                codes = np.array([self.NS[payloads[k]["namespace"]] for k in new_rows], np.int16)
                a["ns"] = np.concatenate([a["ns"], codes])
                a["m"] = np.vstack([a["m"], vectors[new_rows]])

    def search(self, q: dict[str, Any]) -> list[tuple[str, dict]]:
        a = self.accounts.get(q["account"])
        if a is None:
            return []
        idx = np.nonzero(a["ns"] == self.NS[q["ns"]])[0]
        if q["status"]:
            pl = a["payloads"]
            idx = np.asarray(
                [i for i in idx.tolist() if pl[i]["metadata"].get("status") == q["status"]], dtype=np.int64
            )
        if idx.size == 0:
            return []
        scores = np.einsum("ij,j->i", a["m"][idx], q["vector"])
        top = min(TOP, idx.size)
        part = np.argpartition(-scores, top - 1)[:top]
        part = part[np.argsort(-scores[part])]
        return [(a["ids"][idx[k]], a["payloads"][idx[k]]) for k in part]

    def finish(self) -> None:
        started = time.perf_counter()
        d = tempfile.mkdtemp(prefix="bench-np-")
        for i, a in enumerate(self.accounts.values()):
            np.save(f"{d}/{i}.npy", a["m"])
        self.persist_s = time.perf_counter() - started
        shutil.rmtree(d, ignore_errors=True)

    def close(self) -> None:
        self.accounts.clear()


class NumpySaved(NumpyBrute):
    """numpy brute force made durable the simple way: every upsert rewrites the touched accounts'
    matrix (np.save) and payloads (JSON) to a folder with an atomic rename. Search is the same as
    `numpy`; the price is write cost proportional to the account's size."""

    name = "numpy+np.save"

    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.mkdtemp(prefix="bench-npsave-")

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        import json
        import os

        super().upsert(ids, vectors, payloads)
        for acct in {p["account_id"] for p in payloads}:
            a = self.accounts[acct]
            base = f"{self.dir}/{acct}"
            with open(base + ".npy.tmp", "wb") as f:
                np.save(f, a["m"])
            with open(base + ".json.tmp", "w") as f:
                json.dump({"ids": a["ids"], "payloads": a["payloads"]}, f)
            os.replace(base + ".npy.tmp", base + ".npy")
            os.replace(base + ".json.tmp", base + ".json")

    def finish(self) -> None:
        pass

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Chosen:
    """agentmate.retrieval.vector_index.EmbeddedIndex on a disk folder: edge plus our validation,
    tenant-conditional upserts and keyword indexes on the usual filter keys (metadata.status incl.)."""

    name = "EmbeddedIndex"

    def __init__(self) -> None:
        from agentmate.retrieval.vector_index import EmbeddedIndex, VectorPoint

        self.VectorPoint = VectorPoint
        self.dir = tempfile.mkdtemp(prefix="bench-chosen-")
        self.index = EmbeddedIndex(self.dir)
        self.index.ensure_collection(DIMS)

    def upsert(self, ids: list[str], vectors: np.ndarray, payloads: list[dict]) -> None:
        by_acct: dict[str, list[Any]] = {}
        for i, v, p in zip(ids, vectors.tolist(), payloads, strict=True):
            by_acct.setdefault(p["account_id"], []).append(self.VectorPoint(i, v, p))
        for acct, points in by_acct.items():
            self.index.upsert(acct, points)

    def search(self, q: dict[str, Any]) -> list[tuple[str, dict]]:
        filters = {"metadata.status": q["status"]} if q["status"] else None
        hits = self.index.search(q["account"], q["ns"], q["vector"].tolist(), TOP, filters)
        return [(h.id, h.payload) for h in hits]

    def close(self) -> None:
        self.index.close()
        shutil.rmtree(self.dir, ignore_errors=True)


# --- driver -------------------------------------------------------------------------------------


def run(
    engine_cls: type, data: dict[str, Any], queries: list[dict[str, Any]], max_queries: int
) -> dict[str, Any]:
    gc.collect()
    engine = engine_cls()
    n = len(data["ids"])
    started = time.perf_counter()
    for s in range(0, n, BATCH):
        engine.upsert(
            data["ids"][s : s + BATCH], data["vectors"][s : s + BATCH], data["payloads"][s : s + BATCH]
        )
    upsert_s = time.perf_counter() - started
    extra = ""
    if hasattr(engine, "finish"):
        engine.finish()
    if hasattr(engine, "optimize_s"):
        extra = f"optimize {engine.optimize_s:.1f}s"
    if hasattr(engine, "persist_s"):
        extra = f"np.save {engine.persist_s:.2f}s"
    # Single-point upserts into the loaded index: what indexing one memory entry costs.
    rng = np.random.default_rng(5)
    single = []
    for k in range(30):
        v = rng.standard_normal((1, DIMS)).astype(np.float32)
        v /= np.linalg.norm(v)
        payload = dict(data["payloads"][k], namespace="single", document_id=f"single-{k}")  # never searched
        t0 = time.perf_counter()
        engine.upsert([str(uuid.uuid4())], v, [payload])
        single.append((time.perf_counter() - t0) * 1000)
    qs = queries[:max_queries]
    engine.search(qs[0])  # warm-up
    times, recalls, leaks = [], [], 0
    for q in qs:
        t0 = time.perf_counter()
        hits = engine.search(q)
        times.append((time.perf_counter() - t0) * 1000)
        truth = exact_truth(data, q)
        recalls.append(len({h for h, _ in hits} & set(truth)) / max(len(truth), 1))
        for _, payload in hits:
            if (
                payload["account_id"] != q["account"]
                or payload["namespace"] != q["ns"]
                or (q["status"] and payload["metadata"]["status"] != q["status"])
            ):
                leaks += 1
    engine.close()
    times.sort()
    return {
        "engine": engine_cls.name,
        "n": n,
        "upsert_s": upsert_s,
        "extra": extra,
        "p50": statistics.median(times),
        "p95": times[min(len(times) - 1, int(0.95 * len(times)))],
        "recall": sum(recalls) / len(recalls),
        "leaks": leaks,
        "queries": len(qs),
        "single_upsert_ms": statistics.median(single),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--baseline-queries", type=int, default=40, help="qdrant-local is slow at 100k; it gets fewer queries"
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # qdrant-client local mode warns above 20k points: that is the point

    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        data = make_data(n)
        queries = make_queries(data, args.queries)
        results = []
        for cls in (QdrantLocal, Edge, EdgeOptimized, NumpyBrute, NumpySaved, Chosen):
            limit = args.baseline_queries if cls is QdrantLocal else args.queries
            res = run(cls, data, queries, limit)
            print(
                f"  {res['engine']:>14} n={n}: upsert {res['upsert_s']:.2f}s {res['extra']}  "
                f"1-point upsert {res['single_upsert_ms']:.2f}ms "
                f"p50 {res['p50']:.2f}ms p95 {res['p95']:.2f}ms recall@10 {res['recall']:.3f} "
                f"leaks {res['leaks']}",
                flush=True,
            )
            results.append(res)
        base = results[0]
        for r in results:
            r["upsert_ratio"] = r["upsert_s"] / base["upsert_s"]
            r["p50_ratio"] = r["p50"] / base["p50"]
            r["p95_ratio"] = r["p95"] / base["p95"]
        rows.extend(results)

    head = [
        "engine",
        "vectors",
        "bulk upsert s (x base)",
        "1-point upsert ms p50",
        "search p50 ms (x base)",
        "search p95 ms (x base)",
        "recall@10",
        "leaks",
        "queries",
        "notes",
    ]
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print(
            f"| {r['engine']} | {r['n']:,} | {r['upsert_s']:.2f} ({r['upsert_ratio']:.2f}) | "
            f"{r['single_upsert_ms']:.2f} | "
            f"{r['p50']:.3f} ({r['p50_ratio']:.4f}) | {r['p95']:.3f} ({r['p95_ratio']:.4f}) | "
            f"{r['recall']:.3f} | {r['leaks']} | {r['queries']} | {r['extra']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
