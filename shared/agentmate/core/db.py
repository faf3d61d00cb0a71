"""Postgres access: one pool per execution environment, tenant-scoped transactions.

Services receive a ``TenantTransactions`` (only ``tenant()``), not the ``Database``: what they open may be a
transaction of its own (``Database``) or a savepoint of a transaction someone else holds open (the context
pack's ``context.transaction.SharedTransaction``); either way it commits or rolls back as one unit.

Connections are in autocommit mode; transactions are explicit. Every tenant transaction sets
``app.account_id`` with ``set_config(..., is_local => true)`` (transaction-local, like ``SET LOCAL``);
row-level security policies read it, so a query that forgets its
``account_id`` filter still cannot see another tenant. Server-side prepared statements are disabled
(``prepare_threshold=None``) so the pool is safe behind RDS Proxy / PgBouncer in transaction mode.

Outages (``docs/agent-integration.md`` §3.10): no request waits for a connection longer than the connect budget
(``DB_CONNECT_TIMEOUT_S``); an unreachable server is a ``ServiceUnavailable`` (503 + ``Retry-After``). The pool
heals by itself: it reconnects with a backoff capped at a few budgets, and once one connection is found dead
every pooled connection older than that failure is pinged before it is handed out, so a restart costs the
requests in flight, not one failure per pooled connection.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Generic, Protocol, TypeVar
from uuid import UUID

import psycopg
from psycopg.pq import TransactionStatus
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from agentmate.core import snapstart
from agentmate.core.dberrors import ParamsCursor, translate, unavailable

Conn = psycopg.Connection[dict[str, Any]]
T = TypeVar("T")
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
        self._failed_at = 0.0  # monotonic time of the last connection found unreachable

    @property
    def max_size(self) -> int:
        return self._max_size

    def _configure(self, conn: Conn) -> None:
        conn.prepare_threshold = None
        conn.cursor_factory = ParamsCursor

    def _check(self, conn: Conn) -> None:
        """Ping only connections idle for a while (e.g. across a Lambda freeze): a ping per checkout was
        a measurable share of warm latency, and a recently used connection is almost surely alive, unless it was
        last used before another connection was found dead (a restart ends every session at once)."""
        last_used = self._last_used.get(conn, 0.0)
        if time.monotonic() - last_used > _PING_AFTER_IDLE_S or last_used <= self._failed_at:
            ConnectionPool.check_connection(conn)

    @contextmanager
    def _connection(self) -> Iterator[Conn]:
        """A pooled connection, stamped when it goes back (``_check``). Stamped here rather than by the pool's
        ``reset`` callback: with one, the pool hands every returned connection to its worker thread, and the next
        checkout waits for that thread (with one connection, as in Lambda, every request's second checkout did)."""
        with self.pool.connection() as conn:
            try:
                yield conn
            finally:
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
                        kwargs={
                            "row_factory": dict_row,
                            "autocommit": True,
                            "connect_timeout": max(2, math.ceil(self._connect_timeout_s)),
                        },
                        configure=self._configure,
                        check=self._check,
                        timeout=self._connect_timeout_s,
                        # A reconnection attempt backs off (1 s, 2 s, 4 s, …) and gives up after this; the next
                        # request then starts a new one at once: recovery lags a restart by a few budgets at most.
                        reconnect_timeout=max(self._connect_timeout_s * 4, 4.0),
                        name="agentmate",
                    )
                    # Not waiting: a server down at first use is a 503 for this request, not a pool that failed
                    # to open (and its threads left running) on every request until the server is back.
                    pool.open(wait=False)
                    self._pool = pool
        return self._pool

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """``translated_errors``, noting when the server was found unreachable (``_check``)."""
        with translated_errors():
            try:
                yield
            except psycopg.OperationalError as exc:
                if unavailable(exc):
                    self._failed_at = time.monotonic()
                raise

    @contextmanager
    def transaction(self) -> Iterator[Conn]:
        """A transaction with no tenant set: RLS hides every tenant row in it."""
        with self._errors(), self._connection() as conn, conn.transaction():
            yield conn

    @contextmanager
    def single_statement(self) -> Iterator[Conn]:
        """An autocommit connection for one read that needs no transaction (one round trip, no BEGIN)."""
        with self._errors(), self._connection() as conn:
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
        with self._errors(), self._connection() as conn:
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
        """Close the pool (its connections and threads); the next use opens a new one."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()


class Sent(Generic[T]):
    """A statement already sent whose result is read later (``result()``). In pipeline mode
    (``tenant(pipeline=True)``) statements sent one after another travel together and the first ``result()``
    waits for all of them: one round trip instead of one each. Outside pipeline mode the statement has run."""

    __slots__ = ("_cursor", "_read")

    def __init__(self, cursor: psycopg.Cursor[Any] | None, read: Callable[[psycopg.Cursor[Any]], T]) -> None:
        self._cursor = cursor
        self._read = read

    @classmethod
    def done(cls, value: T) -> Sent[T]:
        """A result known without a statement."""
        return cls(None, lambda _cursor: value)

    def result(self) -> T:
        return self._read(self._cursor)  # type: ignore[arg-type]  # None only for ``done``, whose reader ignores it


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


@snapstart.before_snapshot
def close_databases() -> None:
    """Close every pool and forget every Database (their URLs may hold a secret's password): a snapshot holds no
    connection, no pool thread and no credential; after a restore ``get_database()`` builds one lazily."""
    with _db_lock:
        databases = list(_databases.values())
        _databases.clear()
    for db in databases:
        db.close()
