"""Usage by Kueue's cluster queue (decision 44), pure: per queue and period, GPU-hours
allocated against the quota in force, as sreport's cluster-utilization report gives a
Slurm cluster's.

Times are seconds from the window's start. ``allocated``: the GPU-seconds of the pods
of jobs Kueue admitted to the queue (each pod in the attempt reserved last before it
started, ``core.attempts``), cut to the period: the one GPU-hour definition (decision
32). ``quota``: the queue's nominal GPUs (every flavor and accelerator resource) times
the seconds each was in force within the period, integrated across changes.
``borrowed``: the GPU-seconds allocated beyond the nominal quota in force, moment by
moment (what the queue held of its cohort's), counted while a quota is recorded.
``preempted``: the allocated GPU-seconds of attempts a preemption ended.
"""

import bisect
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobarchive.reading import usage

# A stretch of time and the GPUs held (a pod's) or granted (a quota's) over it.
Span = tuple[float, float, float]


def per_period(spans: Iterable[Span], bounds: Sequence[tuple[float, float]]) -> list[float]:
    """The GPU-seconds of ``spans`` within each period of ``bounds`` (consecutive, in
    order): each span cut at the periods from the one it begins in to the one it ends in."""
    totals = [0.0] * len(bounds)
    starts = [lo for lo, _ in bounds]
    for start, end, gpus in spans:
        for n in range(max(0, bisect.bisect_right(starts, start) - 1), len(bounds)):
            lo, hi = bounds[n]
            if lo >= end:
                break
            seconds = min(end, hi) - max(start, lo)
            if seconds > 0:
                totals[n] += gpus * seconds
    return totals


def borrowed(
    held: Iterable[Span], granted: Iterable[Span], bounds: Sequence[tuple[float, float]]
) -> list[float]:
    """Per period, the GPU-seconds held beyond the GPUs granted at each moment, while a
    quota was in force: one sweep over the moments either changes."""
    changes: dict[float, list[float]] = {}
    for start, end, gpus in held:
        if end > start:
            changes.setdefault(start, [0.0, 0.0, 0])[0] += gpus
            changes.setdefault(end, [0.0, 0.0, 0])[0] -= gpus
    for start, end, gpus in granted:
        if end > start:
            changes.setdefault(start, [0.0, 0.0, 0])[1] += gpus
            changes.setdefault(start, [0.0, 0.0, 0])[2] += 1
            changes.setdefault(end, [0.0, 0.0, 0])[1] -= gpus
            changes.setdefault(end, [0.0, 0.0, 0])[2] -= 1
    for lo, _ in bounds:
        changes.setdefault(lo, [0.0, 0.0, 0])
    starts = [lo for lo, _ in bounds]
    totals = [0.0] * len(bounds)
    holding = granting = 0.0
    in_force = 0.0
    moments = sorted(changes)
    for moment, after in itertools.pairwise(moments):
        step = changes[moment]
        holding, granting, in_force = holding + step[0], granting + step[1], in_force + step[2]
        n = bisect.bisect_right(starts, moment) - 1
        if n < 0 or moment >= bounds[n][1] or in_force <= 0:
            continue
        beyond = holding - granting
        if beyond > 0:
            totals[n] += beyond * (min(after, bounds[n][1]) - moment)
    return totals


def percentile(values: Sequence[float], percent: int) -> float | None:
    """The nearest-rank percentile (``usage.rank``) of ``values``, in tenths of a second."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[usage.rank(len(ordered), percent) - 1], 1)


def percentiles(waits: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each wait's percentiles (``usage.WAIT_PERCENTS``) under their columns' names, of
    the waits that have values."""
    found: dict[str, float] = {}
    for wait, values in waits.items():
        for p in usage.WAIT_PERCENTS:
            value = percentile(values, p)
            if value is not None:
                found[f"{wait}_p{p}_s"] = value
    return found


def _hours(seconds: float) -> float:
    return round(seconds / 3600, 3)


def queue_row(
    queue: str,
    period: str | None,
    figures: Mapping[str, float | None],
    waits: Mapping[str, float],
) -> dict[str, Any]:
    """A queue's row in a period as answered, under ``usage.columns``' names: the
    GPU-seconds (``allocated``, ``quota``: None without a quota recorded, ``borrowed``,
    ``preempted``) as hours, utilization (allocated / quota, None without a quota), and
    each wait's percentiles (``percentiles``; None for a wait without values)."""
    allocated, quota = figures["allocated"] or 0.0, figures["quota"]
    known = quota is not None
    return {
        usage.CLUSTER_QUEUE: queue,
        **({"period": period} if period is not None else {}),
        "allocated_gpu_hours": _hours(allocated),
        "quota_gpu_hours": _hours(quota) if quota is not None else None,
        "utilization": round(allocated / quota, 4) if quota else None,
        "borrowed_gpu_hours": _hours(figures["borrowed"] or 0.0) if known else None,
        "preempted_gpu_hours": _hours(figures["preempted"] or 0.0),
        **{
            f"{wait}_p{p}_s": waits.get(f"{wait}_p{p}_s")
            for wait in usage.QUEUE_WAITS
            for p in usage.WAIT_PERCENTS
        },
    }
