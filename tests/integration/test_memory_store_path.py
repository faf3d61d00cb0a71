"""The store path of a durable memory (issue 26 §4): the entry, its evidence, its retrieval projection (lexical row,
vector) and, when indexing fails, the account's heal job are written in one transaction, whose round trips are
counted here; the embedding runs beside the database work and is waited for at most ``vector_leg_timeout_s``."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from agentmate.core.db import Database
from agentmate.core.dberrors import NUL_MESSAGE
from agentmate.core.errors import Conflict, ValidationFailed
from agentmate.core.limits.settings import get_limit_settings
from agentmate.core.principal import Principal
from agentmate.memory.schemas import EntryCreate
from agentmate.memory.service.entries import create_entry
from agentmate.memory.service.projection import HEAL_KIND
from agentmate.retrieval.embedders import OpenAIEmbedder
from tests.fakes.embeddings_provider import SlowEmbeddings
from tests.pgtrace import count_round_trips

ENTRIES = "/api/memory/entries"


def _body(content: str, **over: Any) -> dict[str, Any]:
    return {
        "memory_type": "semantic",
        "content": content,
        "scope_type": "project",
        "scope_key": "store-path",
        "evidence": [{"source_type": "url", "source_id": f"https://wiki/{content}", "excerpt": "x"}],
        **over,
    }


def _writers(owner_url: str, entry_id: str) -> dict[str, set[str]]:
    """The transaction ids that last wrote the entry, its evidence, its projection and the account's heal jobs."""
    with psycopg.connect(owner_url) as conn:

        def xids(sql: str) -> set[str]:
            return {r[0] for r in conn.execute(sql, {"id": entry_id}).fetchall()}

        return {
            "entry": xids("SELECT xmin::text FROM memory_entries WHERE id = %(id)s"),
            "evidence": xids("SELECT xmin::text FROM memory_evidence WHERE memory_id = %(id)s"),
            "document": xids(
                "SELECT xmin::text FROM retrieval_documents WHERE source_type = 'memory_entry' AND source_id = %(id)s"
            ),
            "heal job": xids(
                f"""SELECT j.xmin::text FROM jobs j JOIN memory_entries e ON e.account_id = j.account_id
                    WHERE e.id = %(id)s AND j.kind = '{HEAL_KIND}'"""
            ),
        }


# A grace as long as the deadline: the store's transaction waits for its embedding (the fast path), whatever the
# machine's load or the offline model's first load; the slow path is pinned with a stalled embedder below.
PATIENT = {"embed_grace_s": 5.0, "vector_leg_timeout_s": 5.0}


def test_a_new_memory_is_stored_and_indexed_in_one_transaction(
    client, account, owner_url, make_retrieval, serve_retrieval
):
    serve_retrieval(make_retrieval(**PATIENT))
    # When a memory is stored
    r = client.post(ENTRIES, json=_body("one transaction"), headers=account.headers("memory:rw"))
    # Then it is indexed, and its entry, evidence and projection were all written by one transaction
    assert r.status_code == 201, r.text
    assert r.json()["indexing"]["status"] == "indexed"
    writers = _writers(owner_url, r.json()["id"])
    assert writers["entry"] == writers["evidence"] == writers["document"]
    assert len(writers["entry"]) == 1
    assert writers["heal job"] == set()


@pytest.fixture
def slow_provider() -> Iterator[SlowEmbeddings]:
    with SlowEmbeddings(delay_s=0) as server:
        yield server


@pytest.fixture
def impatient(slow_provider, make_retrieval, serve_retrieval) -> SlowEmbeddings:
    """The app's retrieval over the loopback provider, waiting at most 50 ms for a store's embedding."""
    embedder = OpenAIEmbedder(
        slow_provider.base_url, "k", "fake-model", dimensions=8, timeout_s=30, max_retries=0
    )
    serve_retrieval(make_retrieval(embedder=embedder, vector_leg_timeout_s=0.05))
    return slow_provider


