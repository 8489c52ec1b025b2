"""Usage's arithmetic, without a database: a window cut into UTC periods, a pod's time
cut to a window, percentiles, and the roll-up's rows as columns and CSV (decision 33)."""

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobarchive.core import csvsafe, efficiency
from jobarchive.reading.params import EARLIEST, LATEST, USAGE_GROUPS, BadQuery, Named, one_of

EVERY = ("day", "week", "month")
DEFAULT_DAYS = 30
# The most periods one answer may hold: a year by day, a decade by week or month.
MAX_PERIODS = 530
# The most rows (groups x periods) one answer may hold: a month by day of 322 groups.
# Groups are tenants' text (owners, queues), so without it one reader's request could
# build an answer of any size.
MAX_ROWS = 10_000
# Where a window is cut: what a DATETIME column holds, a day and a month within it, so
# that no period's end or whole day passes the calendar's ends.
FIRST = EARLIEST + datetime.timedelta(days=1)
LAST = LATEST.replace(day=1, hour=0, minute=0, second=0)
# How many failure classes a row names, the costliest first.
TOP_REASONS = 3
# By failure class (decision 42): failed jobs only, each under its class, or this one
# until the classifying pass has classified it (``maintenance.classifying``).
FAILURE = "failure"
UNCLASSIFIED = "Unclassified"
COUNTS = ("jobs", "succeeded", "failed")
# The percentiles of the queue waits a row gives (``queue_wait_p50_s``, ...).
WAIT_PERCENTS = (50, 95)
WAIT_FIGURES = tuple(f"queue_wait_p{p}_s" for p in WAIT_PERCENTS)
FIGURES = ("gpu_hours", "failed_gpu_hours", "cpu_hours", *WAIT_FIGURES)
# By Kueue's cluster queue (decision 44, ``reading.utilization``): other figures.
CLUSTER_QUEUE = "clusterqueue"
QUEUE_WAITS = ("queue_wait", "quota_wait", "start_wait")
QUEUE_FIGURES = (
    "allocated_gpu_hours",
    "quota_gpu_hours",
    "utilization",
    "borrowed_gpu_hours",
    "preempted_gpu_hours",
    *(f"{wait}_p{p}_s" for wait in QUEUE_WAITS for p in WAIT_PERCENTS),
)
# How well the GPUs, CPUs and memory were used (decision 47), weighted exactly as a
# job's figures (``efficiency.figures``), and how many of the row's jobs no pod of
# which was measured: none by cluster queue.
UNKNOWN_JOBS = "efficiency_unknown_jobs"
EFFICIENCY = (
    "gpu_activity_mean",
    "idle_gpu_hours",
    "unused_gpu_hours",
    "cpu_efficiency",
    "mem_peak_ratio",
    "energy_kwh",
    UNKNOWN_JOBS,
)
# The columns written as numbers; the group, the period and the classes are text.
NUMBERS = frozenset((*COUNTS, *FIGURES, *QUEUE_FIGURES, *EFFICIENCY))
REASONS = "top_failure_reasons"


class TooManyRows(BadQuery):
    """An answer that would pass ``MAX_ROWS``: bad input, which a coarser period may
    answer (the console's chart falls back to weeks)."""


