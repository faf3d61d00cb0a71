"""Fair sharing of one long-lived process between the credentials calling it.

The rate limit (``service.admit``) caps what an account may ask for over a minute; it does not stop a burst of
admitted requests (the default burst is 120) from filling the process's event loop and worker threads at once, and
a quiet neighbour's request then queues behind all of them. The gate runs at most ``LIMIT_CONCURRENT_PER_CREDENTIAL``
requests of one credential at a time in this process; the others wait, parked (no thread, no connection), in
arrival order. A neighbour with its own credential never waits behind them: it shares the CPU with at most that many.

Keyed by the credential as sent (its SHA-256), before authentication: the gate only orders work and grants
nothing, and a request refused later is refused all the same. An account with several keys gets a share per key;
its rate limit stays one. In Lambda an execution environment serves one request at a time, so the gate never waits.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio


class CredentialGate:
    def __init__(self, per_credential: int) -> None:
        self.per_credential = per_credential
        # Only credentials with a request running or waiting have an entry: the table is as big as the work.
        self._slots: dict[str, tuple[anyio.Semaphore, list[int]]] = {}

    @asynccontextmanager
    async def slot(self, credential: str | None) -> AsyncIterator[None]:
        if not credential or self.per_credential <= 0:
            yield
            return
        key = hashlib.sha256(credential.encode()).hexdigest()
        entry = self._slots.get(key)
        if entry is None:
            entry = self._slots[key] = (anyio.Semaphore(self.per_credential), [0])
        semaphore, users = entry
        users[0] += 1
        try:
            async with semaphore:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                self._slots.pop(key, None)

    def tracked(self) -> int:
        """How many credentials have a request running or waiting."""
        return len(self._slots)

    def users(self, credential: str) -> int:
        """The credential's requests running or waiting in this process."""
        entry = self._slots.get(hashlib.sha256(credential.encode()).hexdigest())
        return entry[1][0] if entry else 0