def test_an_embedding_past_its_deadline_leaves_the_memory_stored_failed_and_its_heal_queued_in_that_transaction(
    client, account, owner_url, impatient
):
    # Given an embedding endpoint that answers long after the store's deadline
    impatient.delay_s = 3.0
    # When a memory is stored
    r = client.post(ENTRIES, json=_body("slow embedder"), headers=account.headers("memory:rw"))
    # Then it is stored, and its indexing says why it failed
    assert r.status_code == 201, r.text
    indexing = r.json()["indexing"]
    assert indexing["status"] == "failed"
    assert indexing["error"] == "embedding took longer than 0.05 s"
    # And the heal job was queued by the same transaction that stored the entry and its failed projection
    writers = _writers(owner_url, r.json()["id"])
    assert writers["entry"] == writers["evidence"] == writers["document"] == writers["heal job"]
    assert len(writers["entry"]) == 1


def test_a_replayed_store_writes_no_second_projection_and_reports_the_first(client, account, owner_url):
    h = {**account.headers("memory:rw"), "Idempotency-Key": f"k-{uuid.uuid4()}"}
    first = client.post(ENTRIES, json=_body("replayed"), headers=h)
    again = client.post(ENTRIES, json=_body("replayed"), headers=h)
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["indexing"] == first.json()["indexing"]
    with psycopg.connect(owner_url) as conn:
        (documents,) = conn.execute(
            "SELECT count(*) FROM retrieval_documents WHERE source_id = %s", (first.json()["id"],)
        ).fetchone()  # type: ignore[misc]
    assert documents == 1


def test_a_store_in_a_known_scope_costs_two_round_trips_and_one_commit(account, make_retrieval):
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    retrieval = make_retrieval(**PATIENT)
    principal = Principal(
        account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt"
    )
    try:
        # Given a scope that already holds a memory (the first store in a scope also looks for near twins)
        create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("the first")))
        # When another memory is stored there
        trips, statements = count_round_trips(
            db,
            lambda: create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("the second"))),
        )
    finally:
        db.close()
    # Then it costs two round trips: BEGIN with the quota read, the entry and its evidence; then its projection,
    # inserted already indexed, with COMMIT (12 in three transactions before issue 26, then 5)
    assert sum('"COMMIT"' in s for s in statements) == 1, statements
    assert sum('"BEGIN' in s for s in statements) == 1, statements
    assert trips == 2, statements


def _direct(account: Any) -> Principal:
    return Principal(account_id=uuid.UUID(account.account_id), user_id=uuid.UUID(account.user_id), via="jwt")


@pytest.mark.parametrize(
    "over, field",
    [
        (
            {"evidence": [{"source_type": "url", "source_id": "https://wiki/nul", "excerpt": "a\x00b"}]},
            "items",
        ),
        ({"metadata": {"k": "a\x00b"}}, "metadata"),
    ],
)
def test_a_statement_failing_inside_the_store_pipeline_keeps_its_status_and_leaves_the_connection_usable(
    account, make_retrieval, over, field
):
    # Given a pool of one connection (as in Lambda), so the next store reuses the one the failed store returned
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    retrieval = make_retrieval()
    principal = _direct(account)
    try:
        # When Postgres refuses a value in the middle of the pipelined store
        with pytest.raises(ValidationFailed) as refused:
            create_entry(db, retrieval, principal, EntryCreate.model_validate(_body(f"nul {field}", **over)))
        # Then it is the client's 400 (naming the field when the statement shows it), not a 503 for a pipeline
        # the error aborted
        assert NUL_MESSAGE in str(refused.value.errors) + refused.value.detail
        # And nothing of it was stored, and the connection it returned serves the next store
        created = create_entry(db, retrieval, principal, EntryCreate.model_validate(_body(f"after {field}")))
        assert created.value.indexing is not None and created.value.indexing.status == "indexed"
    finally:
        db.close()


