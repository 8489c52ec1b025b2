"""A job's Kueue attempts on its timeline (decision 43): a band per attempt, from its
quota reservation to its end (to the axis's end while it holds), and a mark where a
preemption ended one; pure, on the timeline's axis (``axis.Scale``)."""

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.times import timestamp
from jobarchive.reading.console.axis import Scale

PREEMPTED = "Preempted"
# The lane's height in the drawing's units, and how long a band's title may be.
BAND_LANE = 26
TITLE_CHARACTERS = 300


@dataclasses.dataclass(frozen=True)
class Band:
    """One attempt: reserved at ``x``, ended at ``x_end``; how it ended (None: it
    holds still), and what its title says of it."""

    x: float
    x_end: float
    number: int
    ended: str | None
    title: str


@dataclasses.dataclass(frozen=True)
class Preemption:
    """Where a preemption ended an attempt, and what its title says of it."""

    x: float
    title: str


def attempt_times(attempts: Sequence[Mapping[str, Any]]) -> list[datetime.datetime | None]:
    """The times the axis must show of the attempts: each reservation and end."""
    return [
        timestamp(attempt[key]) for attempt in attempts for key in ("quota_reserved_at", "ended_at")
    ]


def bands(
    attempts: Sequence[Mapping[str, Any]], scale: Scale
) -> tuple[list[Band], list[Preemption]]:
    """A band per attempt (a job's detail's ``attempts``, oldest first) and a mark per
    preemption, on ``scale``."""
    drawn, preemptions = [], []
    for number, attempt in enumerate(attempts, 1):
        reserved = timestamp(attempt["quota_reserved_at"])
        ended = timestamp(attempt["ended_at"])
        if reserved is None:
            continue
        end = attempt["end_reason"] or (None if ended is None else "ended")
        x_end = scale.right if ended is None else scale.x(ended)
        title = _title(number, attempt, end)
        drawn.append(Band(scale.x(reserved), x_end, number, end, title))
        if end == PREEMPTED and ended is not None:
            preemptions.append(Preemption(x_end, title))
    return drawn, preemptions


def _title(number: int, attempt: Mapping[str, Any], end: str | None) -> str:
    """``Attempt 1 in cq-a100: reserved 10:05:00, ended 11:00:00 UTC, Preempted:
    <Kueue's message>``."""
    queue = f" in {attempt['cluster_queue']}" if attempt["cluster_queue"] else ""
    reserved = _clock(attempt["quota_reserved_at"])
    told = f"ended {_clock(attempt['ended_at'])} UTC, {end}" if end else "holding still"
    message = f": {attempt['message']}" if attempt["message"] else ""
    return clip(f"Attempt {number}{queue}: reserved {reserved}, {told}{message}", TITLE_CHARACTERS)


def _clock(moment: str | None) -> str:
    return "-" if moment is None else moment.replace("T", " ").removesuffix("Z")
