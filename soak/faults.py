"""Faults at seeded random moments: the operator killed with SIGKILL and started again as
a new process, the database server stopped and started again, every watch stream cut.

The plan is drawn from the seed before the soak starts, and holds each type at least
once when it has room for three faults: a short soak exercises every recovery. Faults
of different types may overlap (an operator restarting while the database is away is
a case of its own); two of one type never do.
"""

import asyncio
import collections
import dataclasses
import random
from collections.abc import Callable

from soak.operators import WATCH_PATIENCE, Supervisor
from soak.timeline import Timeline
from testbed.mariadb import MariaDBServer
from testbed.watches import Watches

KILL, OUTAGE, CUT = "operator-kill", "database-outage", "watch-cut"
TYPES = (KILL, OUTAGE, CUT)
# Seconds the operator stays down, and the database away, drawn between these.
DOWNTIME = {KILL: (1.0, 10.0), OUTAGE: (3.0, 20.0), CUT: (0.0, 0.0)}
# Faults start this far into the workload at the earliest, and end this far before its end.
FIRST_AFTER, LAST_BEFORE = 10.0, 15.0
SAME_TYPE_GAP = 2.0


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault: when (seconds into the workload), which, and for how long."""

    at: float
    type: str
    duration: float


def plan(rng: random.Random, seconds: float, count: int) -> list[Fault]:
    """``count`` faults within a workload of ``seconds``, each type at least once when
    ``count`` allows; fewer when the workload is too short for them."""
    low, high = min(FIRST_AFTER, seconds / 4), seconds - min(LAST_BEFORE, seconds / 4)
    if count <= 0 or high <= low:
        return []
    types = list(TYPES)
    rng.shuffle(types)
    types = types[:count] + [rng.choice(TYPES) for _ in range(count - len(types))]
    rng.shuffle(types)
    faults = []
    free_from = dict.fromkeys(TYPES, low)
    for at, kind in zip(sorted(rng.uniform(low, high) for _ in types), types, strict=True):
        duration = round(rng.uniform(*DOWNTIME[kind]), 1)
        start = min(max(at, free_from[kind]), high - duration)
        if start < free_from[kind]:
            continue
        faults.append(Fault(round(start, 1), kind, duration))
        free_from[kind] = start + duration + SAME_TYPE_GAP
    return faults


class Injector:
    """Injects the planned faults and counts them."""

    def __init__(
        self,
        supervisor: Supervisor,
        server: MariaDBServer,
        watches: Watches,
        timeline: Timeline,
        say: Callable[[str], None],
    ) -> None:
        self.supervisor = supervisor
        self.server = server
        self.watches = watches
        self.timeline = timeline
        self.say = say
        self.counts: collections.Counter[str] = collections.Counter()
        # A fault waits for the undoing of the last of its type, which may take longer
        # than planned (a server's start, an operator's listing).
        self._serial = {kind: asyncio.Lock() for kind in TYPES}

    async def run(self, faults: list[Fault], started: float) -> None:
        """Inject every fault at its moment; returns once each has been undone."""
        tasks = []
        for fault in faults:
            delay = started + fault.at - self.timeline.clock()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.inject(fault)))
        await asyncio.gather(*tasks)

    async def inject(self, fault: Fault) -> None:
        """One fault, and its undoing."""
        async with self._serial[fault.type]:
            await self._inject(fault)

    async def _inject(self, fault: Fault) -> None:
        self.say(f"+{self.timeline.offset():.1f} s  fault: {fault.type} for {fault.duration} s")
        if fault.type == KILL:
            if await self.supervisor.kill() is None:
                self.say("  (no operator running to kill: skipped)")
                return
            await asyncio.sleep(fault.duration)
            await self.supervisor.start("operator restarted after SIGKILL")
        elif fault.type == OUTAGE:
            disruption = self.timeline.disrupted("database stopped")
            await asyncio.to_thread(self.server.stop)
            await asyncio.sleep(fault.duration)
            await asyncio.to_thread(self.server.start)
            self.timeline.restored(disruption)
        else:
            disruption = self.timeline.disrupted("watch streams cut")
            moment = self.timeline.clock()
            cut = self.watches.cut()
            self.say(f"  {cut} watch streams ended")
            deadline = moment + WATCH_PATIENCE
            while not self.watches.watching_since(moment):
                if self.timeline.clock() > deadline:
                    self.say(f"  no operator watched again within {WATCH_PATIENCE:.0f} s")
                    break
                await asyncio.sleep(0.1)
            else:
                self.timeline.restored(disruption)
        self.counts[fault.type] += 1
