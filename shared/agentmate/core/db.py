"""Postgres access: one pool per execution environment, tenant-scoped transactions.

Services receive a ``TenantTransactions`` (only ``tenant()``), not the ``Database``: what they open may be a
transaction of its own (``Database``) or a savepoint of a transaction someone else holds open (the context
pack's ``context.transaction.SharedTransaction``); either way it commits or rolls back as one unit.

Connections are in autocommit mode; transactions are explicit. Every tenant transaction sets
``app.account_id`` with ``set_config(..., is_local => true)`` (transaction-local, like ``SET LOCAL``);
row-level security policies read it, so a query that forgets its
``account_id`` filter still cannot see another tenant. Server-side prepared statements are disabled
(``prepare_threshold=None``) so the pool is safe behind RDS Proxy / PgBouncer in transaction mode.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol
from uuid import UUID

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agentmate.core.dberrors import ParamsCursor, translate

Conn = psycopg.Connection[dict[str, Any]]
_PING_AFTER_IDLE_S = 10.0


class TenantTransactions(Protocol):
    """The unit of work a service receives: a transaction scoped to one account, committed when the block ends
    and rolled back when it raises (driver errors leave it as domain errors, ``translated_errors``). It may be a
    savepoint of an enclosing transaction, so a service must not rely on being the outermost one.
    ``snapshot`` and ``pipeline`` are as in ``Database.tenant``."""

    def tenant(
        self, account_id: UUID | str, *, snapshot: bool = False, pipeline: bool = False
    ) -> AbstractContextManager[Conn]: ...


class Database:
    """Lazily opened connection pool; cheap to construct at import time."""

    def __init__(self, url: str, *, max_size: int = 8, connect_timeout_s: float = 5.0) -> None:
        self._url = url
        self._max_size = max_size
        self._connect_timeout_s = connect_timeout_s
        self._pool: ConnectionPool[Conn] | None = None
        self._lock = threading.Lock()
        self._last_used: weakref.WeakKeyDictionary[Conn, float] = weakref.WeakKeyDictionary()

    @property
    def max_size(self) -> int:
        return self._max_size

    def _configure(self, conn: Conn) -> None:
        conn.prepare_threshold = None
        conn.cursor_factory = ParamsCursor

    def _check(self, conn: Conn) -> None:
        """Ping only connections idle for a while (e.g. across a Lambda freeze): a ping per checkout was
        a measurable share of warm latency, and a recently used connection is almost surely alive."""
        if time.monotonic() - self._last_used.get(conn, 0.0) > _PING_AFTER_IDLE_S:
            ConnectionPool.check_connection(conn)

    def _reset(self, conn: Conn) -> None:
        self._last_used[conn] = time.monotonic()

    @property
    def pool(self) -> ConnectionPool[Conn]:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    pool: ConnectionPool[Conn] = ConnectionPool(
                        self._url,
                        min_size=1,
                        max_size=self._max_size,
                        open=False,
                        kwargs={"row_factory": dict_row, "autocommit": True},
                        configure=self._configure,
                        check=self._check,
                        reset=self._reset,
                        timeout=self._connect_timeout_s * 2,
                        name="agentmate",
                    )
                    pool.open(wait=True, timeout=self._connect_timeout_s * 2)
                    self._pool = pool
        return self._pool

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """A transaction with no tenant set: RLS hides every tenant row in it."""
        with translated_errors(), self.pool.connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def single_statement(self) -> Iterator[Conn]:
        """An autocommit connection for one read that needs no transaction (one round trip, no BEGIN)."""
        with translated_errors(), self.pool.connection() as conn:
            yield conn

    @contextmanager
    def tenant(
        self, account_id: UUID | str, *, snapshot: bool = False, pipeline: bool = False
    ) -> Iterator[Conn]:
        """A transaction scoped to one account (commit on success, rollback on error). ``snapshot=True`` makes
        it a read-only repeatable-read transaction: every read sees one snapshot (e.g. a quality run's inputs).

        BEGIN and the tenant setting travel in one round trip: the account id is a validated UUID, so it can
        be inlined safely, and warm requests are dominated by round trips (bench/warm_invoke.py).

        ``pipeline=True`` runs the transaction in psycopg's pipeline mode: statements are sent as they are
        executed and only a fetch waits, so BEGIN and the tenant setting travel with the first query, a statement
        whose result is not read (a SAVEPOINT, a RELEASE) with the next one, and COMMIT costs one round trip.
        The caller's code must suit pipeline mode: one statement per ``execute``, no COPY, and a failed
        statement skips the following ones until a sync (``savepoint`` handles that).
        """
        account = str(account_id if isinstance(account_id, UUID) else UUID(str(account_id)))
        begin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" if snapshot else "BEGIN"
        setting = f"SELECT set_config('app.account_id', '{account}', true)"
        with translated_errors(), self.pool.connection() as conn:
            try:
                if pipeline:
                    with conn.pipeline():
                        conn.execute(begin)
                        conn.execute(setting)
                        yield conn
                        conn.execute("COMMIT")
                else:
                    conn.execute(f"{begin}; {setting}")
                    yield conn
                    conn.execute("COMMIT")
            except BaseException:
                if not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")
                raise

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


@contextmanager
def savepoint(conn: Conn, name: str) -> Iterator[None]:
    """Like ``conn.transaction()`` inside a transaction (an error rolls back to the savepoint and propagates),
    but costs no round trip of its own in pipeline mode: SAVEPOINT and RELEASE are not waited for (psycopg's
    nested transaction syncs the pipeline on entry and exit). ``name`` must be a plain identifier."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        if not conn.closed:
            with conn.pipeline():  # after an error the server skips every statement until a sync: this syncs
                pass
            conn.execute(f"ROLLBACK TO SAVEPOINT {name}")
        raise
    conn.execute(f"RELEASE SAVEPOINT {name}")


@contextmanager
def translated_errors() -> Iterator[None]:
    """Driver errors leave a transaction as domain errors (core.dberrors), after the rollback."""
    try:
        yield
    except psycopg.Error as exc:
        domain = translate(exc)
        if domain is None:
            raise
        raise domain from None


_databases: dict[str, Database] = {}
_db_lock = threading.Lock()


def get_database() -> Database:
    """The execution environment's Database, built from settings on first use."""
    from agentmate.core.settings import get_database_settings

    settings = get_database_settings()
    url = settings.resolved_database_url()
    with _db_lock:
        db = _databases.get(url)
        if db is None:
            db = Database(
                url, max_size=settings.db_pool_max_size, connect_timeout_s=settings.db_connect_timeout_s
            )
            _databases[url] = db
        return db