def test_a_quota_refusal_inside_the_store_pipeline_is_a_409_and_the_next_store_succeeds(
    account, owner_url, make_retrieval, monkeypatch
):
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    retrieval = make_retrieval()
    principal = _direct(account)
    try:
        create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("quota one")))
        monkeypatch.setenv("LIMIT_MAX_MEMORIES", "1")
        get_limit_settings.cache_clear()
        with pytest.raises(Conflict, match="max_memories"):
            create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("quota two")))
        # the refused entry and its evidence were sent before the quota was read: rolled back, none of it stored
        with psycopg.connect(owner_url) as conn:
            kept = conn.execute(
                """SELECT (SELECT count(*) FROM memory_entries WHERE content = 'quota two'),
                          (SELECT count(*) FROM memory_evidence WHERE source_id = 'https://wiki/quota two')"""
            ).fetchone()
        assert kept == (0, 0)
        # a duplicate of the stored one adds nothing: never refused, deduplicated in the same pipeline
        again = create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("quota one")))
        assert again.value.deduplicated and again.value.indexing is not None
        assert again.value.indexing.status == "indexed"
    finally:
        monkeypatch.delenv("LIMIT_MAX_MEMORIES")
        get_limit_settings.cache_clear()
        db.close()


# -- a slow embedder never holds the pool's connection past the grace (issue 26 §4) ------------------------------


def _projection(owner_url: str, entry_id: str) -> str | None:
    with psycopg.connect(owner_url) as conn:
        row = conn.execute(
            "SELECT status FROM retrieval_documents WHERE source_type = 'memory_entry' AND source_id = %s",
            (entry_id,),
        ).fetchone()
    return None if row is None else str(row[0])


def _committed_entry(owner_url: str, content: str, store: threading.Thread) -> str:
    """The id of the entry holding ``content`` once a transaction has committed it (waits while the store runs)."""
    while True:
        with psycopg.connect(owner_url) as conn:
            row = conn.execute(
                "SELECT id::text FROM memory_entries WHERE content = %s", (content,)
            ).fetchone()
        if row is not None or not store.is_alive():
            assert row is not None, "the store ended without committing its entry"
            return str(row[0])
        store.join(0.01)


@pytest.fixture
def stalled(slow_provider) -> Iterator[SlowEmbeddings]:
    """The loopback embedder, answering no request until ``gate`` is set."""
    slow_provider.gate.clear()
    yield slow_provider
    slow_provider.gate.set()


@pytest.fixture
def one_connection() -> Iterator[Database]:
    """A pool of one connection (as in Lambda; a long-lived server's 8 behave alike under 8 stalled stores)."""
    db = Database(os.environ["DATABASE_URL"], max_size=1)
    yield db
    db.close()


def _loopback_retrieval(
    make_retrieval: Any, provider: SlowEmbeddings, timeout_s: float, connection: str = "new"
) -> Any:
    """Retrieval over the loopback provider. With ``connection="kept"`` its embedder already holds a kept-alive
    connection, so a store sends its request on its own thread (``OpenAIEmbedder.start``); with ``"new"`` it has
    none, so the store embeds on a worker thread."""
    embedder = OpenAIEmbedder(provider.base_url, "k", "fake-model", dimensions=8, timeout_s=30, max_retries=0)
    if connection == "kept":
        provider.gate.set()
        embedder.embed(["warm-up"])
        provider.gate.clear()
        provider.arrived.clear()
    return make_retrieval(embedder=embedder, vector_leg_timeout_s=timeout_s, embed_grace_s=0.01)


def _used_worker_threads(retrieval: Any) -> bool:
    return retrieval._pool is not None


