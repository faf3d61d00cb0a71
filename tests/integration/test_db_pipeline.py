"""Tenant transactions in pipeline mode (``Database.tenant(pipeline=True)``, used by retrieval search) against real
Postgres: a statement that fails on the server inside ``savepoint`` rolls back to it and the transaction goes on
(a failed search leg degrades instead of aborting the search), while an error outside one rolls it all back."""

from __future__ import annotations

from uuid import UUID

import psycopg
import pytest

from agentmate.core.db import get_database, savepoint
from agentmate.core.errors import DomainError


def _divide(conn: psycopg.Connection, by: int) -> int:
    row = conn.execute("SELECT 10 / %s::int AS q", [by]).fetchone()
    assert row is not None
    return int(row["q"])


def test_a_server_error_inside_a_savepoint_rolls_back_to_it_and_the_transaction_goes_on(account):
    db, acc = get_database(), UUID(account.account_id)
    with db.tenant(acc, pipeline=True) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero), savepoint(conn, "leg_one"):
            _divide(conn, 0)
        with savepoint(conn, "leg_two"):
            assert _divide(conn, 5) == 2
        # the tenant setting made before the savepoint survived the rollback to it
        row = conn.execute("SELECT current_setting('app.account_id') AS a").fetchone()
        assert row is not None and row["a"] == str(acc)
    with db.single_statement() as conn:
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_two_failing_savepoints_in_a_row_and_then_a_good_read(account):
    db, acc = get_database(), UUID(account.account_id)
    with db.tenant(acc, pipeline=True) as conn:
        for name in ("first", "second"):
            with pytest.raises(psycopg.errors.DivisionByZero), savepoint(conn, name):
                _divide(conn, 0)
        assert _divide(conn, 2) == 5


def test_an_error_outside_a_savepoint_rolls_the_whole_transaction_back_and_frees_the_connection(account):
    db, acc = get_database(), UUID(account.account_id)
    with pytest.raises((psycopg.errors.DivisionByZero, DomainError)), db.tenant(acc, pipeline=True) as conn:
        _divide(conn, 0)
    with db.tenant(acc, pipeline=True) as conn:  # the pooled connection is clean again
        assert _divide(conn, 1) == 10


def test_savepoint_outside_pipeline_mode_behaves_the_same(account):
    db, acc = get_database(), UUID(account.account_id)
    with db.tenant(acc) as conn:
        with pytest.raises(psycopg.errors.DivisionByZero), savepoint(conn, "plain"):
            _divide(conn, 0)
        assert _divide(conn, 10) == 1
