"""The credential gate (core/limits/gate.py): one credential runs at most its share of requests at once in a
process, the rest wait in arrival order, and another credential never waits behind them."""

from __future__ import annotations

import anyio
import pytest

from agentmate.core.limits.gate import CredentialGate

pytestmark = [pytest.mark.anyio, pytest.mark.parametrize("anyio_backend", ["asyncio"])]


async def _settle() -> None:
    for _ in range(20):
        await anyio.sleep(0)


async def test_a_credential_runs_its_share_and_the_rest_wait_in_arrival_order(anyio_backend):
    gate = CredentialGate(2)
    release = anyio.Event()
    entered: list[int] = []

    async def request(n: int) -> None:
        async with gate.slot("ak_noisy"):
            entered.append(n)
            await release.wait()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for n in range(5):
                tg.start_soon(request, n)
                await _settle()
            # Two run; three wait, counted as the credential's users
            assert entered == [0, 1]
            assert gate.users("ak_noisy") == 5
            release.set()
        # Once the first two finish, the waiters enter in the order they came
        assert entered == [0, 1, 2, 3, 4]
    # And an idle credential leaves nothing behind
    assert gate.tracked() == 0 and gate.users("ak_noisy") == 0


async def test_another_credential_never_waits_behind_a_busy_one(anyio_backend):
    gate = CredentialGate(1)
    release = anyio.Event()
    quiet_done = anyio.Event()

    async def noisy() -> None:
        async with gate.slot("ak_noisy"):
            await release.wait()

    async def quiet() -> None:
        async with gate.slot("ak_quiet"):
            quiet_done.set()

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(noisy)
            await _settle()
            tg.start_soon(quiet)
            await quiet_done.wait()  # would hang if the quiet credential queued behind the noisy one
            assert gate.users("ak_noisy") == 3
            release.set()


@pytest.mark.parametrize("share, credential", [(0, "ak_x"), (1, None), (1, "")])
async def test_no_share_or_no_credential_never_waits(anyio_backend, share, credential):
    gate = CredentialGate(share)
    with anyio.fail_after(10):
        async with gate.slot(credential), gate.slot(credential), gate.slot(credential):
            pass
    assert gate.tracked() == 0


async def test_a_cancelled_waiter_gives_its_place_back(anyio_backend):
    gate = CredentialGate(1)
    with anyio.fail_after(10):
        async with gate.slot("ak_x"):
            with anyio.move_on_after(0.01):
                async with gate.slot("ak_x"):
                    pytest.fail("entered while the only slot was held")
            assert gate.users("ak_x") == 1
    assert gate.tracked() == 0
