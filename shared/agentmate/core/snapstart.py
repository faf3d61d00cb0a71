"""Lambda SnapStart runtime hooks: one registry of our own, handed to the Lambda runtime when it is there.

A SnapStart function is initialised once, when a version is published; Lambda then snapshots the process and
restores that snapshot in every new execution environment, possibly many at once. What init leaves in memory
is therefore shared by every restored copy, and whatever was open at snapshot time (sockets, the database pool's
connections and threads) is stale after a restore. The modules that own such state register two kinds of hook:

- ``before_snapshot``: close and forget what must not be captured (the database pools, the secret values, the
  vector index handle and its threads, SDK clients), after warming what is deterministic (a first request through
  the app that needs no database, ``api.lambda_handler``).
- ``after_restore``: make fresh what every copy must have its own of (the ``random`` module's state, reseeded
  from the OS; the secret cache starts empty, so each secret is fetched again on first use and then refreshed
  with its TTL); pools and clients reopen lazily on first use.

Lambda's own ``snapshot_restore_py`` exists only inside the managed runtime, so it is imported guardedly by
``install()``, which registers this registry's two runners with it once. Tests and benchmarks call
``run_before_snapshot()`` and ``run_after_restore()`` directly: they are what Lambda calls. Before the snapshot,
the warm-ups (``warm_up``) run first, in order of registration, then the closers in reverse order of registration
(Lambda's rule), so whatever a warm-up opened is closed before the snapshot; after a restore the hooks run in
order of registration.

A hook that fails is logged and the others still run: a restore must not fail on an optional part, and every
resource a hook forgets is reopened lazily anyway. This module imports nothing of ours (core modules register
into it at import), so it sits below every module that needs it.
"""

from __future__ import annotations

import logging
import random
import sys
from collections.abc import Callable
from typing import TypeVar

Hook = Callable[[], None]
F = TypeVar("F", bound=Hook)

_log = logging.getLogger(__name__)
_warm: list[Hook] = []
_before: list[Hook] = []
_after: list[Hook] = []
_installed: list[str] = []  # "lambda" once the runners are registered with the runtime's library


def warm_up(hook: F) -> F:
    """Register ``hook`` to warm what is deterministic before the snapshot; warm-ups run before every closer."""
    if hook not in _warm:
        _warm.append(hook)
    return hook


def before_snapshot(hook: F) -> F:
    """Register ``hook`` to run before the snapshot (a decorator; registering the same hook twice is a no-op)."""
    if hook not in _before:
        _before.append(hook)
    return hook


def after_restore(hook: F) -> F:
    """Register ``hook`` to run after a restore (a decorator; registering the same hook twice is a no-op)."""
    if hook not in _after:
        _after.append(hook)
    return hook


def before_snapshot_hooks() -> list[Hook]:
    """The before-snapshot hooks in the order they run: the warm-ups, then the closers in reverse registration."""
    return [*_warm, *reversed(_before)]


def after_restore_hooks() -> list[Hook]:
    """The after-restore hooks in the order they run (registration)."""
    return list(_after)


def _run(hooks: list[Hook], phase: str) -> list[str]:
    failed = []
    for hook in hooks:
        try:
            hook()
        except Exception:
            name = getattr(hook, "__qualname__", repr(hook))
            _log.exception("SnapStart %s hook %s failed; continuing", phase, name)
            failed.append(name)
    return failed


def run_before_snapshot() -> list[str]:
    """Run every before-snapshot hook (what Lambda calls); returns the names of those that raised."""
    return _run(before_snapshot_hooks(), "before-snapshot")


def run_after_restore() -> list[str]:
    """Run every after-restore hook (what Lambda calls); returns the names of those that raised."""
    return _run(after_restore_hooks(), "after-restore")


def install() -> bool:
    """Hand the two runners to Lambda's ``snapshot_restore_py`` once; False outside the Lambda runtime (the
    library is absent) — nothing else changes there. Called by every function's module at import."""
    if _installed:
        return True
    try:
        import snapshot_restore_py  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return False
    snapshot_restore_py.register_before_snapshot(run_before_snapshot)
    snapshot_restore_py.register_after_restore(run_after_restore)
    _installed.append("lambda")
    return True


@after_restore
def reseed_random() -> None:
    """Every restored copy starts from the same ``random`` state; reseed it (and numpy's legacy global state,
    when something imported numpy) from the OS. ``secrets``, ``uuid.uuid4`` and ``os.urandom`` read the kernel on
    every call and need nothing."""
    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
