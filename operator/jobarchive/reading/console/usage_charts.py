"""The usage page's charts as geometry (pure, no I/O): GPU-hours per day stacked by
group, queue waits per queue (p50, a line to p95), the costliest failure reasons; made
from the roll-up's rows (``reading.queries.rollups``)."""

import dataclasses
from collections.abc import Sequence
from typing import Any

from jobarchive.reading.console.charts import (
    BOTTOM,
    DAY_CHART_HEIGHT,
    LEFT,
    RIGHT,
    TOP,
    WIDTH,
    BarChart,
    Label,
    bar_chart,
    nice_ceiling,
)
from jobarchive.times import duration

# Groups drawn in their own colour (``series-N``), the costliest; the rest as one.
SERIES = 8
OTHERS = "(others)"
REASONS = 10


@dataclasses.dataclass(frozen=True)
class Block:
    """One group's part of one day's column."""

    x: float
    y: float
    width: float
    height: float
    series: int
    title: str


@dataclasses.dataclass(frozen=True)
class StackChart:
    """Columns per UTC day, stacked by group; ``groups`` in the legend's order."""

    width: int
    height: int
    blocks: list[Block]
    x_labels: list[Label]
    y_labels: list[Label]
    groups: list[str]
    total: float


def _named(value: Any) -> str:
    return "(none)" if value in (None, "") else str(value)


def gpu_days(rows: Sequence[dict[str, Any]], group: str, days: Sequence[str]) -> StackChart:
    """GPU-hours per day stacked by ``group`` from the roll-up's rows by day."""
    totals: dict[str, float] = {}
    for row in rows:
        totals[_named(row[group])] = totals.get(_named(row[group]), 0.0) + row["gpu_hours"]
    ranked = sorted(totals, key=lambda name: (-totals[name], name))
    shown = ranked[:SERIES] + ([OTHERS] if len(ranked) > SERIES else [])
    hours: dict[str, dict[str, float]] = {day: {} for day in days}
    for row in rows:
        name = _named(row[group])
        series = name if name in shown else OTHERS
        if row["period"] in hours:
            per = hours[row["period"]]
            per[series] = per.get(series, 0.0) + row["gpu_hours"]
    highest = nice_ceiling(max((sum(h.values()) for h in hours.values()), default=0))
    plot = DAY_CHART_HEIGHT - TOP - BOTTOM
    column = (WIDTH - LEFT - RIGHT) / max(len(days), 1)
    gap = min(column * 0.15, 3.0)
    blocks = []
    for index, day in enumerate(days):
        base = float(DAY_CHART_HEIGHT - BOTTOM)
        for colour, name in enumerate(shown):
            value = hours[day].get(name, 0.0)
            if value <= 0:
                continue
            height = value / highest * plot
            base -= height
            blocks.append(
                Block(
                    round(LEFT + index * column + gap / 2, 1),
                    round(base, 1),
                    round(column - gap, 1),
                    round(height, 1),
                    colour,
                    f"{day}: {name} {value:g} GPU-h",
                )
            )
    step = max(1, -(-len(days) // 12))
    x_labels = [
        Label(round(LEFT + (i + 0.5) * column, 1), DAY_CHART_HEIGHT - 8, day[5:])
        for i, day in enumerate(days)
        if i % step == 0
    ]
    y_labels = [
        Label(
            LEFT - 6, round(DAY_CHART_HEIGHT - BOTTOM - share * plot + 4, 1), f"{share * highest:g}"
        )
        for share in (0.0, 0.5, 1.0)
    ]
    total = round(sum(totals.values()), 3)
    return StackChart(WIDTH, DAY_CHART_HEIGHT, blocks, x_labels, y_labels, shown, total)


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


def costliest_reasons(rows: Sequence[dict[str, Any]], group: str) -> BarChart:
    """The failure reasons that cost the most GPU-hours, each with its group."""
    found = [
        (f"{reason['reason']} ({_named(row[group])})", reason["gpu_hours"], reason["jobs"])
        for row in rows
        for reason in row["top_failure_reasons"]
    ]
    found.sort(key=lambda item: (-item[1], item[0]))
    return bar_chart(
        [
            (label, hours, f"{hours:g} GPU-h, {jobs} job{'s' if jobs != 1 else ''}", None)
            for label, hours, jobs in found[:REASONS]
        ]
    )
