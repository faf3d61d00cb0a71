"""SnapStart, in-process: a function's module is imported (Lambda's init), serves a request (so its pool is open),
the before-snapshot hooks run — what Lambda runs before it snapshots the process — and must leave no connection
to Postgres, no pool thread and no secret value behind; then the after-restore hooks run and the same handler
serves a real request (API Gateway v2 event through Mangum, real Postgres) as a restored environment would."""

from __future__ import annotations

import importlib
import os
import random
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from apigw import LambdaContext, http_event, parse_response

from agentmate.core import settings, snapstart
from agentmate.core.db import close_databases, get_database

TODOS = "functions.todos.app"


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed between the listing and the read
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def open_connections_to(port: int) -> int:
    """Established TCP connections of this process whose remote end is ``port`` (read from /proc: whatever
    opened them, the pool or anything else)."""
    mine = _socket_inodes()
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            established = fields[3] == "01"
            if established and remote_port == port and fields[9] in mine:
                count += 1
    return count


def _pg_port() -> int:
    port = urlsplit(os.environ["DATABASE_URL"]).port
    assert port is not None
    return port


def _pool_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("agentmate") and t.is_alive()]


def _invoke(handler, method: str, path: str, **kwargs):
    raw = handler(http_event(method, path, **kwargs), LambdaContext())
    return parse_response(raw)


@pytest.fixture
def todos_handler():
    return importlib.import_module(TODOS).handler


def test_the_hooks_leave_nothing_open_at_the_snapshot_and_a_restored_handler_serves_a_real_request(
    account, todos_handler
):
    port = _pg_port()
    headers = account.headers("todos:rw")
    # Given a function that served a request before its snapshot: its pool holds a connection
    r = _invoke(
        todos_handler, "POST", "/api/todos", headers=headers, json_body={"title": "before the snapshot"}
    )
    assert r.status_code == 201, r.body
    assert open_connections_to(port) >= 1
    # When Lambda runs the before-snapshot hooks
    assert snapstart.run_before_snapshot() == []
    # Then no connection to Postgres, no pool thread and no secret value is left to be captured
    assert open_connections_to(port) == 0
    assert _pool_threads() == []
    assert settings._secrets == {}
    # When a copy is restored: the after-restore hooks, then its first request
    state_at_snapshot = random.getstate()
    assert snapstart.run_after_restore() == []
    assert random.getstate() != state_at_snapshot  # every copy draws its own random numbers
    r = _invoke(
        todos_handler, "POST", "/api/todos", headers=headers, json_body={"title": "after the restore"}
    )
    # Then it is served from a fresh pool, against the real database
    assert r.status_code == 201, r.body
    r = _invoke(todos_handler, "GET", "/api/todos", headers=headers)
    assert r.status_code == 200
    assert sorted(t["title"] for t in r.json()["items"]) == ["after the restore", "before the snapshot"]


def test_a_missing_database_hook_is_detected_as_a_pool_left_open_across_the_snapshot(
    account, todos_handler, monkeypatch
):
    # Given the before-snapshot hooks without core.db's (as if a module forgot to register its closer)
    port = _pg_port()
    r = _invoke(todos_handler, "GET", "/api/todos", headers=account.headers("todos:rw"))
    assert r.status_code == 200
    monkeypatch.setattr(snapstart, "_before", [h for h in snapstart._before if h is not close_databases])
    try:
        # When they run
        assert snapstart.run_before_snapshot() == []
        # Then the check above sees the pool's connection still open: it would fail the snapshot test
        assert open_connections_to(port) >= 1
    finally:
        close_databases()
    assert open_connections_to(port) == 0


def test_every_function_module_registers_the_hooks_it_needs():
    # Given every zip function's module imported (as Lambda imports its handler)
    from functions.routes import ROUTE_GROUPS

    for module in [*ROUTE_GROUPS, "functions.compile_worker.app"]:
        if not module.startswith("functions.mcp"):
            importlib.import_module(module)
    names = {h.__qualname__ for h in snapstart.before_snapshot_hooks()}
    # Then the closers of every resource that must not be captured are registered, and the warm-ups (one per
    # app) run before them, whatever the import order: a warm-up that opened something has it closed
    assert {"close_databases", "forget_secrets", "forget_retrieval", "forget_worker"} <= names
    order = [h.__qualname__ for h in snapstart.before_snapshot_hooks()]
    warm_ups = [i for i, name in enumerate(order) if name == "make_handler.<locals>.warm_up"]
    assert len(warm_ups) >= len(ROUTE_GROUPS) - 1  # every zip route group (not the MCP container)
    closers = [order.index(name) for name in ("close_databases", "forget_secrets", "forget_retrieval")]
    assert max(warm_ups) < min(closers)
    assert [h.__qualname__ for h in snapstart.after_restore_hooks()][:2] == [
        "reseed_random",
        "forget_secrets",
    ]


def test_a_failing_hook_is_reported_and_the_others_still_run(monkeypatch):
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("boom")

    def fine() -> None:
        ran.append("fine")

    monkeypatch.setattr(snapstart, "_after", [broken, fine])
    assert snapstart.run_after_restore() == [broken.__qualname__]
    assert ran == ["fine"]


def test_outside_lambda_install_finds_no_runtime_library_and_changes_nothing():
    # snapshot_restore_py exists only in Lambda's managed runtime
    with pytest.raises(ImportError):
        importlib.import_module("snapshot_restore_py")
    assert snapstart.install() is False


def test_the_database_reopens_after_the_hooks_even_when_held_across_them(account, todos_handler):
    # A Database someone kept a reference to across the snapshot (e.g. a worker) reopens its pool on use
    db = get_database()
    snapstart.run_before_snapshot()
    with db.transaction() as conn:
        assert conn.execute("SELECT 1 AS one").fetchone() == {"one": 1}
    db.close()


def test_the_warm_up_request_is_answered_by_every_app_without_touching_the_database(todos_handler):
    from agentmate.api.lambda_handler import warm_up_event
    from functions.routes import ROUTE_GROUPS

    port = _pg_port()
    close_databases()
    for module in ROUTE_GROUPS:
        handler = getattr(importlib.import_module(module), "handler", None)
        if handler is None:
            continue  # the MCP container
        # When the warm-up's request reaches the app, it is a problem+json 404 and opens no connection
        r = parse_response(handler(warm_up_event(), LambdaContext()))
        assert r.status_code == 404, (module, r.body)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert open_connections_to(port) == 0, module
