"""How many of the API's queries may run at once: the read pool's size, or one while
the operator is recording.

The read pool keeps reads off the writer's connections, but not off the server's CPU
and disks, nor off the operator's event loop: on a small machine a few expensive
scans at once slow every commit. So while the writer has rows queued, committing, or
arriving (``narrowed()``), reads go one at a time; once recording is quiet they use
the whole pool again. A query never waits more than ``wait`` seconds for its turn:
then it is turned away (``Busy``), which the API answers 503 with ``Retry-After``.
Waiting queries are rechecked every ``POLL`` seconds, as the writer falling quiet
wakes no one.
"""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

# Seconds between looks at ``narrowed()`` while a query waits for its turn.
POLL = 0.05


class Busy(Exception):
    """No turn came within the wait."""


class Gate:
    """At most ``size`` queries at once, or one while ``narrowed()`` holds."""

    def __init__(self, size: int, narrowed: Callable[[], bool] | None = None) -> None:
        self.size = size
        self._narrowed = narrowed or (lambda: False)
        self._running = 0
        self._changed = asyncio.Condition()

    @property
    def limit(self) -> int:
        """How many may run now."""
        return 1 if self._narrowed() else self.size

    @property
    def running(self) -> int:
        """How many run now."""
        return self._running

    @contextlib.asynccontextmanager
    async def turn(self, wait: float) -> AsyncIterator[None]:
        """Run the block in a turn of its own; Busy if none comes within ``wait`` s."""
        loop = asyncio.get_running_loop()
        until = loop.time() + wait
        async with self._changed:
            while self._running >= self.limit:
                left = until - loop.time()
                if left <= 0:
                    raise Busy()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(min(left, POLL)):
                        await self._changed.wait()
            self._running += 1
        try:
            yield
        finally:
            async with self._changed:
                self._running -= 1
                self._changed.notify()
