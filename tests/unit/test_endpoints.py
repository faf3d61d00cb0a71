"""Sync endpoints run on the event loop while the process serves one request at a time (api/endpoints.py), and
every route of every route group is built that way."""

from __future__ import annotations

import asyncio
import inspect
import threading
from uuid import UUID

from fastapi import FastAPI
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from agentmate.api.endpoints import Router, awaitable_endpoint, one_request_at_a_time, serving_one_request


def _ran_on() -> tuple[FastAPI, list[threading.Thread]]:
    threads: list[threading.Thread] = []
    router = Router(prefix="/x")

    @router.get("/{item_id}")
    def read(item_id: UUID, n: int = 1) -> dict[str, object]:
        threads.append(threading.current_thread())
        return {"id": str(item_id), "n": n}

    app = FastAPI()
    app.include_router(router)
    return app, threads


def test_a_sync_endpoint_keeps_its_parameters_and_runs_on_a_worker_thread_in_a_server():
    app, threads = _ran_on()
    with TestClient(app) as client:
        ok = client.get("/x/00000000-0000-0000-0000-000000000001", params={"n": 3})
        bad = client.get("/x/not-a-uuid")
    assert ok.json() == {"id": "00000000-0000-0000-0000-000000000001", "n": 3}
    assert bad.status_code == 422  # the path parameter is still validated from the original signature
    assert len(threads) == 1 and threads[0] is not threading.current_thread()


def test_one_request_at_a_time_runs_the_endpoint_on_the_loops_thread():
    app, threads = _ran_on()
    sent: list[dict[str, object]] = []

    async def serve() -> None:
        scope = {
            "type": "http",
            "method": "GET",
            "path": "/x/00000000-0000-0000-0000-000000000002",
            "raw_path": b"/x/00000000-0000-0000-0000-000000000002",
            "query_string": b"",
            "headers": [],
            "http_version": "1.1",
            "scheme": "http",
            "server": ("t", 80),
            "client": ("c", 1),
            "root_path": "",
        }

        async def receive() -> dict[str, object]:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: dict[str, object]) -> None:
            sent.append(message)

        await app(scope, receive, send)

    with one_request_at_a_time():
        assert serving_one_request()
        asyncio.run(serve())  # the task copies the marked context, as Mangum's does
    assert not serving_one_request()
    assert sent[0]["status"] == 200
    assert threads == [threading.current_thread()]


def test_awaitable_endpoint_leaves_coroutines_and_generators_alone():
    async def coroutine() -> None: ...

    def generator() -> object:
        yield 1

    assert awaitable_endpoint(coroutine) is coroutine
    assert awaitable_endpoint(generator) is generator

    def plain(a: int, b: str = "x") -> int:
        return a

    wrapped = awaitable_endpoint(plain)
    assert inspect.iscoroutinefunction(wrapped)
    assert wrapped.__name__ == "plain"
    assert inspect.signature(wrapped) == inspect.signature(plain)


def test_every_route_of_every_group_awaits_its_endpoint():
    """A router built from FastAPI's APIRouter instead of ours would put its sync endpoints back on two worker
    threads per Lambda request."""
    from agentmate.api.routing import _routes
    from infra.openapi import route_group_apps

    sync = []
    for module, app in route_group_apps().items():
        for route in _routes(app):
            original = getattr(route, "original_route", route)
            assert isinstance(original, APIRoute)
            if not inspect.iscoroutinefunction(original.endpoint):
                sync.append(f"{module}: {sorted(original.methods or ())} {original.path}")
    assert sync == []


def test_inside_a_lambda_invocation_a_request_takes_no_turn_in_the_credential_gate(monkeypatch):
    """One request at a time: nothing can wait, so the gate (and its per-request semaphore) is skipped; a server
    still queues each credential's requests through it."""
    from agentmate.api import deps
    from agentmate.core.limits.gate import CredentialGate

    gate = CredentialGate(2)  # the tests' settings turn the gate off (LIMIT_CONCURRENT_PER_CREDENTIAL=0)
    monkeypatch.setattr(deps, "_gate", gate)

    async def held(one_at_a_time: bool) -> int:
        if one_at_a_time:
            with one_request_at_a_time():
                async with deps.credential_slot("key-1"):
                    return gate.users("key-1")
        async with deps.credential_slot("key-1"):
            return gate.users("key-1")

    assert asyncio.run(held(False)) == 1
    assert asyncio.run(held(True)) == 0


def test_the_caller_is_resolved_without_sub_dependencies_for_fastapi_to_solve():
    """``current_principal`` and ``authorised`` read the database and settings themselves: FastAPI solves every
    sub-dependency on every request, cached or not (bench/warm_invoke.py --framework)."""
    from fastapi.dependencies.utils import get_dependant

    from agentmate.api import deps

    principal = get_dependant(path="/", call=deps.current_principal)
    assert [d.call for d in principal.dependencies] == []
    scoped = get_dependant(path="/", call=deps.authorised)
    assert [d.call for d in scoped.dependencies] == [deps.current_principal]
