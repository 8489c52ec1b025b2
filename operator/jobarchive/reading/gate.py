"""Which of the API's queries may run now: a fair share of the read pool per caller
(a flow), or one at a time while the operator is recording.

The read pool keeps reads off the writer's connections, but not off the server's CPU
and disks, nor off the operator's event loop: on a small machine a few expensive
scans at once slow every commit. So while the writer has rows queued, committing, or
arriving (``narrowed()``), reads go one at a time; once recording is quiet they use
the whole pool again.

Within that limit the turns are shared fairly between flows (one per caller, as
Kubernetes' API Priority and Fairness shares a priority level between flows): a flow
may hold at most ``ceil(limit / active flows)`` turns at once (at least one), and a
turn that frees goes to the waiting flow that holds the fewest, flows that hold as
many served in turn (the one served longest ago first). So one caller's expensive
requests queue behind each other, not in front of everyone, and a newcomer is served
ahead of a flow already running. A turn is never taken back, so of a limit over two
no flow holds the last: a newcomer finds it free at once rather than waiting for a
running query to end (the usage roll-up's own time limit bounds the longest,
decision 33).

Each flow's queue is bounded: past ``Limits.queue`` waiting requests a flow's next is
turned away at once, and a request never waits more than ``Limits.wait`` seconds;
either is ``Busy``, which the API answers 503 with ``Retry-After``. A flow is kept
while it has a request, and ``LINGER`` seconds after its last ended (at most ``size``
flows so kept), so that a caller's next request of a sequence still finds its share
free; then it is dropped: the state never grows with the callers ever seen. Waiting
requests look again every ``POLL`` seconds, as the writer falling quiet wakes no one.
"""

import asyncio
import collections
import contextlib
import dataclasses
import math
from collections.abc import AsyncIterator, Callable

from jobarchive.config import DEFAULTS

# Seconds between looks at ``narrowed()`` while a query waits for its turn.
POLL = 0.05
# Seconds a flow whose requests all ended still counts as active.
LINGER = 0.5


class Busy(Exception):
    """No turn came within the wait, or the caller's queue was full; the message says."""


@dataclasses.dataclass(frozen=True)
class Limits:
    """How many requests of one flow may wait for a turn, and for how many seconds."""

    queue: int = DEFAULTS.api_flow_queue
    wait: float = DEFAULTS.api_flow_wait


@dataclasses.dataclass
class Flow:
    """One caller's requests: how many turns it holds, who waits, when it was last
    served a turn (0: never) and when it was last idle."""

    running: int = 0
    served: int = 0
    waiting: collections.deque[asyncio.Future[None]] = dataclasses.field(
        default_factory=collections.deque
    )
    idle_since: float = 0.0

    @property
    def empty(self) -> bool:
        """Neither running nor waiting."""
        return not self.running and not self.waiting


class FairGate:
    """At most ``size`` queries at once (one while ``narrowed()`` holds), shared
    fairly between flows; each flow's queue bounded by ``limits``."""

    def __init__(
        self,
        size: int,
        narrowed: Callable[[], bool] | None = None,
        limits: Limits = Limits(),
    ) -> None:
        self.size = size
        self.limits = limits
        self._narrowed = narrowed or (lambda: False)
        self._flows: dict[str, Flow] = {}
        # Turns granted so far: a flow's ``served`` orders it among equals.
        self._grants = 0

    @property
    def limit(self) -> int:
        """How many may run now."""
        return 1 if self._narrowed() else self.size

    @property
    def running(self) -> int:
        """How many run now."""
        return sum(flow.running for flow in self._flows.values())

    @property
    def waiting(self) -> int:
        """How many wait for a turn now."""
        return sum(len(flow.waiting) for flow in self._flows.values())

    @property
    def flows(self) -> int:
        """How many flows are kept now (running, waiting or lingering)."""
        return len(self._flows)

    def share(self) -> int:
        """How many turns one flow may hold now: the limit split between the flows; of a
        limit over two, never all but one, which is kept for a flow that holds none."""
        limit = self.limit
        fair = max(1, math.ceil(limit / max(1, len(self._flows))))
        return min(fair, limit - 1) if limit > 2 else fair

    def held(self, flow: str) -> int:
        """How many turns ``flow`` holds now."""
        found = self._flows.get(flow)
        return found.running if found else 0

    @contextlib.asynccontextmanager
    async def turn(self, flow: str = "", wait: float | None = None) -> AsyncIterator[None]:
        """Run the block in a turn of ``flow``'s; Busy if its queue is full or no turn
        comes within ``wait`` seconds (``limits.wait`` when not given)."""
        self._forget(asyncio.get_running_loop().time())
        mine = self._flows.setdefault(flow, Flow())
        if len(mine.waiting) >= self.limits.queue:
            raise Busy(f"{self.limits.queue} of your requests already wait for a turn")
        ticket = asyncio.get_running_loop().create_future()
        mine.waiting.append(ticket)
        await self._wait(flow, mine, ticket, self.limits.wait if wait is None else wait)
        try:
            yield
        finally:
            self._release(flow, mine)

    async def _wait(self, name: str, flow: Flow, ticket: asyncio.Future[None], wait: float) -> None:
        """Until ``ticket`` is granted; Busy past ``wait``, the ticket withdrawn."""
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        try:
            while True:
                self._dispatch()
                if ticket.done():
                    return
                left = until - loop.time()
                if left <= 0:
                    raise Busy("every read connection is busy")
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, POLL)):
                        await asyncio.shield(ticket)
        except BaseException:
            if ticket.done() and not ticket.cancelled():
                # Granted as it gave up: the turn goes back to the others.
                self._release(name, flow)
            else:
                ticket.cancel()
                flow.waiting.remove(ticket)
                self._settle(name, flow)
            raise

    def _dispatch(self) -> None:
        """Grant free turns: to the waiting flow below its share that holds the fewest,
        among equals the one served longest ago (a new flow first)."""
        running = self.running
        while running < self.limit:
            share = self.share()
            ready = [
                (flow.running, flow.served, order, flow)
                for order, flow in enumerate(self._flows.values())
                if flow.waiting and flow.running < share
            ]
            if not ready:
                return
            flow = min(ready, key=lambda found: found[:3])[3]
            self._grants += 1
            flow.served = self._grants
            flow.waiting.popleft().set_result(None)
            flow.running += 1
            running += 1

    def _release(self, name: str, flow: Flow) -> None:
        flow.running -= 1
        self._settle(name, flow)
        self._dispatch()

    def _settle(self, name: str, flow: Flow) -> None:
        """Mark a flow that fell empty idle from now, and keep at most ``size`` idle."""
        if not flow.empty:
            return
        flow.idle_since = asyncio.get_running_loop().time()
        idle = [key for key, kept in self._flows.items() if kept.empty and key != name]
        for key in idle[: max(0, len(idle) + 1 - self.size)]:
            del self._flows[key]

    def _forget(self, now: float) -> None:
        """Drop the flows idle for ``LINGER`` seconds."""
        for name in [k for k, f in self._flows.items() if f.empty and now - f.idle_since > LINGER]:
            del self._flows[name]
