"""Round trips to Postgres, counted from libpq's protocol trace (tests and bench/ both count them)."""

from __future__ import annotations

import tempfile
from typing import Any

import psycopg


def count_round_trips(db: Any, action: Any) -> tuple[int, list[str]]:
    """Run ``action()`` and count the times the client waited on Postgres, from libpq's protocol trace of the
    connection of ``db``'s pool (use a pool of one so the action runs on it). A wait is a simple ``Query``, or a
    ``Flush``/``Sync`` of the extended protocol (a ``Sync`` directly followed by a ``Flush`` is one wait).
    Returns the count and the statements sent, in order."""
    with tempfile.NamedTemporaryFile("w+", suffix=".pqtrace") as trace:
        with db.pool.connection() as conn:
            conn.pgconn.trace(trace.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
        try:
            action()
        finally:
            with db.pool.connection() as conn:
                conn.pgconn.untrace()
        trace.seek(0)
        sent = [line.split("\t") for line in trace.read().splitlines() if line.startswith("F\t")]
    waits, statements, previous = 0, [], ""
    for fields in sent:
        kind = fields[2] if len(fields) > 2 else ""
        if kind in ("Query", "Sync") or (kind == "Flush" and previous != "Sync"):
            waits += 1
        if kind in ("Query", "Parse"):
            statements.append(fields[3].strip()[:80])
        previous = kind
    return waits, statements
