"""The geometry of the statistics page's charts: pure functions, no I/O.

Two shapes serve every chart: columns stacked per day (jobs per day by status) and
horizontal bars with a label and a value (failure reasons, durations by kind, top
owners, GPU-hours). Both are drawn ``WIDTH`` units wide and scaled by the browser;
each chart is made from the rows of its query (``reading.queries.stats``).
"""

import dataclasses
import datetime
import math
from collections.abc import Callable, Sequence
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.times import duration
from jobarchive.reading.console.formats import number

WIDTH = 1200
DAY_CHART_HEIGHT = 220
LEFT = 48
RIGHT = 12
TOP = 10
BOTTOM = 24
BAR_LABELS = 300
# What of a bar's label fits left of it; its title says it whole.
LABEL_CHARACTERS = 44
BAR_ROW = 22
# Room right of the longest bar for its value as written.
VALUE_TEXT = 180
# Order of the stacks: the finished outcomes at the foot, what still runs on top.
STATUS_ORDER = (
    "Succeeded",
    "Failed",
    "Stopped",
    "Running",
    "Restarting",
    "Suspended",
    "Created",
)
MOST_DAY_LABELS = 12


@dataclasses.dataclass(frozen=True)
class Segment:
    """One status's part of one day's column."""

    x: float
    y: float
    width: float
    height: float
    status: str
    title: str
    href: str | None = None


@dataclasses.dataclass(frozen=True)
class Label:
    """A text on an axis."""

    x: float
    y: float
    text: str


@dataclasses.dataclass(frozen=True)
class DayChart:
    """Stacked columns, one per UTC day of the window."""

    width: int
    height: int
    segments: list[Segment]
    x_labels: list[Label]
    y_labels: list[Label]
    statuses: list[str]
    total: float


# Where a segment of a day's column leads (its day and series), if anywhere.
Linked = Callable[[str, str], str | None]
# Where a bar leads (the value of the column it is grouped by), if anywhere.
Leads = Callable[[Any], str | None]


def nowhere(_: Any) -> None:
    """A bar that leads nowhere."""


def days_between(since: datetime.datetime, until: datetime.datetime) -> list[str]:
    """The UTC days (YYYY-MM-DD) that [since, until) touches."""
    first = since.astimezone(datetime.UTC).date()
    last = (until.astimezone(datetime.UTC) - datetime.timedelta(microseconds=1)).date()
    count = max((last - first).days + 1, 1)
    return [(first + datetime.timedelta(days=n)).isoformat() for n in range(count)]


