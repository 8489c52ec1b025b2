"""The API's gate: the pool's size when recording is quiet, one query while it is not."""

import asyncio

import pytest

from jobarchive.reading.gate import Busy, Gate


async def hold(gate: Gate, release: asyncio.Event) -> None:
    async with gate.turn(wait=1.0):
        await release.wait()


async def test_the_pool_size_runs_at_once_and_the_next_is_turned_away() -> None:
    gate, release = Gate(2), asyncio.Event()
    holders = [asyncio.create_task(hold(gate, release)) for _ in range(2)]
    await asyncio.sleep(0.01)
    assert gate.running == 2
    with pytest.raises(Busy):
        async with gate.turn(wait=0.1):
            pass
    release.set()
    await asyncio.gather(*holders)
    assert gate.running == 0


async def test_one_at_a_time_while_recording() -> None:
    recording = True
    gate, release = Gate(4, lambda: recording), asyncio.Event()
    first = asyncio.create_task(hold(gate, release))
    await asyncio.sleep(0.01)
    assert (gate.limit, gate.running) == (1, 1)
    with pytest.raises(Busy):
        async with gate.turn(wait=0.1):
            pass
    recording = False
    # The writer falling quiet wakes no one: the waiting query sees it at its next look.
    async with gate.turn(wait=0.5):
        assert gate.running == 2
    release.set()
    await first


async def test_a_query_waits_for_a_turn_that_frees() -> None:
    gate, release = Gate(1), asyncio.Event()
    first = asyncio.create_task(hold(gate, release))
    await asyncio.sleep(0.01)
    asyncio.get_running_loop().call_later(0.05, release.set)
    async with gate.turn(wait=1.0):
        assert gate.running == 1
    await first


async def test_a_cancelled_waiter_takes_no_turn() -> None:
    gate, release = Gate(1), asyncio.Event()
    first = asyncio.create_task(hold(gate, release))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(hold(gate, asyncio.Event()))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    release.set()
    await first
    assert gate.running == 0
