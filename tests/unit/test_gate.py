"""The API's gate: the pool's size when recording is quiet, one query while it is not;
its turns shared fairly between callers' flows, each flow's queue bounded, and no more
flows kept than run, wait or ended a moment ago."""

import asyncio

import pytest

from jobarchive.reading import gate as gates
from jobarchive.reading.gate import Busy, FairGate, Limits


async def hold(gate: FairGate, release: asyncio.Event) -> None:
    async with gate.turn(wait=1.0):
        await release.wait()


async def test_the_pool_size_runs_at_once_and_the_next_is_turned_away() -> None:
    gate, release = FairGate(2), asyncio.Event()
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
    gate, release = FairGate(4, lambda: recording), asyncio.Event()
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
    gate, release = FairGate(1), asyncio.Event()
    first = asyncio.create_task(hold(gate, release))
    await asyncio.sleep(0.01)
    asyncio.get_running_loop().call_later(0.05, release.set)
    async with gate.turn(wait=1.0):
        assert gate.running == 1
    await first


async def test_a_cancelled_waiter_takes_no_turn() -> None:
    gate, release = FairGate(1), asyncio.Event()
    first = asyncio.create_task(hold(gate, release))
    await asyncio.sleep(0.01)
    waiter = asyncio.create_task(hold(gate, asyncio.Event()))
    await asyncio.sleep(0.01)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    release.set()
    await first
    assert gate.running == 0


class Holders:
    """Requests of named flows that hold their turn until told, and the order their
    turns came in."""

    def __init__(self, gate: FairGate) -> None:
        self.gate = gate
        self.served: list[str] = []
        self.releases: dict[str, list[asyncio.Event]] = {}
        self.tasks: list[asyncio.Task[None]] = []

    def ask(self, flow: str, count: int = 1) -> None:
        for _ in range(count):
            self.tasks.append(asyncio.create_task(self._hold(flow)))

    async def _hold(self, flow: str) -> None:
        async with self.gate.turn(flow, wait=30.0):
            release = asyncio.Event()
            self.served.append(flow)
            self.releases.setdefault(flow, []).append(release)
            await release.wait()

    async def end_all(self) -> None:
        """End every request, those served meanwhile too."""
        while not all(task.done() for task in self.tasks):
            for releases in self.releases.values():
                for release in releases:
                    release.set()
            await asyncio.sleep(0)

    async def settled(self, served: int) -> None:
        """Until ``served`` turns came and every other request waits."""
        while len(self.served) < served or self.gate.waiting + self.gate.running < len(
            [task for task in self.tasks if not task.done()]
        ):
            await asyncio.sleep(0)

    async def end_one(self, flow: str, served: int) -> None:
        """End the oldest running request of ``flow``; until it ended and ``served``
        turns came."""
        ended = sum(task.done() for task in self.tasks)
        self.releases[flow].pop(0).set()
        while sum(task.done() for task in self.tasks) == ended:
            await asyncio.sleep(0)
        await self.settled(served)


async def test_a_newcomer_is_served_ahead_of_a_flow_that_holds_turns() -> None:
    gate = FairGate(4)
    holders = Holders(gate)
    holders.ask("attacker", 6)
    await holders.settled(3)
    # Alone, the attacker holds all turns but one, which is kept for a newcomer.
    assert (gate.held("attacker"), gate.running, gate.waiting) == (3, 3, 3)
    holders.ask("victim", 2)
    await holders.settled(4)
    assert (gate.held("attacker"), gate.held("victim"), gate.waiting) == (3, 1, 4)
    # Two flows: the attacker's share is two; the victim's second goes before its queue.
    assert gate.share() == 2
    await holders.end_one("attacker", 5)
    assert (gate.held("attacker"), gate.held("victim")) == (2, 2)
    assert holders.served[3:] == ["victim", "victim"]
    # Past its share the attacker's queue waits though a turn is free; within it, it runs.
    await holders.end_one("victim", 5)
    assert (gate.running, gate.held("attacker")) == (3, 2)
    await holders.end_one("attacker", 6)
    assert holders.served[5:] == ["attacker"]
    await holders.end_all()
    assert gate.running == gate.waiting == 0


async def test_waiting_flows_are_served_in_turn() -> None:
    gate = FairGate(1)
    holders = Holders(gate)
    holders.ask("a")
    await holders.settled(1)
    for flow in ("a", "a", "b", "b", "c", "c"):
        holders.ask(flow)
    await holders.settled(1)
    for served in range(2, 8):
        await holders.end_one(holders.served[-1], served)
    # Each flow in turn, the one served longest ago (or never) first.
    assert holders.served == ["a", "b", "c", "a", "b", "c", "a"]
    await holders.end_all()


async def test_a_flows_queue_is_bounded_and_others_still_queue() -> None:
    gate = FairGate(1, limits=Limits(queue=2, wait=30.0))
    holders = Holders(gate)
    holders.ask("a", 3)
    await holders.settled(1)
    with pytest.raises(Busy, match="2 of your requests already wait"):
        async with gate.turn("a"):
            pass
    holders.ask("b")
    await holders.settled(1)
    assert gate.waiting == 3
    for task in holders.tasks:
        task.cancel()
    await asyncio.gather(*holders.tasks, return_exceptions=True)
    assert gate.running == gate.waiting == 0


async def test_the_flows_kept_do_not_grow_with_the_callers_seen() -> None:
    gate = FairGate(4)
    for caller in range(1000):
        async with gate.turn(f"user-{caller}"):
            assert gate.flows <= gate.size + 1
    assert gate.flows <= gate.size
    # Past LINGER, the next request finds only itself.
    await asyncio.sleep(gates.LINGER + 0.05)
    async with gate.turn("last"):
        assert gate.flows == 1