class TooCostly(BadQuery):
    """A roll-up that outran its time limit (``JOBARCHIVE_USAGE_TIMEOUT``): answered as
    bad input, which a narrower window may answer, not as the server's failure."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the usage roll-up took longer than {seconds:g} s and was stopped: "
            "narrow the window (",
            Named("since"),
            ", ",
            Named("until"),
            ") or name a namespace",
        )


@dataclasses.dataclass(frozen=True)
class Period:
    """A part of a window: its label (the calendar period's first day, ``2026-11`` for a
    month), and where it starts and ends within the window (UTC)."""

    label: str
    start: datetime.datetime
    end: datetime.datetime


def calendar_start(moment: datetime.datetime, every: str) -> datetime.datetime:
    """The start of the UTC day, week (Monday) or month that holds ``moment``."""
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if every == "week":
        return day - datetime.timedelta(days=day.weekday())
    if every == "month":
        return day.replace(day=1)
    return day


def _next(start: datetime.datetime, every: str) -> datetime.datetime:
    if every == "month":
        if start.month == 12:
            return start.replace(year=start.year + 1, month=1)
        return start.replace(month=start.month + 1)
    return start + datetime.timedelta(days=7 if every == "week" else 1)


def _label(start: datetime.datetime, every: str) -> str:
    return start.strftime("%Y-%m" if every == "month" else "%Y-%m-%d")


def group_of(group_by: str | None) -> str:
    """The dimension asked for (``namespace`` when none); BadQuery for an unknown one."""
    return one_of("by", group_by, USAGE_GROUPS) or USAGE_GROUPS[0]


def window(
    since: datetime.datetime | None, until: datetime.datetime | None
) -> tuple[datetime.datetime, datetime.datetime]:
    """The window asked for: until now, from ``DEFAULT_DAYS`` before its end by default,
    cut to [``FIRST``, ``LAST``) (beyond, no bound); BadQuery when it ends before it
    starts."""
    end = min(until or datetime.datetime.now(datetime.UTC), LAST)
    start = max(since or end - datetime.timedelta(days=DEFAULT_DAYS), FIRST)
    if start >= end:
        if start >= LAST or end <= FIRST:
            raise BadQuery(
                Named("since"),
                f": the window lies outside {FIRST.date()} .. {LAST.date()}, the times answered",
            )
        if until is None:
            raise BadQuery(Named("since"), " must be before now (the default ", Named("until"), ")")
        raise BadQuery(Named("since"), " must be before ", Named("until"))
    return start, end


def periods(since: datetime.datetime, until: datetime.datetime, every: str | None) -> list[Period]:
    """The window [since, until) as one period (labelled by its start), or cut at UTC
    midnights, Mondays or firsts of the month; ValueError past ``MAX_PERIODS``."""
    since, until = since.astimezone(datetime.UTC), until.astimezone(datetime.UTC)
    if every is None:
        return [Period(since.isoformat().replace("+00:00", "Z"), since, until)]
    cut: list[Period] = []
    start = calendar_start(since, every)
    while start < until:
        if len(cut) == MAX_PERIODS:
            raise ValueError(f"more than {MAX_PERIODS} periods of a {every}")
        end = _next(start, every)
        cut.append(Period(_label(start, every), max(start, since), min(end, until)))
        start = end
    return cut


def overlap(
    start: datetime.datetime | None,
    end: datetime.datetime | None,
    since: datetime.datetime,
    until: datetime.datetime,
) -> float:
    """The seconds of [start, end) inside [since, until): nothing for a pod that never
    started; ``end`` is the finish, or now while it runs."""
    if start is None or end is None:
        return 0.0
    return max(0.0, (min(end, until) - max(start, since)).total_seconds())


def rank(count: int, percent: int) -> int:
    """The nearest rank of the ``percent``th percentile among ``count`` values (1 for
    one value): the least k with 100 k >= percent x count, in integers, so that the
    database's ranking (``queries.rollups``) picks the same value."""
    return max(1, -(-percent * count // 100))


def empty_row() -> dict[str, Any]:
    """A group's figures before any is added: counts, seconds, waits, reasons."""
    return {
        **dict.fromkeys(COUNTS, 0),
        "gpu_s": 0.0,
        "failed_gpu_s": 0.0,
        "cpu_ms": 0.0,
        "waits": dict.fromkeys(WAIT_PERCENTS),
        "reasons": {},
        "rates": dict.fromkeys(efficiency.RATES),
        UNKNOWN_JOBS: 0,
    }


def check_rows(group: str, counts: Iterable[Mapping[str, Any]], periods: int) -> None:
    """BadQuery when the answer would pass ``MAX_ROWS``: per group, the periods its jobs'
    lives span (``counts``: ``grp`` and the first and last period, ``n0`` and ``n1``)."""
    spans: dict[Any, list[tuple[int, int]]] = {}
    for found in counts:
        span = (clamp(found["n0"], periods), clamp(found["n1"], periods))
        spans.setdefault(found["grp"], []).append(span)
    rows = 0
    for group_spans in spans.values():
        covered = -1
        for first, last in sorted(group_spans):
            if last > covered:
                rows += last - max(first, covered + 1) + 1
                covered = last
    if rows > MAX_ROWS:
        raise TooManyRows(
            Named("by"),
            f": {len(spans):,} of {group} over {periods:,} periods would be {rows:,} rows, "
            f"more than {MAX_ROWS:,}; name a namespace"
            + (", a longer every or a shorter window" if periods > 1 else ""),
        )


def clamp(index: Any, periods: int) -> int:
    """A period's index as the database computed it, within the periods there are."""
    return min(max(int(index), 0), periods - 1)


def cut(
    sums: Mapping[str, Any], bounds: Sequence[tuple[float, float]], name: str = "g"
) -> list[tuple[int, float]]:
    """Pods' weighted time cut into periods from sums over pods that begin in period
    ``n0`` and end in ``n1`` (times ``a``, ``b`` as seconds from the window's start,
    already cut to it): the sum of their weights (``name``: ``g``, GPUs) and of the
    weights times ``a`` and times ``b`` (``ga``, ``gb``). A period between gets its whole
    length times the sum; the first, from ``a`` to its end; the last, from its start to
    ``b``. So no pod is read once per period. Returns (period, weight-seconds); none
    when no pod's weight was known (the sums are NULL)."""
    if sums.get(name) is None:
        return []
    first, last = clamp(sums["n0"], len(bounds)), clamp(sums["n1"], len(bounds))
    f = float(sums[name])
    fa, fb = float(sums[f"{name}a"] or 0), float(sums[f"{name}b"] or 0)
    if first == last:
        return [(first, fb - fa)]
    parts = [(first, bounds[first][1] * f - fa)]
    parts += [(n, (bounds[n][1] - bounds[n][0]) * f) for n in range(first + 1, last)]
    parts.append((last, fb - bounds[last][0] * f))
    return parts


def spread(
    sums: Mapping[str, Any], bounds: Sequence[tuple[float, float]]
) -> list[tuple[int, float, float]]:
    """Pods' time cut into periods (``cut``) as GPU-seconds (``g``: GPUs) and
    CPU-millicore-seconds (``c``: millicores). Returns (period, GPU-seconds,
    CPU-millicore-seconds)."""
    cpu = dict(cut({**sums, "c": sums["c"] or 0}, bounds, "c"))
    return [(n, gpu_s, cpu[n]) for n, gpu_s in cut({**sums, "g": sums["g"] or 0}, bounds)]


def add_rates(row: dict[str, Any], rates: Mapping[str, Any]) -> None:
    """Add pods' efficiency weights times their seconds (``efficiency.RATES``, None or
    absent where none was known) to a group's row."""
    known = {name: rates.get(name) for name in efficiency.RATES}
    # A database's sum of integers is a Decimal.
    efficiency.add_rates(
        row["rates"], {k: None if v is None else float(v) for k, v in known.items()}, 1.0
    )


def add_hours(
    row: dict[str, Any],
    job: str,
    gpu_s: float,
    cpu_ms: float,
    reasons: Mapping[str, str],
    counts: bool = True,
) -> None:
    """Add pods' seconds to a group's row: ``gpu_s``, ``cpu_ms``, and for a failed job
    (``job`` set) its GPU-seconds again as failed, under the job's class (``reasons``:
    by job; ``UNCLASSIFIED`` when it has none yet), the job among the class's jobs
    unless ``counts`` says another part counted it."""
    row["gpu_s"] += gpu_s
    row["cpu_ms"] += cpu_ms
    if job:
        row["failed_gpu_s"] += gpu_s
        cost = row["reasons"].setdefault(reasons.get(job, UNCLASSIFIED), [0.0, set(), 0])
        cost[0] += gpu_s
        if counts:
            cost[1].add(job)


def add_wait(row: dict[str, Any], k: Any, count: Any, wait: Any) -> None:
    """Set a group's waits at the percentiles whose rank among its ``count`` waits is
    ``k`` (one wait may be both)."""
    for percent in WAIT_PERCENTS:
        if rank(int(count), percent) == int(k):
            row["waits"][percent] = round(float(wait), 1)


def add_days(
    row: dict[str, Any], reason: str | None, gpu_s: float, cpu_ms: float, jobs: int
) -> None:
    """Add the daily roll-up's seconds to a group's row, for failed jobs (``reason``
    set: their class) also as failed under their class, with how many jobs they are."""
    row["gpu_s"] += gpu_s
    row["cpu_ms"] += cpu_ms
    if reason is not None:
        row["failed_gpu_s"] += gpu_s
        cost = row["reasons"].setdefault(reason, [0.0, set(), 0])
        cost[0] += gpu_s
        cost[2] += jobs


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 3)


def finished_row(
    group: str, value: Any, period: str | None, row: Mapping[str, Any]
) -> dict[str, Any]:
    """A group's row as answered, under ``columns``' names."""
    costliest = sorted(row["reasons"].items(), key=lambda item: (-item[1][0], item[0]))
    classes = {
        REASONS: [
            {"reason": reason, "gpu_hours": _hours(seconds), "jobs": len(jobs) + more}
            for reason, (seconds, jobs, more) in costliest[:TOP_REASONS]
        ]
    }
    return {
        group: value,
        **({"period": period} if period is not None else {}),
        **{name: row[name] for name in COUNTS},
        "gpu_hours": _hours(row["gpu_s"]),
        "failed_gpu_hours": _hours(row["failed_gpu_s"]),
        "cpu_hours": _hours(row["cpu_ms"] / 1000),
        **{name: row["waits"][p] for name, p in zip(WAIT_FIGURES, WAIT_PERCENTS, strict=True)},
        **(classes if group != FAILURE else {}),
        **efficiency_figures(row),
    }


def efficiency_figures(row: Mapping[str, Any]) -> dict[str, Any]:
    """A group's efficiency (``EFFICIENCY``) from its summed weights, rounded as a job's
    are (ratios and kWh to 4 places, hours to 3 as usage's), None where unknown."""
    found = efficiency.figures(row["rates"])
    return {
        **{
            name: None if value is None else round(value, 3 if name.endswith("hours") else 4)
            for name, value in found.items()
        },
        UNKNOWN_JOBS: row[UNKNOWN_JOBS],
    }


def columns(group: str, every: str | None) -> tuple[str, ...]:
    """The columns of a roll-up's rows: the group under its dimension's name, the
    period when asked for, the counts, the figures, the costliest failure classes (by
    failure class, none: the group is the class), the efficiency; by cluster queue, the queue's
    figures (``QUEUE_FIGURES``)."""
    period = ("period",) if every else ()
    if group == CLUSTER_QUEUE:
        return (group, *period, *QUEUE_FIGURES)
    if group == FAILURE:
        return (group, *period, *COUNTS, *FIGURES, *EFFICIENCY)
    return (group, *period, *COUNTS, *FIGURES, REASONS, *EFFICIENCY)


def reasons_text(reasons: Iterable[Mapping[str, Any]]) -> str:
    """The costliest failure classes in one CSV cell: ``class=GPU-hours`` joined by ``; ``."""
    return "; ".join(f"{reason['reason']}={reason['gpu_hours']}" for reason in reasons)


def to_csv(rows: Iterable[Mapping[str, Any]], names: Sequence[str]) -> str:
    """The rows as CSV with a header line, by the one writer (``csvsafe``): the counts
    and figures as numbers (a missing figure an empty cell), every other column as text,
    the failure classes as ``reasons_text``."""
    cells = (
        {**row, REASONS: reasons_text(row[REASONS])} if REASONS in names else row for row in rows
    )
    return csvsafe.table(cells, names, NUMBERS)


def asked_csv(rows: Iterable[Mapping[str, Any]], values: Mapping[str, Any]) -> str:
    """A roll-up's rows as CSV, under the columns of the request parsed into ``values``
    (its ``group_by`` and ``every``): the API's CSV and the console's download alike."""
    return to_csv(rows, columns(group_of(values.get("group_by")), values.get("every")))
