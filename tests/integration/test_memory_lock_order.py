"""A search counting its hits and a scope forget lock the same memory rows: both must take them in id order, or
Postgres kills one as a deadlock (bench/soak.py found it as a 500 on the forget). The schedule is the soak's
deterministic reproduction: entries lo < hi by id with hi earlier in the heap, a third transaction holding lo, the
forget queued on lo, then the access bump; the holder commits."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any
from uuid import UUID

import psycopg
from psycopg import errors as pg
from psycopg.rows import dict_row

from agentmate.core.dberrors import translate
from agentmate.core.errors import ServiceUnavailable
from agentmate.memory import repository as repo


def _store(client: Any, headers: dict[str, str], n: int) -> None:
    for i in range(n):
        body = {
            "memory_type": "semantic",
            "content": f"lock order fact number {i} {uuid.uuid4().hex}",
            "scope_type": "project",
            "scope_key": "lock-order",
            "evidence": [{"source_type": "chat", "source_id": uuid.uuid4().hex, "excerpt": "said so"}],
        }
        assert client.post("/api/memory/entries", json=body, headers=headers).status_code == 201


def _app_url(owner_url: str) -> str:
    host_db = owner_url.split("@", 1)[1]
    return f"postgresql://agentmate_app@{host_db}"


def test_a_search_bump_and_a_scope_forget_never_deadlock(client, account, owner_url):
    # Given entries of one scope, two of them with the higher id earlier in the heap
    _store(client, account.headers(), 8)
    owner = psycopg.connect(owner_url, autocommit=True)
    heap = [
        r[0]
        for r in owner.execute(
            "SELECT id FROM memory_entries WHERE account_id = %s ORDER BY ctid", (account.account_id,)
        )
    ]
    hi, lo = next((a, b) for i, a in enumerate(heap) for b in heap[i + 1 :] if a > b)

    def connect() -> Any:
        conn = psycopg.connect(
            _app_url(owner_url), autocommit=True, row_factory=dict_row, prepare_threshold=0
        )
        conn.execute("SELECT set_config('app.account_id', %s, false)", (account.account_id,))
        return conn

    def wait_blocked(conn: Any) -> None:
        for _ in range(400):  # a bound on a hung schedule, not a measurement
            row = owner.execute(
                "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (conn.info.backend_pid,)
            ).fetchone()
            if row and row[0] == "Lock":
                return
            time.sleep(0.025)
        raise AssertionError("the session never blocked")

    holder, forgetter, searcher = connect(), connect(), connect()
    outcome: dict[str, str] = {}

    def attempt(name: str, conn: Any, work: Any) -> None:
        try:
            with conn.transaction():
                work(conn)
            outcome[name] = "ok"
        except psycopg.Error as exc:
            outcome[name] = type(exc).__name__

    account_id = UUID(account.account_id)
    # When a third transaction holds lo, the forget queues on lo, then the search bumps hi and lo
    holder.execute("BEGIN")
    holder.execute("SELECT id FROM memory_entries WHERE id = %s FOR UPDATE", (lo,))
    forget = threading.Thread(
        target=attempt,
        args=(
            "forget",
            forgetter,
            lambda c: repo.entries_in_scope(
                c, account_id=account_id, scope_type="project", scope_key="lock-order"
            ),
        ),
    )
    forget.start()
    wait_blocked(forgetter)
    search = threading.Thread(
        target=attempt,
        args=(
            "search",
            searcher,
            lambda c: repo.bump_access_with_evidence(c, account_id=account_id, ids=[hi, lo]),
        ),
    )
    search.start()
    wait_blocked(searcher)
    holder.execute("COMMIT")
    forget.join(30)
    search.join(30)
    # Then both finish: neither is killed as a deadlock
    assert outcome == {"forget": "ok", "search": "ok"}, outcome
    for conn in (holder, forgetter, searcher, owner):
        conn.close()


def test_a_deadlock_or_serialization_failure_is_a_503_to_retry_never_a_500():
    for error in (pg.DeadlockDetected("deadlock detected"), pg.SerializationFailure("could not serialize")):
        translated = translate(error)
        assert isinstance(translated, ServiceUnavailable) and translated.retry_after == 1
        assert "retry" in translated.detail
