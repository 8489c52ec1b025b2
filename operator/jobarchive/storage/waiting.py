"""Waiting out the database: one backoff, one outage state, one way to ride it out.

Every part that meets a database that is away (the writer's flushers, the recorder's
lookups, the reconciliation's reads) waits here: it tries again after a capped,
jittered backoff of its own, and says once when the outage begins and once when it
ends (decision 9).
"""

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from prometheus_client import Counter

from jobarchive.infra.logs import shown
from jobarchive.storage.failures import describe, is_unavailable

logger = logging.getLogger(__name__)
T = TypeVar("T")
# While the database is away, each waiter retries after 0.1 s, its waits doubling up
# to 5 s: quick to notice its return, cheap while it stays away.
BACKOFF_FIRST = 0.1
BACKOFF_CAP = 5.0


class Backoff:
    """One waiter's waits between retries: a ceiling doubling from ``first`` to ``cap``,
    and each wait a random point between half the ceiling and all of it ("equal
    jitter"), so that waiters that failed together do not retry together, and none
    retries sooner than half its ceiling."""

    def __init__(
        self,
        first: float = BACKOFF_FIRST,
        cap: float = BACKOFF_CAP,
        random: Callable[[], float] | None = None,
    ) -> None:
        self.first = first
        self.cap = cap
        self.ceiling = first
        self._random = random or _random_source()

    def next(self) -> float:
        """Seconds to wait before the next attempt; the ceiling doubles, up to the cap."""
        ceiling = self.ceiling
        self.ceiling = min(ceiling * 2, self.cap)
        return ceiling / 2 + self._random() * ceiling / 2

    def reset(self) -> None:
        """An attempt succeeded: the next outage starts again from the first wait."""
        self.ceiling = self.first


def _random_source() -> Callable[[], float]:
    # A generator of each waiter's own, seeded from the system: waiters started
    # together must not draw the same waits.
    return random.Random().random


class Outage:
    """Whether the database is away, and since when: one state for all who share it,
    which starts with the first failure and ends with the first success, each said
    once, not once per waiter or row.

    ``waiting`` says what waits meanwhile (``holding writes and retrying``), ``then``
    what follows the return (``; 12 rows wait to be written``); ``level`` is the
    outage's line's, the return's is one lower; ``counter`` counts every failure.
    """

    def __init__(
        self,
        waiting: str,
        then: Callable[[], str] = str,
        level: int = logging.WARNING,
        counter: Counter | None = None,
    ) -> None:
        self.waiting = waiting
        self.then = then
        self.level = level
        self.counter = counter
        self.since: float | None = None

    def failed(self, error: Exception) -> None:
        """The database was found away: the outage begins, unless it has."""
        if self.counter is not None:
            self.counter.inc()
        if self.since is None:
            self.since = time.monotonic()
            logger.log(
                self.level,
                "The database is unavailable, %s: %s",
                self.waiting,
                shown(describe(error)),
            )

    def over(self) -> None:
        """The database answered: the outage ends, if there was one."""
        if self.since is not None:
            logger.log(
                self.level - 10,
                "The database is back after %.1f s%s",
                time.monotonic() - self.since,
                self.then(),
            )
            self.since = None

    def lasted(self) -> float:
        """Seconds since the outage started; 0 when there is none."""
        return 0.0 if self.since is None else time.monotonic() - self.since


async def ride_out(
    call: Callable[[], Awaitable[T]],
    outage: Outage | None = None,
    backoff: Backoff | None = None,
) -> T:
    """``call``'s answer, asked again while the database is unavailable (after each of
    ``backoff``'s waits, a fresh one's by default), the ``outage`` told of each failure
    and of the answer; any other error is raised."""
    backoff = backoff or Backoff()
    while True:
        try:
            result = await call()
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            if outage is not None:
                outage.failed(exc)
            await asyncio.sleep(backoff.next())
            continue
        backoff.reset()
        if outage is not None:
            outage.over()
        return result
