"""The usage page's charts as geometry (pure, no I/O): GPU-hours per day stacked by
group, queue waits per queue (p50, a line to p95), the failure classes by the GPU-hours
they cost, the GPU-hours preemptions cost each cluster queue; made from the roll-up's
rows (``reading.queries.rollups``)."""

from collections.abc import Sequence
from typing import Any

from jobarchive.core.times import duration
from jobarchive.reading.console.charts import (
    BarChart,
    DayChart,
    Linked,
    bar_chart,
    counted,
    stack,
)
from jobarchive.reading.console.formats import number

# Groups drawn in their own colour (``series-N``), the costliest; the rest as one.
SERIES = 8
OTHERS = "(others)"
NONE = "(none)"
REASONS = 10


def _named(value: Any) -> str:
    return NONE if value in (None, "") else str(value)


def gpu_days(
    rows: Sequence[dict[str, Any]],
    group: str,
    days: Sequence[str],
    link: Linked | None = None,
    figure: str = "gpu_hours",
) -> DayChart:
    """GPU-hours per day stacked by ``group`` from the roll-up's rows by day: a day chart
    whose segments' ``status`` is the group's colour (0 the costliest, ``SERIES`` the
    rest), whose legend (``statuses``) names the groups, and whose segments lead to
    ``link(day, group's value)`` (never the rest's). ``figure``: the rows' GPU-hours
    (a cluster queue's are ``allocated_gpu_hours``)."""
    totals: dict[str, float] = {}
    for row in rows:
        totals[_named(row[group])] = totals.get(_named(row[group]), 0.0) + row[figure]
    ranked = sorted(totals, key=lambda name: (-totals[name], name))
    shown = ranked[:SERIES] + ([OTHERS] if len(ranked) > SERIES else [])
    hours: dict[str, dict[str, float]] = {day: {} for day in days}
    for row in rows:
        name = _named(row[group])
        series = name if name in shown else OTHERS
        if row["period"] in hours:
            per = hours[row["period"]]
            per[series] = per.get(series, 0.0) + row[figure]
    return stack(
        hours,
        shown,
        [str(colour) for colour in range(len(shown))],
        lambda day, name, value: f"{day}: {name} {number(value)} GPU-h",
        None if link is None else lambda day, name: _linked(link, day, name),
    )


def _linked(link: Linked, day: str, name: str) -> str | None:
    """A group's segment's link; the rest's, and the jobs without a value's, none."""
    return None if name in (OTHERS, NONE) else link(day, name)


def queue_waits(rows: Sequence[dict[str, Any]]) -> BarChart:
    """The median queue wait per queue, a line to its p95, from the roll-up by queue."""
    return bar_chart(
        [
            (
                _named(row["queue"]),
                row["queue_wait_p50_s"],
                f"p50 {duration(row['queue_wait_p50_s'])}, p95 {duration(row['queue_wait_p95_s'])}",
                row["queue_wait_p95_s"],
            )
            for row in rows
            if row["queue_wait_p50_s"] is not None
        ]
    )


def failure_classes(rows: Sequence[dict[str, Any]]) -> BarChart:
    """The failure classes ranked by the GPU-hours their failed jobs spent (decision
    42), from the roll-up by failure class; ``usage.UNCLASSIFIED`` among them until
    the classifying pass has read the newest failures."""
    ranked = sorted(
        (row for row in rows if row["failed_gpu_hours"]),
        key=lambda row: (-row["failed_gpu_hours"], row["failure"]),
    )
    return bar_chart(
        [
            (
                row["failure"],
                row["failed_gpu_hours"],
                f"{number(row['failed_gpu_hours'])} GPU-h, {counted(row['jobs'], 'job')}",
                None,
            )
            for row in ranked[:REASONS]
        ]
    )


def preempted_queues(rows: Sequence[dict[str, Any]]) -> BarChart:
    """The GPU-hours each Kueue cluster queue lost to preemptions (its jobs' pods in
    attempts a preemption ended, decision 44), the most first, from the roll-up by
    cluster queue."""
    ranked = sorted(
        (row for row in rows if row["preempted_gpu_hours"]),
        key=lambda row: (-row["preempted_gpu_hours"], _named(row["clusterqueue"])),
    )
    return bar_chart(
        [
            (
                _named(row["clusterqueue"]),
                row["preempted_gpu_hours"],
                f"{number(row['preempted_gpu_hours'])} GPU-h",
                None,
            )
            for row in ranked
        ]
    )
