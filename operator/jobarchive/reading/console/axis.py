"""A timeline's time axis: times onto the drawing's x, round ticks labelled in UTC, and
the axis's ends from the times it must show (pure, no I/O)."""

import dataclasses
import datetime
import math
from collections.abc import Iterable

NICE_STEPS = (
    1,
    2,
    5,
    10,
    15,
    30,
    60,
    120,
    300,
    600,
    900,
    1800,
    3600,
    7200,
    10800,
    21600,
    43200,
    86400,
    172800,
    604800,
    2592000,
)
MOST_TICKS = 8


@dataclasses.dataclass(frozen=True)
class Tick:
    """A line of the axis and its label."""

    x: float
    label: str


def nice_step(span: float) -> int:
    """The smallest round step (a second .. a month) giving at most ``MOST_TICKS`` ticks."""
    for step in NICE_STEPS:
        if span / step <= MOST_TICKS:
            return step
    return NICE_STEPS[-1] * math.ceil(span / NICE_STEPS[-1] / MOST_TICKS)


def ticks(start: datetime.datetime, end: datetime.datetime, scale: "Scale") -> list[Tick]:
    """Round times between start and end, labelled in UTC as finely as the step needs."""
    span = (end - start).total_seconds()
    step = nice_step(span)
    first = math.ceil(start.timestamp() / step) * step
    shape = "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%m-%d"
    found = []
    moment = first
    while moment <= end.timestamp():
        when = datetime.datetime.fromtimestamp(moment, datetime.UTC)
        found.append(Tick(scale.x(when), when.strftime(shape)))
        moment += step
    return found


@dataclasses.dataclass(frozen=True)
class Scale:
    """Times onto the drawing's x axis."""

    start: datetime.datetime
    end: datetime.datetime
    left: float
    right: float

    def x(self, moment: datetime.datetime) -> float:
        """Where a time falls; outside the axis, at its edge."""
        span = (self.end - self.start).total_seconds()
        share = (moment - self.start).total_seconds() / span
        return round(self.left + min(max(share, 0.0), 1.0) * (self.right - self.left), 1)


def axis(
    moments: Iterable[datetime.datetime | None],
) -> tuple[datetime.datetime, datetime.datetime]:
    """The axis's ends: the first and last of the times, a little apart at least, with
    a margin of 2 % on each side."""
    known = [moment for moment in moments if moment is not None]
    if not known:
        known = [datetime.datetime.now(datetime.UTC)]
    first, last = min(known), max(known)
    span = max((last - first).total_seconds(), 60.0)
    margin = datetime.timedelta(seconds=span * 0.02)
    return first - margin, first + datetime.timedelta(seconds=span) + margin
