"""Postgres stopped (fast shutdown) and started again under mixed writes: requests during the outage answer 503
problem+json with ``Retry-After`` (never a 500), the pool heals without a restart of the app, and every write
that got a 2xx is stored, counted by its idempotency key."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg

from infra import localpg
from tests.conftest import make_account

MAX_ROUNDS = 50  # a bound on retries after the restart, not a timing threshold


def _write(client: Any, headers: dict[str, str], kind: str, key: str) -> Any:
    if kind == "todo":
        return client.post("/api/todos", json={"title": key}, headers={**headers, "Idempotency-Key": key})
    if kind == "note":
        body = {"title": key, "content": "written under a database restart"}
        return client.post("/api/notes", json=body, headers={**headers, "Idempotency-Key": key})
    body = {"event_type": "observation", "idempotency_key": key, "payload": {"text": key}}
    return client.post("/api/memory/events", json=body, headers=headers)


def _stored(port: int) -> set[str]:
    with psycopg.connect(localpg.url(port, "agentmate")) as conn:
        rows = conn.execute(
            "SELECT title FROM todos UNION ALL SELECT title FROM notes"
            " UNION ALL SELECT idempotency_key FROM memory_events"
        ).fetchall()
    return {r[0] for r in rows}


def test_writes_across_a_postgres_restart_answer_503_while_down_and_every_2xx_is_stored(client, own_cluster):
    # Given an account on a cluster of the test's own, and writes of three kinds that succeed
    account = make_account(client)
    headers = account.headers()
    kinds = ["todo", "note", "event"]
    acknowledged: set[str] = set()
    for i in range(6):
        key = f"before-{i}-{uuid.uuid4().hex[:8]}"
        r = _write(client, headers, kinds[i % 3], key)
        assert r.status_code in (200, 201), r.text
        acknowledged.add(key)

    # When Postgres stops (fast shutdown) under the same traffic
    own_cluster.stop()
    refused: list[tuple[str, str]] = []
    for i in range(6):
        key = f"during-{i}-{uuid.uuid4().hex[:8]}"
        r = _write(client, headers, kinds[i % 3], key)
        # Then each write is a 503 problem+json that says when to retry, never a 500
        assert r.status_code == 503, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert int(r.headers["Retry-After"]) >= 1
        assert "database" in r.json()["detail"]
        assert "psycopg" not in r.text and "127.0.0.1" not in r.text
        refused.append((kinds[i % 3], key))

    # When it starts again, the same app's pool heals: retried writes (same keys) and new ones succeed
    own_cluster.start()
    pending = refused + [(kinds[i % 3], f"after-{i}-{uuid.uuid4().hex[:8]}") for i in range(6)]
    statuses: set[int] = set()
    for _ in range(MAX_ROUNDS):
        if not pending:
            break
        kind, key = pending.pop(0)
        r = _write(client, headers, kind, key)
        statuses.add(r.status_code)
        if r.status_code in (200, 201):
            acknowledged.add(key)
        else:
            assert r.status_code == 503, r.text
            pending.append((kind, key))
    assert pending == []

    # Then every acknowledged write is stored exactly as acknowledged, and nothing else is
    assert _stored(own_cluster.port) == acknowledged
    assert statuses <= {200, 201, 503}


def test_an_unreachable_database_reads_the_same_over_mcp_as_over_rest():
    # Given the driver's error for a refused connection and for a server shutting down
    from psycopg import errors as pg

    from agentmate.api.errors import domain_problem
    from agentmate.core.dberrors import translate
    from agentmate.mcp.errors import domain_error_text

    for exc in (psycopg.OperationalError("connection refused"), pg.AdminShutdown("terminating connection")):
        # When it is translated at the transaction boundary
        domain = translate(exc)
        assert domain is not None
        # Then REST answers 503 with Retry-After and MCP's tool error says the same words
        response = domain_problem(domain)
        assert (response.status_code, response.headers["Retry-After"]) == (503, "2")
        assert domain_error_text(domain) == "the database is unavailable for a moment; retry in 2 s" + (
            " with the same idempotency key"
        )
