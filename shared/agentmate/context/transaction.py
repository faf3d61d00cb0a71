"""One tenant transaction for every layer of a serial pack.

Each provider calls other domains' services, and each of those opens its own tenant transaction: a serial pack
ran seven of them (FACTS two), and every transaction costs round trips of its own (BEGIN with the tenant
setting, COMMIT): 10 of the pack's 31. The providers receive a ``SharedTransaction`` as their
``TenantTransactions`` (core/db.py): each ``tenant()`` they open becomes a savepoint of one outer tenant
transaction in pipeline mode, so SAVEPOINT and RELEASE travel with the next statement and the pack pays for
BEGIN and COMMIT once. A layer whose statements fail still rolls back to its own savepoint and comes back as a
note; the other layers commit.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from uuid import UUID

from agentmate.core.db import Conn, savepoint, translated_errors


class SharedTransaction:
    """``TenantTransactions`` whose transactions are savepoints of ``conn``'s open tenant transaction (pipeline
    mode) for ``account_id``: the one account, and no snapshot (a savepoint cannot change the isolation)."""

    def __init__(self, conn: Conn, account_id: UUID) -> None:
        self._conn = conn
        self._account = str(account_id)
        self._names = itertools.count(1)

    @contextmanager
    def tenant(
        self, account_id: UUID | str, *, snapshot: bool = False, pipeline: bool = False
    ) -> Iterator[Conn]:
        """A savepoint of the pack's transaction; ``pipeline`` is moot (the pack's transaction is pipelined)."""
        if str(account_id) != self._account:
            raise RuntimeError("a context pack reads one account only")
        if snapshot:
            raise RuntimeError("a snapshot transaction cannot be nested in the pack's transaction")
        with translated_errors(), savepoint(self._conn, f"context_layer_{next(self._names)}"):
            yield self._conn