def nice_ceiling(value: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``value`` (and at least 1)."""
    if value <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for factor in (1, 2, 5, 10):
        if factor * power >= value:
            return float(factor * power)
    return float(10 * power)


def day_chart(
    rows: Sequence[dict[str, Any]], days: Sequence[str], link: Linked | None = None
) -> DayChart:
    """Columns of jobs per day, stacked by status, from ``jobs_per_day``'s rows; each
    segment leading where ``link`` says."""
    counts: dict[str, dict[str, int]] = {day: {} for day in days}
    for row in rows:
        if row["day"] in counts:
            per_status = counts[row["day"]]
            per_status[row["status"]] = per_status.get(row["status"], 0) + row["jobs"]
    statuses = [status for status in STATUS_ORDER if any(status in c for c in counts.values())]
    statuses += sorted({s for c in counts.values() for s in c} - set(statuses))
    return stack(
        {day: {status: float(jobs) for status, jobs in c.items()} for day, c in counts.items()},
        statuses,
        statuses,
        lambda day, status, jobs: f"{day}: {number(jobs)} {status}",
        link,
    )


def stack(
    values: dict[str, dict[str, float]],
    series: Sequence[str],
    classes: Sequence[str],
    title: Callable[[str, str, float], str],
    link: Linked | None = None,
) -> DayChart:
    """Columns per day (``values``' keys, in order) stacked by ``series`` from the foot,
    each segment's ``status`` its series' entry in ``classes``, its title ``title(day,
    series, value)``, its link ``link(day, series)``; the legend (``statuses``) names
    the series."""
    days = list(values)
    highest = nice_ceiling(max((sum(c.values()) for c in values.values()), default=0))
    plot_height = DAY_CHART_HEIGHT - TOP - BOTTOM
    column = (WIDTH - LEFT - RIGHT) / max(len(days), 1)
    gap = min(column * 0.15, 3.0)
    segments = []
    for index, day in enumerate(days):
        x = LEFT + index * column
        base = float(DAY_CHART_HEIGHT - BOTTOM)
        for name, kind in zip(series, classes, strict=True):
            value = values[day].get(name, 0)
            if value <= 0:
                continue
            height = value / highest * plot_height
            base -= height
            segments.append(
                Segment(
                    round(x + gap / 2, 1),
                    round(base, 1),
                    round(column - gap, 1),
                    round(height, 1),
                    kind,
                    title(day, name, value),
                    link(day, name) if link else None,
                )
            )
    every = max(1, math.ceil(len(days) / MOST_DAY_LABELS))
    x_labels = [
        Label(round(LEFT + (i + 0.5) * column, 1), DAY_CHART_HEIGHT - 8, day[5:])
        for i, day in enumerate(days)
        if i % every == 0
    ]
    # Whole numbers are counted whole: half the scale is labelled only when it is one.
    marks = [(0.0, 0.0), (0.5, highest / 2), (1.0, highest)]
    foot = DAY_CHART_HEIGHT - BOTTOM + 4
    y_labels = [
        Label(LEFT - 6, round(foot - share * plot_height, 1), number(value))
        for share, value in marks
        if value.is_integer()
    ]
    total = sum(sum(c.values()) for c in values.values())
    return DayChart(WIDTH, DAY_CHART_HEIGHT, segments, x_labels, y_labels, list(series), total)


@dataclasses.dataclass(frozen=True)
class HBar:
    """One labelled bar; ``whisker_x`` marks a second value (a maximum) when given."""

    y: float
    width: float
    label: str
    value: str
    title: str
    whisker_x: float | None = None
    href: str | None = None


@dataclasses.dataclass(frozen=True)
class BarChart:
    """Labelled horizontal bars, largest first."""

    width: int
    height: int
    left: int
    bars: list[HBar]


def bar_chart(
    items: Sequence[tuple[str, float, str, float | None]],
    links: Sequence[str | None] = (),
) -> BarChart:
    """Bars from (label, value, value as written, optional whisker value) tuples, scaled
    to the largest value or whisker; each leading to its entry of ``links``, if any."""
    highest = max([value for _, value, _, _ in items] + [w or 0 for *_, w in items] + [0])
    plot = WIDTH - BAR_LABELS - RIGHT - VALUE_TEXT
    scale = plot / highest if highest > 0 else 0.0
    bars = []
    for index, (label, value, written, whisker) in enumerate(items):
        y = TOP + index * BAR_ROW
        shown = clip(label, LABEL_CHARACTERS)
        bars.append(
            HBar(
                y=y,
                width=round(max(value * scale, 1.0), 1),
                label=shown,
                value=written,
                title=f"{label}: {written}",
                whisker_x=round(BAR_LABELS + whisker * scale, 1) if whisker else None,
                href=links[index] if index < len(links) else None,
            )
        )
    height = TOP + len(items) * BAR_ROW + 6
    return BarChart(WIDTH, height, BAR_LABELS, bars)


def counted(count: int, noun: str) -> str:
    """``1 pod``, ``2 pods``."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def failure_chart(rows: Sequence[dict[str, Any]]) -> BarChart:
    """Failed pods by their failure class, from ``failed_pod_classes``' rows."""
    return bar_chart(
        [(row["failure_class"], row["pods"], counted(row["pods"], "pod"), None) for row in rows]
    )


def duration_chart(rows: Sequence[dict[str, Any]], link: Leads = nowhere) -> BarChart:
    """The average duration of the finished jobs of each kind, the longest as a whisker,
    from ``stats``' rows by kind; each bar leading to ``link(kind)``."""
    finished = [row for row in rows if row["finished"]]
    return bar_chart(
        [
            (
                row["kind"],
                row["avg_duration_seconds"] or 0,
                f"{duration(row['avg_duration_seconds'])} avg, "
                f"{duration(row['max_duration_seconds'])} max",
                row["max_duration_seconds"],
            )
            for row in finished
        ],
        [link(row["kind"]) for row in finished],
    )


def owner_chart(rows: Sequence[dict[str, Any]], link: Leads = nowhere) -> BarChart:
    """Jobs per owner, from ``stats``' rows by owner; each bar leading to ``link(owner)``."""
    return bar_chart(
        [
            (row["owner"] or "(none)", row["jobs"], counted(row["jobs"], "job"), None)
            for row in rows
        ],
        [link(row["owner"]) for row in rows],
    )


def gpu_chart(rows: Sequence[dict[str, Any]] | None, link: Leads = nowhere) -> BarChart | None:
    """GPU-hours per owner, from the usage roll-up's rows by owner, each bar leading to
    ``link(owner)``; None (too many owners to rank) stays None."""
    if rows is None:
        return None
    return bar_chart(
        [
            (row["owner"] or "(none)", row["gpu_hours"], f"{number(row['gpu_hours'])} GPU-h", None)
            for row in rows
        ],
        [link(row["owner"]) for row in rows],
    )