def _store_in_thread(
    db: Database, retrieval: Any, principal: Principal, content: str
) -> tuple[threading.Thread, list]:
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(create_entry(db, retrieval, principal, EntryCreate.model_validate(_body(content))))
        except BaseException as exc:  # pragma: no cover - reported by the test's assertion
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.mark.parametrize("connection", ["new", "kept"])
def test_a_store_waiting_for_a_stalled_embedder_releases_the_pools_connection_and_ends_indexed(
    account, owner_url, make_retrieval, stalled, one_connection, connection
):
    # Given a pool of one connection and an embedder that answers nothing until released
    db, principal = one_connection, _direct(account)
    retrieval = _loopback_retrieval(make_retrieval, stalled, timeout_s=10, connection=connection)
    # When a memory is stored
    store, out = _store_in_thread(db, retrieval, principal, f"stalled then answered ({connection})")
    assert stalled.arrived.wait(30)
    # Then its entry is committed with the projection pending while the embedder still has not answered
    entry_id = _committed_entry(owner_url, f"stalled then answered ({connection})", store)
    assert _projection(owner_url, entry_id) == "pending"
    # And another request is served on the pool's one connection while the store still waits
    with db.tenant(principal.account_id) as conn:
        assert conn.execute("SELECT count(*) AS n FROM memory_entries").fetchone() == {"n": 1}
    assert store.is_alive()
    # When the embedder answers
    stalled.gate.set()
    store.join(30)
    # Then the store answers the entry indexed, its projection marked by a second, short transaction
    (created,) = out
    assert not isinstance(created, BaseException), created
    assert created.value.indexing.status == "indexed"
    assert _projection(owner_url, entry_id) == "indexed"
    writers = _writers(owner_url, entry_id)
    assert writers["entry"] == writers["evidence"]
    assert writers["document"] != writers["entry"]
    assert writers["heal job"] == set()
    # And the embedding waited on a worker thread only when no connection was kept alive to send it over
    assert _used_worker_threads(retrieval) == (connection == "new")


@pytest.mark.parametrize("connection", ["new", "kept"])
def test_a_store_whose_embedder_never_answers_ends_failed_with_its_heal_queued_after_releasing_the_connection(
    account, owner_url, make_retrieval, stalled, one_connection, connection
):
    # Given a pool of one connection and an embedder that never answers within the store's deadline
    retrieval = _loopback_retrieval(make_retrieval, stalled, timeout_s=0.2, connection=connection)
    # When a memory is stored
    body = EntryCreate.model_validate(_body(f"never answered ({connection})"))
    created = create_entry(one_connection, retrieval, _direct(account), body)
    # Then it is stored, its indexing failed for the deadline
    assert created.value.indexing is not None
    assert created.value.indexing.status == "failed"
    assert created.value.indexing.error == "embedding took longer than 0.2 s"
    entry_id = str(created.value.id)
    assert _projection(owner_url, entry_id) == "failed"
    # And the entry was committed first; the failure and the heal job by the short second transaction
    writers = _writers(owner_url, entry_id)
    assert writers["entry"] == writers["evidence"]
    assert writers["document"] == writers["heal job"]
    assert writers["document"] != writers["entry"]
    assert len(writers["heal job"]) == 1
    assert _used_worker_threads(retrieval) == (connection == "new")


def test_a_store_past_the_grace_costs_three_round_trips_in_two_short_transactions(
    account, owner_url, make_retrieval, stalled, one_connection
):
    db = one_connection
    retrieval = _loopback_retrieval(make_retrieval, stalled, timeout_s=10)
    principal = _direct(account)

    def store() -> None:
        thread, out = _store_in_thread(db, retrieval, principal, "past the grace")
        _committed_entry(owner_url, "past the grace", thread)
        stalled.gate.set()
        thread.join(30)
        assert out and not isinstance(out[0], BaseException), out

    # Given a scope that already holds a memory (as in the fast path's count)
    stalled.gate.set()
    create_entry(db, retrieval, principal, EntryCreate.model_validate(_body("the first")))
    stalled.gate.clear()
    # When a store's embedding misses the grace
    trips, statements = count_round_trips(db, store)
    # Then it costs three round trips in two transactions: the fast path's two (its projection inserted pending
    # with COMMIT), then BEGIN, the projection marked indexed and COMMIT in one pipelined trip
    assert sum('"COMMIT"' in s for s in statements) == 2, statements
    assert trips == 3, statements
