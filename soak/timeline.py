"""When the operator could not be expected to see a change: while it was down or not yet
watching, while the database was away, while its watches were cut, and for a catch-up
margin after each.

The rest of the time is healthy, and what happens then must be recorded: a state an
object holds for ``lag`` seconds of healthy time must reach its row, and a deletion
made in healthy time, with ``lag`` seconds of it after, must be seen with the object's
last state. Everything else may or may not have been seen; the checker accepts any
state from the last one that must have been.
"""

import dataclasses
import math
import time
from collections.abc import Callable


@dataclasses.dataclass
class Disruption:
    """One stretch of time the operator could not see: from, until (None: still)."""

    cause: str
    start: float
    end: float | None = None


class Timeline:
    """The disruptions of one soak, and the healthy time between them."""

    def __init__(
        self, lag: float, catch_up: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.lag = lag
        self.catch_up = catch_up
        self.clock = clock
        self.origin = clock()
        self.disruptions: list[Disruption] = []

    def offset(self, moment: float | None = None) -> float:
        """Seconds from the soak's start to ``moment`` (now by default)."""
        return (self.clock() if moment is None else moment) - self.origin

    def disrupted(self, cause: str) -> Disruption:
        """A disruption starting now."""
        disruption = Disruption(cause, self.clock())
        self.disruptions.append(disruption)
        return disruption

    def restored(self, disruption: Disruption) -> None:
        """The disruption ends now."""
        disruption.end = self.clock()

    @property
    def disrupted_now(self) -> bool:
        """Whether some disruption has not ended."""
        return any(d.end is None for d in self.disruptions)

    def healthy(self, since: float, until: float) -> list[tuple[float, float]]:
        """The healthy intervals between ``since`` and ``until``: outside every
        disruption, each extended by the catch-up margin."""
        blocked = sorted(
            (d.start, math.inf if d.end is None else d.end + self.catch_up)
            for d in self.disruptions
        )
        intervals = []
        cursor = since
        for start, end in blocked:
            if start > cursor:
                intervals.append((cursor, min(start, until)))
            cursor = max(cursor, end)
            if cursor >= until:
                break
        if cursor < until:
            intervals.append((cursor, until))
        return [(a, b) for a, b in intervals if b > a]

    def must_see(self, start: float, end: float, healthy: list[tuple[float, float]]) -> bool:
        """Whether a state held from ``start`` to ``end`` spent ``lag`` seconds in one
        healthy interval."""
        return any(min(end, b) - max(start, a) >= self.lag for a, b in healthy)

    def must_see_at(self, moment: float, healthy: list[tuple[float, float]]) -> bool:
        """Whether a change at ``moment`` fell in healthy time with ``lag`` seconds of it
        after."""
        return any(a <= moment and b - moment >= self.lag for a, b in healthy)
