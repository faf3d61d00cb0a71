"""The embedded vector index under churn (issue 25 §3): as many deletes as upserts keep its disk footprint
bounded, the background upkeep loses no acknowledged write, and it is safe beside searches and writes.

qdrant-edge keeps deleted and replaced points in its segments until a vacuum, and every operation in its
write-ahead log until a flush acknowledges it (the WAL then drops its closed 32 MiB files but the last);
the index flushes and vacuums in the background. The engine's API does not expose a deleted-point count,
so the tests measure what the points cost on disk (allocated blocks: the engine preallocates sparse files).
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import uuid
from pathlib import Path

from agentmate.retrieval.embedded_index import FLUSH_EVERY, VACUUM_MIN, EmbeddedIndex
from agentmate.retrieval.vector_index import VectorPoint

SHARED = str(Path(__file__).parents[3] / "shared")
WAL_FILE = 32 * 2**20  # qdrant-edge 0.9's WAL segment capacity (not configurable from Python)


def allocated(folder: Path) -> int:
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


def vectors(dims: int, n: int = 16) -> list[list[float]]:
    rng = random.Random(7)
    return [[rng.random() for _ in range(dims)] for _ in range(n)]


def churn(idx: EmbeddedIndex, cycles: int, live: int, pool: list[list[float]]) -> list[str]:
    """One upsert per cycle and, once `live` points are stored, one delete of the oldest."""
    kept: list[str] = []
    for i in range(cycles):
        point_id = str(uuid.uuid4())
        idx.upsert("acct-a", [VectorPoint(point_id, pool[i % len(pool)], {"namespace": "memory"})])
        kept.append(point_id)
        if len(kept) > live:
            idx.delete("acct-a", [kept.pop(0)])
    return kept


def test_the_disk_footprint_stays_bounded_when_deletes_match_upserts(tmp_path: Path) -> None:
    # Given the index with its default upkeep, 1024-dim vectors (4 KiB a point, so the WAL fills fast)
    dims, live, cycles = 1024, 100, 24_000
    idx = EmbeddedIndex(str(tmp_path / "vectors"))
    idx.ensure_collection(dims)
    # When 24,000 points are written and 23,900 deleted, 100 staying live throughout
    kept = churn(idx, cycles, live, vectors(dims))
    assert idx.wait_optimized(timeout=600)
    # Then the WAL holds at most its open file, the closed one the engine retains and one filled since
    # the last flush (the old code kept every operation: ~124 MiB here, growing with every write) ...
    shard = tmp_path / "vectors" / "shard"
    wal, segments = allocated(shard / "wal"), allocated(shard / "segments")
    assert wal <= 3 * WAL_FILE, f"WAL {wal / 2**20:.1f} MiB"
    # ... and the segments hold the live points plus at most the garbage one vacuum and one flush
    # interval let accumulate (the old code kept all 24,000 points: ~97 MiB here)
    point_bytes = dims * 4 + 512
    bound = (live + VACUUM_MIN + FLUSH_EVERY) * point_bytes + 8 * 2**20
    assert segments <= bound, f"segments {segments / 2**20:.1f} MiB > {bound / 2**20:.1f} MiB"
    # And the index still answers with exactly the live points
    assert idx.count("acct-a") == live
    hits = idx.search("acct-a", "memory", vectors(dims)[(cycles - 1) % 16], 1000)
    assert {h.id for h in hits} == set(kept)
    idx.close()


def test_points_acknowledged_around_the_upkeep_survive_a_killed_process(tmp_path: Path) -> None:
    # Given a process whose index flushed and vacuumed (small thresholds), then wrote more and was killed
    folder = str(tmp_path / "vectors")
    code = f"""
import os, signal, uuid
from agentmate.retrieval.embedded_index import EmbeddedIndex
from agentmate.retrieval.vector_index import VectorPoint
idx = EmbeddedIndex({folder!r}, flush_every=200, vacuum_min=300)
idx.ensure_collection(8)
live = []
def put(i):
    pid = str(uuid.uuid4())
    idx.upsert('acct-a', [VectorPoint(pid, [1.0, i % 7, 0, 0, 0, 0, 0, 1.0], {{'namespace': 'memory'}})])
    live.append(pid)
for i in range(3000):
    put(i)
    if len(live) > 50:
        idx.delete('acct-a', [live.pop(0)])
assert idx.wait_maintained(timeout=300)
print('optimised' if idx._optimizer is not None else 'never optimised')
for i in range(25):  # after the last flush: only the WAL holds these
    put(i)
idx.delete('acct-a', live[:5])
print(' '.join(live[5:]), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": SHARED},
        capture_output=True,
        text=True,
    )
    assert out.returncode == -9, out.stderr
    marker, ids_line = out.stdout.splitlines()
    assert marker == "optimised"
    expected = set(ids_line.split())
    assert len(expected) == 70
    # When the folder is opened again
    with EmbeddedIndex(folder) as idx:
        # Then exactly the acknowledged live points are there
        assert idx.count("acct-a") == 70
        hits = idx.search("acct-a", "memory", [1.0, 0, 0, 0, 0, 0, 0, 1.0], 1000)
        assert {h.id for h in hits} == expected


def test_the_upkeep_runs_safely_beside_concurrent_writes_and_searches(tmp_path: Path) -> None:
    # Given an index that flushes every 50 operations and vacuums after 100 dead points
    idx = EmbeddedIndex(str(tmp_path / "vectors"), flush_every=50, vacuum_min=100)
    idx.ensure_collection(8)
    errors: list[BaseException] = []
    survivors: dict[str, list[str]] = {}

    def writer(account: str) -> None:
        try:
            survivors[account] = churn_account(idx, account)
        except BaseException as exc:  # re-raised in the main thread
            errors.append(exc)

    def searcher() -> None:
        try:
            for _ in range(300):
                for h in idx.search("acct-0", "memory", [1.0] * 8, 20):
                    assert h.payload["account_id"] == "acct-0"
        except BaseException as exc:
            errors.append(exc)

    # When three accounts churn and a fourth thread searches while the upkeep runs
    threads = [threading.Thread(target=writer, args=(f"acct-{n}",)) for n in range(3)]
    threads.append(threading.Thread(target=searcher))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert idx.wait_maintained(timeout=300)
    # Then nothing failed, the upkeep ran, and every account holds exactly its live points
    assert errors == []
    assert idx._flusher is not None and idx._optimizer is not None
    for account, kept in survivors.items():
        assert idx.count(account) == len(kept) == 20
        hits = idx.search(account, "memory", [1.0] * 8, 100)
        assert {h.id for h in hits} == set(kept)
    idx.close()


def churn_account(idx: EmbeddedIndex, account: str) -> list[str]:
    kept: list[str] = []
    for i in range(600):
        point_id = str(uuid.uuid4())
        idx.upsert(
            account, [VectorPoint(point_id, [1.0, float(i % 5), 0, 0, 0, 0, 0, 1.0], {"namespace": "memory"})]
        )
        kept.append(point_id)
        if len(kept) > 20:
            idx.delete(account, [kept.pop(0)])
    return kept
