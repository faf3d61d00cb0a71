"""Vector indexes: the same behaviour suite for every implementation, tenant isolation first.

QdrantServerIndex runs against qdrant-client's local mode (QdrantClient(":memory:")) since no Qdrant
server exists here; EmbeddedIndex runs in memory (temporary folder) and on a real folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentmate.retrieval.embedded_index import EmbeddedIndex
from agentmate.retrieval.qdrant_index import QdrantServerIndex
from agentmate.retrieval.vector_index import VectorIndex, VectorIndexError, VectorPoint

DIMS = 8
SHARED = str(Path(__file__).parents[3] / "shared")


def vec(*head: float) -> list[float]:
    v = [*head, *([0.0] * (DIMS - len(head)))]
    return v[:DIMS]


def pid() -> str:
    return str(uuid.uuid4())


def point(v: list[float], namespace: str = "memory", **payload: Any) -> VectorPoint:
    return VectorPoint(id=pid(), vector=v, payload={"namespace": namespace, **payload})


def qdrant_local() -> QdrantServerIndex:
    from qdrant_client import QdrantClient

    return QdrantServerIndex(client=QdrantClient(":memory:"), collection="test_retrieval")


FACTORIES: dict[str, Callable[[Path], Any]] = {
    "qdrant-server(local mode)": lambda _tmp: qdrant_local(),
    "embedded(memory)": lambda _tmp: EmbeddedIndex(None),
    "embedded(folder)": lambda tmp: EmbeddedIndex(str(tmp / "vectors")),
}


@pytest.fixture(params=list(FACTORIES))
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    idx = FACTORIES[request.param](tmp_path)
    idx.ensure_collection(DIMS)
    yield idx
    idx.close()


def ids_of(hits: list[Any]) -> list[str]:
    return [h.id for h in hits]


def test_implements_the_protocol(index: Any) -> None:
    assert isinstance(index, VectorIndex)


def test_upsert_search_delete_round_trip(index: Any) -> None:
    a, b = point(vec(1, 0), source_type="note"), point(vec(0, 1), source_type="note")
    index.upsert("acct-a", [a, b])
    hits = index.search("acct-a", "memory", vec(1, 0.1), limit=5)
    assert ids_of(hits) == [a.id, b.id]
    assert hits[0].score == pytest.approx(0.995, abs=0.01)
    assert hits[0].payload["account_id"] == "acct-a"
    assert hits[0].payload["source_type"] == "note"
    index.delete("acct-a", [a.id])
    assert ids_of(index.search("acct-a", "memory", vec(1, 0.1), limit=5)) == [b.id]
    assert index.count("acct-a") == 1


def test_upsert_replaces_a_point_with_the_same_id(index: Any) -> None:
    p = point(vec(1, 0), status="v1")
    index.upsert("acct-a", [p])
    index.upsert("acct-a", [VectorPoint(p.id, vec(0, 1), {"namespace": "memory", "status": "v2"})])
    hits = index.search("acct-a", "memory", vec(0, 1), limit=5)
    assert ids_of(hits) == [p.id]
    assert hits[0].payload["status"] == "v2"
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert index.count("acct-a") == 1


def test_another_accounts_vectors_never_come_back_even_when_nearest(index: Any) -> None:
    # Given account B owns the exact query vector and account A only far-away points
    query = vec(1, 1, 1)
    theirs = [point(query) for _ in range(5)]
    mine = point(vec(-1, 0, 0, 1))
    index.upsert("acct-b", theirs)
    index.upsert("acct-a", [mine])
    # When A searches, only A's point comes back, however many B points are nearer
    hits = index.search("acct-a", "memory", query, limit=10)
    assert ids_of(hits) == [mine.id]
    assert all(h.payload["account_id"] == "acct-a" for h in hits)
    # And an account with nothing sees nothing
    assert index.search("acct-c", "memory", query, limit=10) == []


def test_a_point_id_of_another_account_is_never_overwritten(index: Any) -> None:
    victim = point(vec(1, 0), secret="a")
    index.upsert("acct-a", [victim])
    index.upsert("acct-b", [VectorPoint(victim.id, vec(0, 1), {"namespace": "memory", "secret": "b"})])
    hits = index.search("acct-a", "memory", vec(1, 0), limit=5)
    assert [(h.id, h.payload["secret"]) for h in hits] == [(victim.id, "a")]
    assert index.search("acct-b", "memory", vec(0, 1), limit=5) == []


def test_delete_by_id_is_confined_to_the_account(index: Any) -> None:
    victim = point(vec(1, 0))
    index.upsert("acct-a", [victim])
    index.delete("acct-b", [victim.id])
    assert index.count("acct-a") == 1
    index.delete("acct-a", [])
    assert index.count("acct-a") == 1


def test_namespace_and_payload_filters(index: Any) -> None:
    mem_active = point(vec(1, 0), "memory", source_type="memory_entry", metadata={"status": "active"})
    mem_archived = point(vec(1, 0.1), "memory", source_type="memory_entry", metadata={"status": "archived"})
    knowledge = point(vec(1, 0), "knowledge", source_type="knowledge_chunk", metadata={"status": "active"})
    index.upsert("acct-a", [mem_active, mem_archived, knowledge])
    assert set(ids_of(index.search("acct-a", "memory", vec(1, 0), 10))) == {mem_active.id, mem_archived.id}
    assert ids_of(index.search("acct-a", "knowledge", vec(1, 0), 10)) == [knowledge.id]
    active = index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.status": "active"})
    assert ids_of(active) == [mem_active.id]
    both = index.search(
        "acct-a", "memory", vec(1, 0), 10, {"source_type": "memory_entry", "metadata.status": "archived"}
    )
    assert ids_of(both) == [mem_archived.id]
    assert index.search("acct-a", "memory", vec(1, 0), 10, {"source_type": "nope"}) == []
    # a key nobody indexed up front still filters exactly
    tagged = point(vec(0, 1), "memory", metadata={"topic": "billing", "status": "active"})
    index.upsert("acct-a", [tagged])
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.topic": "billing"})) == [
        tagged.id
    ]


def test_a_string_filter_key_gets_a_payload_index_on_first_use(index: Any) -> None:
    # The caller's filters name the keys: the index knows no domain's field names up front
    index.upsert("acct-a", [point(vec(1, 0), metadata={"scope_type": "project", "rank": 3})])
    assert "metadata.scope_type" not in index._indexed
    hits = index.search(
        "acct-a", "memory", vec(1, 0), 5, {"metadata.scope_type": "project", "metadata.rank": 3}
    )
    assert len(hits) == 1
    assert "metadata.scope_type" in index._indexed
    assert (
        "metadata.rank" not in index._indexed
    )  # numbers filter by range: a keyword index would not serve them
    if isinstance(index, EmbeddedIndex):  # the engine itself has it (qdrant-client's local mode keeps none)
        assert "metadata.scope_type" in index._shard().info().payload_schema


def test_numeric_filters_match_numerically_and_booleans_exactly(index: Any) -> None:
    one_int = point(vec(1, 0), metadata={"priority": 1, "pinned": True, "status": "active"})
    one_float = point(vec(1, 0.1), metadata={"priority": 1.0, "pinned": False, "status": "active"})
    two = point(vec(1, 0.2), metadata={"priority": 2.5, "pinned": 1, "status": "active"})
    index.upsert("acct-a", [one_int, one_float, two])
    assert set(ids_of(index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.priority": 1}))) == {
        one_int.id,
        one_float.id,
    }
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.priority": 2.5})) == [two.id]
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.pinned": True})) == [one_int.id]
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.pinned": False})) == [
        one_float.id
    ]
    # a key that already has a keyword index still filters numbers correctly
    assert index.search("acct-a", "memory", vec(1, 0), 10, {"metadata.status": 1}) == []


def test_boolean_filters_survive_many_non_matching_neighbours(index: Any) -> None:
    # Given 100 nearer points with pinned=1 (an integer, not a boolean) and one pinned=true further away
    near = [point(vec(1, i / 1000), metadata={"pinned": 1}) for i in range(100)]
    far = point(vec(0, 1), metadata={"pinned": True, "tags": [True]})
    index.upsert("acct-a", [*near, far])
    hits = index.search("acct-a", "memory", vec(1, 0), 3, {"metadata.pinned": True})
    assert ids_of(hits) == [far.id]
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 3, {"metadata.tags": True})) == [far.id]
    # and delete_by_filter with a boolean removes exactly that point
    index.delete_by_filter("acct-a", "memory", {"metadata.pinned": True})
    assert index.count("acct-a") == 100
    index.delete_by_filter("acct-b", "memory", {"metadata.pinned": 1})
    assert index.count("acct-a") == 100
    index.delete_by_filter("acct-a", "memory", {"metadata.pinned": 1})
    assert index.count("acct-a") == 0


def test_limit_is_respected_and_results_are_ordered_by_similarity(index: Any) -> None:
    pts = [point(vec(1, i / 10)) for i in range(10)]
    index.upsert("acct-a", pts)
    hits = index.search("acct-a", "memory", vec(1, 0), limit=3)
    assert ids_of(hits) == [p.id for p in pts[:3]]
    assert hits[0].score >= hits[1].score >= hits[2].score
    assert index.search("acct-a", "memory", vec(1, 0), limit=0) == []


def test_delete_by_filter_is_confined_to_account_and_namespace(index: Any) -> None:
    a_doc1 = point(vec(1, 0), "memory", document_id="d1")
    a_doc2 = point(vec(1, 0), "memory", document_id="d2")
    a_other_ns = point(vec(1, 0), "knowledge", document_id="d1")
    b_doc1 = point(vec(1, 0), "memory", document_id="d1")
    index.upsert("acct-a", [a_doc1, a_doc2, a_other_ns])
    index.upsert("acct-b", [b_doc1])
    index.delete_by_filter("acct-a", "memory", {"document_id": "d1"})
    assert ids_of(index.search("acct-a", "memory", vec(1, 0), 10)) == [a_doc2.id]
    assert ids_of(index.search("acct-a", "knowledge", vec(1, 0), 10)) == [a_other_ns.id]
    assert ids_of(index.search("acct-b", "memory", vec(1, 0), 10)) == [b_doc1.id]
    index.delete_by_filter("acct-a", "memory")  # no filters: the whole namespace of that account
    assert index.count("acct-a", "memory") == 0
    assert index.count("acct-a", "knowledge") == 1
    assert index.count("acct-b") == 1


def test_count_per_account_and_namespace(index: Any) -> None:
    index.upsert("acct-a", [point(vec(1)), point(vec(1), "knowledge")])
    index.upsert("acct-b", [point(vec(1))])
    assert index.count("acct-a") == 2
    assert index.count("acct-a", "knowledge") == 1
    assert index.count("acct-b") == 1
    assert index.count("acct-z") == 0


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"account_id": "acct-b"}), ValueError),
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"namespace": "x"}), ValueError),
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"a[0]": "x"}), ValueError),
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"k": None}), ValueError),
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"k": float("nan")}), ValueError),
        (lambda ix: ix.search("acct-a", "memory", vec(1), 5, {"k": [1]}), ValueError),
        (lambda ix: ix.search("", "memory", vec(1), 5), ValueError),
        (lambda ix: ix.search("acct-a", "", vec(1), 5), ValueError),
        (lambda ix: ix.search("acct-a", "memory", [1.0, 0.0], 5), VectorIndexError),
        (lambda ix: ix.upsert("acct-a", [VectorPoint(pid(), vec(1), {})]), ValueError),
        (lambda ix: ix.upsert("acct-a", [VectorPoint("not-a-uuid", vec(1), {"namespace": "m"})]), ValueError),
        (
            lambda ix: ix.upsert("acct-a", [VectorPoint(pid(), vec(float("nan")), {"namespace": "m"})]),
            ValueError,
        ),
        (lambda ix: ix.upsert("acct-a", [VectorPoint(pid(), vec(0), {"namespace": "m"})]), ValueError),
        (lambda ix: ix.upsert("acct-a", [VectorPoint(pid(), [1.0], {"namespace": "m"})]), VectorIndexError),
        (
            lambda ix: ix.upsert(
                "acct-a", [VectorPoint(pid(), vec(1), {"namespace": "m", "account_id": "b"})]
            ),
            ValueError,
        ),
        (lambda ix: ix.ensure_collection(DIMS + 1), VectorIndexError),
    ],
)
def test_invalid_calls_are_rejected(index: Any, call: Callable[[Any], Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        call(index)


def test_ensure_collection_is_idempotent(index: Any) -> None:
    index.ensure_collection(DIMS)
    index.ensure_collection(DIMS)


@pytest.mark.parametrize("factory", list(FACTORIES))
def test_reads_before_any_collection_exists_are_empty(factory: str, tmp_path: Path) -> None:
    idx = FACTORIES[factory](tmp_path)
    try:
        assert idx.search("acct-a", "memory", vec(1), 5) == []
        assert idx.count("acct-a") == 0
        idx.delete("acct-a", [pid()])
        idx.delete_by_filter("acct-a", "memory")
    finally:
        idx.close()


def test_a_second_qdrant_index_on_an_existing_collection_checks_dimensions() -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    QdrantServerIndex(client=client, collection="c").ensure_collection(DIMS)
    other = QdrantServerIndex(client=client, collection="c")
    other.ensure_collection(DIMS)
    with pytest.raises(VectorIndexError, match="reindex"):
        QdrantServerIndex(client=client, collection="c").ensure_collection(DIMS * 2)


def test_qdrant_errors_become_vector_index_errors() -> None:
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    idx = QdrantServerIndex(client=client, collection="c")
    idx.ensure_collection(DIMS)
    client.delete_collection("c")  # pulled from under us
    with pytest.raises(VectorIndexError, match="qdrant upsert failed"):
        idx.upsert("acct-a", [point(vec(1))])


# --- embedded-only: persistence, process lock, threads --------------------------------------------


def test_embedded_index_persists_across_reopen(tmp_path: Path) -> None:
    folder = str(tmp_path / "vectors")
    p = point(vec(1, 0), metadata={"status": "active"})
    with EmbeddedIndex(folder) as idx:
        idx.ensure_collection(DIMS)
        idx.upsert("acct-a", [p])
    with EmbeddedIndex(folder) as idx:
        hits = idx.search("acct-a", "memory", vec(1, 0), 5, {"metadata.status": "active"})
        assert ids_of(hits) == [p.id]
        idx.ensure_collection(DIMS)
        with pytest.raises(VectorIndexError, match="8-dim"):
            idx.ensure_collection(16)


def test_embedded_index_survives_a_killed_process(tmp_path: Path) -> None:
    folder = str(tmp_path / "vectors")
    point_id = pid()
    code = (
        "import os, sys; from agentmate.retrieval.embedded_index import EmbeddedIndex;"
        " from agentmate.retrieval.vector_index import VectorPoint;"
        f"ix = EmbeddedIndex({folder!r}); ix.ensure_collection({DIMS});"
        f"ix.upsert('acct-a', [VectorPoint({point_id!r}, [1.0] + [0.0] * {DIMS - 1}, {{'namespace': 'memory'}})]);"
        "sys.stdout.flush(); os._exit(0)"  # no close, no flush
    )
    subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SHARED}, check=True)
    with EmbeddedIndex(folder) as idx:
        assert ids_of(idx.search("acct-a", "memory", vec(1), 5)) == [point_id]


def test_a_second_process_cannot_open_a_folder_in_use(tmp_path: Path) -> None:
    folder = str(tmp_path / "vectors")
    with EmbeddedIndex(folder) as idx:
        idx.ensure_collection(DIMS)
        code = (
            "from agentmate.retrieval.embedded_index import EmbeddedIndex\n"
            "from agentmate.retrieval.vector_index import VectorIndexError\n"
            f"try:\n    EmbeddedIndex({folder!r})\nexcept VectorIndexError as e:\n    print('refused:', e)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONPATH": SHARED},
            capture_output=True,
            text=True,
            check=True,
        )
        assert "refused: vector folder" in out.stdout and "in use by another process" in out.stdout


def test_embedded_index_is_safe_with_many_threads() -> None:
    with EmbeddedIndex(None) as idx:
        idx.ensure_collection(DIMS)
        errors: list[BaseException] = []

        def worker(n: int) -> None:
            try:
                account = f"acct-{n % 2}"
                for i in range(50):
                    idx.upsert(account, [point(vec(1, n, i), metadata={"worker": str(n)})])
                    hits = idx.search(account, "memory", vec(1, n, i), 5, {"metadata.worker": str(n)})
                    assert hits and all(h.payload["account_id"] == account for h in hits)
            except BaseException as exc:  # collected and re-raised in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert idx.count("acct-0") == 150 and idx.count("acct-1") == 150


def test_in_memory_embedded_index_removes_its_folder_and_refuses_use_after_close() -> None:
    idx = EmbeddedIndex(None)
    idx.ensure_collection(DIMS)
    folder = idx.path
    assert folder.exists()
    idx.close()
    assert not folder.exists()
    with pytest.raises(VectorIndexError, match="closed"):
        idx.count("acct-a")
    idx.close()  # idempotent


def test_embedded_index_optimises_in_the_background_and_keeps_answering(tmp_path: Path) -> None:
    # Given an index that optimises after every 100 written points
    idx = EmbeddedIndex(str(tmp_path / "vectors"), optimize_every=100)
    idx.ensure_collection(DIMS)
    mine, other = "acct-a", "acct-b"
    nearest = point(vec(1.0, 0.0))
    idx.upsert(other, [nearest])
    for i in range(3):
        idx.upsert(mine, [point(vec(0.5, 0.1 * j + i)) for j in range(50)])
    # When the background optimisation it started has finished
    assert idx._optimizer is not None
    assert idx.wait_optimized(timeout=60)
    # Then searches answer from the optimised segments, still confined to the account
    hits = idx.search(mine, "memory", vec(1.0, 0.0), 10)
    assert len(hits) == 10
    assert idx.count(mine) == 150 and idx.count(other) == 1
    assert nearest.id not in ids_of(hits)
    assert all(h.payload["account_id"] == mine for h in hits)
    idx.close()


def test_embedded_index_never_optimises_when_disabled(tmp_path: Path) -> None:
    # Given the same writes that start an optimisation at a threshold of 100
    def written(optimize_every: int | None) -> EmbeddedIndex:
        idx = EmbeddedIndex(str(tmp_path / f"vectors-{optimize_every}"), optimize_every=optimize_every)
        idx.ensure_collection(DIMS)
        for i in range(3):
            idx.upsert("acct-a", [point(vec(0.1 * j, 1.0 + i)) for j in range(100)])
        return idx

    enabled, disabled = written(100), written(None)
    # Then only the index with a threshold optimised
    assert enabled._optimizer is not None and enabled.wait_optimized(timeout=60)
    assert disabled._optimizer is None
    enabled.close()
    disabled.close()
