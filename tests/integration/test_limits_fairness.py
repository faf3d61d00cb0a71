"""Fair sharing of one long-lived process (issue 25 §1; bench/fairness.py measures it): a 429 is held before it
is sent, so a client that retries at once sends a few requests a second, not thousands; and one credential's
requests wait their turn while another credential's pass."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import anyio
import pytest
from mcp import Client

from agentmate.api import deps
from agentmate.core.limits import service as limits
from agentmate.mcp.context import acting_as
from tests.integration.test_limits import SERVERS, _principal

TODOS = "/api/todos"


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.005)


def _in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Future[Any]:
    pool = ThreadPoolExecutor(1)
    future = pool.submit(fn, *args, **kwargs)
    pool.shutdown(wait=False)
    return future


@pytest.fixture
def gate_of(set_limits: Any) -> Any:
    """This process's gate rebuilt with ``share`` turns per credential (the settings are read when it is built)."""

    def build(share: int) -> Any:
        set_limits(concurrent_per_credential=share)
        deps._gate = None
        return deps.credential_gate()

    yield build
    deps._gate = None


def test_a_refusal_is_held_before_it_is_sent_and_then_names_its_wait(client, account, set_limits):
    h = account.headers("todos:r")
    set_limits(requests_per_minute=1, request_burst=1, refusal_hold_ms=1500)
    assert client.get(TODOS, headers=h).status_code == 200
    for _ in range(2):  # refused by the shared state, then by what this process remembers
        answer = _in_thread(client.get, TODOS, headers=h)
        # While it is held the answer is not sent; the process counts it
        _until(lambda: limits.held_refusals() == 1)
        assert not answer.done()
        r = answer.result(timeout=30)
        assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
        assert r.json()["limit"] == "requests_per_minute"
        _until(lambda: limits.held_refusals() == 0)


def test_a_hold_of_zero_answers_a_refusal_at_once(client, account, set_limits):
    h = account.headers("todos:r")
    set_limits(requests_per_minute=1, request_burst=1, refusal_hold_ms=0)
    client.get(TODOS, headers=h)
    assert client.get(TODOS, headers=h).status_code == 429
    assert limits.held_refusals() == 0


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_hold_never_outlasts_retry_after_nor_the_cap_on_held_refusals(
    set_limits, monkeypatch, anyio_backend
):
    settings = set_limits(refusal_hold_ms=10_000)
    with anyio.fail_after(8):  # held 1 s (the Retry-After), not 10
        await limits.hold_refusal(settings, 1)
    monkeypatch.setattr(limits, "_held", limits._HOLD_MAX)
    with anyio.fail_after(8):  # the cap reached: answered at once
        await limits.hold_refusal(settings, 60)


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_over_mcp_a_refusal_is_held_then_a_tool_error(account, set_limits, anyio_backend):
    set_limits(requests_per_minute=1, request_burst=1, refusal_hold_ms=1500)
    seen_held: list[int] = []

    async def watch() -> None:
        while not seen_held:
            if limits.held_refusals():
                seen_held.append(limits.held_refusals())
            await anyio.sleep(0.005)

    with anyio.fail_after(30), acting_as(_principal(account)):
        async with Client(SERVERS["/mcp/todos"]) as mcp:
            await mcp.call_tool("todo_list", {})
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                refused = await mcp.call_tool("todo_list", {})
    assert seen_held == [1]
    assert refused.is_error and "requests_per_minute" in refused.content[0].text


def test_a_credential_waits_its_turn_while_another_credential_passes(client, account, other_account, gate_of):
    noisy, quiet = account.headers("todos:r"), other_account.headers("todos:r")
    gate = gate_of(1)
    key = noisy["X-Api-Key"]
    # Given the noisy credential's one turn taken (a request of it in flight)
    with client.portal.wrap_async_context_manager(deps.credential_slot(key)):
        waiting = _in_thread(client.get, TODOS, headers=noisy)
        # Its next request waits at the gate, before authentication or any statement
        _until(lambda: gate.users(key) == 2)
        # While the quiet credential's request is served at once
        assert client.get(TODOS, headers=quiet).status_code == 200
        assert not waiting.done()
    # And the waiter is served once the turn is given back
    assert waiting.result(timeout=30).status_code == 200
    _until(lambda: gate.tracked() == 0)
