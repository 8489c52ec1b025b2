"""A pod's efficiency from Prometheus' answer to its query (``core.promql``), and a
job's from its pods' (decision 45), pure.

Per pod: GPU activity, mean and peak (dcgm-exporter's ``DCGM_FI_PROF_GR_ENGINE_ACTIVE``,
a ratio; else ``DCGM_FI_DEV_GPU_UTIL``, a percentage, coarser), the mean over the pod's
GPUs; the GPU memory peak as used / (used + free), the highest of its GPUs; the GPUs
never used (a peak activity of zero); the energy its GPUs drew; CPU efficiency, the CPU
seconds its containers used / (CPU requested x run time); and memory, the peak of its
containers' summed working set / its memory limit (else its request).

What Prometheus does not have is unknown (None), never zero; a pod that ran shorter
than two scrape intervals is too short to judge.
"""

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.core import promql
from jobarchive.core.quantities import parse_quantity
from jobarchive.core.times import aware, seconds

# A summary's outcome.
MEASURED = "measured"
# Ran shorter than two scrape intervals: nothing is judged.
TOO_SHORT = "too_short"
# Prometheus has no series of the pod (not scraped, or forgotten).
NO_DATA = "no_data"
# Prometheus refused the query or answered something else than a vector.
REFUSED = "refused"
OUTCOMES = (MEASURED, TOO_SHORT, NO_DATA, REFUSED)
# Where activity was read from.
ENGINE_ACTIVE = "engine_active"
GPU_UTIL = "gpu_util"
# dcgm-exporter's energy counter is in millijoules.
JOULES_PER_MILLIJOULE = 1e-3
# A GPU's identity: its UUID where exported, else its index; a MIG instance's id beside.
GPU_LABELS = ("UUID", "gpu")
MIG_LABEL = "GPU_I_ID"


@dataclasses.dataclass(frozen=True)
class Sample:
    """One series of Prometheus' instant vector: its labels (``__name__`` among them
    when the query kept it) and its value (never NaN: the client leaves those out)."""

    labels: Mapping[str, str]
    value: float


@dataclasses.dataclass(frozen=True)
class GpuUse:
    """One GPU's activity over the pod's run (a ratio) and its memory peak."""

    gpu: str
    mean: float | None
    peak: float | None
    memory_peak: float | None


@dataclasses.dataclass(frozen=True)
class PodEfficiency:
    """A pod's figures; each None where unknown."""

    outcome: str
    source: str | None = None
    gpu_activity_mean: float | None = None
    gpu_activity_peak: float | None = None
    gpu_memory_peak: float | None = None
    gpus_seen: int = 0
    unused_gpus: int | None = None
    energy_joules: float | None = None
    cpu_seconds: float | None = None
    cpu_efficiency: float | None = None
    memory_peak_bytes: float | None = None
    memory_peak_ratio: float | None = None
    per_gpu: tuple[GpuUse, ...] = ()


@dataclasses.dataclass(frozen=True)
class Allocated:
    """What a pod was given and how long it ran."""

    run_seconds: float
    gpus: int
    cpu_millis: int | None
    memory_bytes: int | None


def memory_given(resources: str | None, request: int | None) -> int | None:
    """A pod's memory limit in bytes from its ``resources`` JSON, else its request."""
    try:
        limits = json.loads(resources or "{}").get("limits") or {}
    except (ValueError, AttributeError):
        limits = {}
    quantity = parse_quantity(limits.get("memory")) if isinstance(limits, dict) else None
    return int(quantity.value) if quantity is not None and quantity.value > 0 else request


def allocated(pod: Mapping[str, Any]) -> Allocated:
    """What a pod row says it was given, and how long it ran."""
    run = seconds(aware(pod["gmt_started"]), aware(pod["gmt_finished"]))
    return Allocated(
        run_seconds=max(0.0, run or 0.0),
        gpus=pod["gpus"] or 0,
        cpu_millis=pod["cpu_millis"],
        memory_bytes=memory_given(pod["resources"], pod["memory_bytes"]),
    )


def gpu_key(labels: Mapping[str, str]) -> str:
    """The GPU a series is of: UUID (else index), with its MIG instance if any."""
    gpu = next((labels[name] for name in GPU_LABELS if labels.get(name)), "?")
    instance = labels.get(MIG_LABEL)
    return f"{gpu}/{instance}" if instance else gpu


def _by_figure(samples: Sequence[Sample]) -> dict[str, list[Sample]]:
    found: dict[str, list[Sample]] = {}
    for sample in samples:
        if sample.value is not None and math.isfinite(sample.value):
            found.setdefault(sample.labels.get(promql.FIGURE, ""), []).append(sample)
    return found


def _per_gpu(samples: Sequence[Sample], scale: float = 1.0) -> dict[str, float]:
    return {gpu_key(s.labels): s.value * scale for s in samples}


def _activity(
    figures: Mapping[str, list[Sample]],
) -> tuple[str | None, dict[str, float], dict[str, float]]:
    """Activity per GPU, mean and peak, from the finer family where it is present."""
    if figures.get("active_mean"):
        return (
            ENGINE_ACTIVE,
            _per_gpu(figures["active_mean"]),
            _per_gpu(figures.get("active_peak", [])),
        )
    if figures.get("util_mean"):
        scale = 0.01
        means = _per_gpu(figures["util_mean"], scale)
        return GPU_UTIL, means, _per_gpu(figures.get("util_peak", []), scale)
    return None, {}, {}


def _memory_peaks(figures: Mapping[str, list[Sample]]) -> dict[str, float]:
    """Per GPU, its framebuffer's peak use / its size (used + free, averaged)."""
    used = _per_gpu(figures.get("fb_used_mean", []))
    free = _per_gpu(figures.get("fb_free_mean", []))
    peaks = _per_gpu(figures.get("fb_used_peak", []))
    return {
        gpu: peak / (used[gpu] + free[gpu])
        for gpu, peak in peaks.items()
        if gpu in used and gpu in free and used[gpu] + free[gpu] > 0
    }


def _spent(figures: Mapping[str, list[Sample]], last: str, first: str) -> float | None:
    """A counter's last sample less its first, summed over its series; None if none."""
    starts = {tuple(sorted(s.labels.items())): s.value for s in figures.get(first, [])}
    ends = figures.get(last, [])
    if not ends:
        return None
    total = 0.0
    for sample in ends:
        labels = dict(sample.labels)
        labels[promql.FIGURE] = first
        total += max(0.0, sample.value - starts.get(tuple(sorted(labels.items())), 0.0))
    return total


def summarise(samples: Sequence[Sample], given: Allocated) -> PodEfficiency:
    """A pod's efficiency from Prometheus' answer to its query."""
    figures = _by_figure(samples)
    if not figures:
        return PodEfficiency(NO_DATA)
    source, means, peaks = _activity(figures)
    memory = _memory_peaks(figures)
    gpus = sorted(set(means) | set(memory))
    per_gpu = tuple(GpuUse(g, means.get(g), peaks.get(g), memory.get(g)) for g in gpus)
    energy = _spent(figures, "energy_last", "energy_first")
    cpu = _spent(figures, "cpu_last", "cpu_first")
    working_set = figures.get(promql.MEMORY_PEAK)
    memory_peak = max(s.value for s in working_set) if working_set else None
    return PodEfficiency(
        outcome=MEASURED,
        source=source,
        gpu_activity_mean=sum(means.values()) / len(means) if means else None,
        gpu_activity_peak=max(peaks.values()) if peaks else None,
        gpu_memory_peak=max(memory.values()) if memory else None,
        gpus_seen=len(means),
        unused_gpus=sum(1 for peak in peaks.values() if peak <= 0.0) if peaks else None,
        energy_joules=energy * JOULES_PER_MILLIJOULE if energy is not None else None,
        cpu_seconds=cpu,
        cpu_efficiency=_ratio(cpu, _cpu_seconds_given(given)),
        memory_peak_bytes=memory_peak,
        memory_peak_ratio=_ratio(memory_peak, given.memory_bytes),
        per_gpu=per_gpu,
    )


def _cpu_seconds_given(given: Allocated) -> float | None:
    if not given.cpu_millis:
        return None
    return given.cpu_millis / 1000 * given.run_seconds


def _ratio(used: float | None, given: float | None) -> float | None:
    if used is None or not given:
        return None
    return used / given


def too_short(run_seconds: float, scrape_interval: float) -> bool:
    """Whether a run is too short to judge: shorter than two scrape intervals."""
    return run_seconds < 2 * scrape_interval


@dataclasses.dataclass(frozen=True)
class JobEfficiency:
    """A job's (or a group's) figures from its pods': means weighted by what each pod
    was given (GPU activity by GPU-hours, CPU by CPU-hours requested, memory by its
    limit's byte-hours), sums of the rest; ``unknown`` pods had no summary or no data,
    ``too_short`` ran too briefly to judge."""

    gpu_hours: float = 0.0
    gpu_activity_mean: float | None = None
    idle_gpu_hours: float | None = None
    unused_gpus: int | None = None
    unused_gpu_hours: float | None = None
    gpu_memory_peak: float | None = None
    cpu_efficiency: float | None = None
    mem_peak_ratio: float | None = None
    energy_kwh: float | None = None
    pods: int = 0
    unknown: int = 0
    too_short: int = 0


JOULES_PER_KWH = 3.6e6


def _total(values: Sequence[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return sum(known) if known else None


# A pod's weights per second of its run (``rates``), summed over seconds, pods and
# periods: GPUs whose activity is known and their activity, never-used GPUs, energy
# drawn, CPU millicores requested whose use is known and their use, memory given whose
# peak is known and its peak. A group's figures are quotients of these sums (``figures``).
RATES = (
    "measured_gpu_s",
    "active_gpu_s",
    "unused_gpu_s",
    "energy_j",
    "measured_cpu_ms",
    "used_cpu_ms",
    "measured_mem_bs",
    "peak_mem_bs",
)


def rates(given: Allocated, pod: PodEfficiency | None) -> dict[str, float | None]:
    """What one second of a pod's run weighs in a job's (or a group's) figures, each
    None where unknown: a pod not measured weighs nothing. The same weights for a job
    (times its run) and for a period (times its seconds there), so that a group of one
    job has the job's figures; energy is spread evenly over the run."""
    found: dict[str, float | None] = dict.fromkeys(RATES)
    if pod is None or pod.outcome != MEASURED:
        return found
    if pod.gpu_activity_mean is not None:
        found["measured_gpu_s"] = float(given.gpus)
        found["active_gpu_s"] = given.gpus * pod.gpu_activity_mean
    if pod.unused_gpus is not None:
        found["unused_gpu_s"] = float(pod.unused_gpus)
    if pod.energy_joules is not None and given.run_seconds > 0:
        found["energy_j"] = pod.energy_joules / given.run_seconds
    if pod.cpu_efficiency is not None and given.cpu_millis:
        found["measured_cpu_ms"] = float(given.cpu_millis)
        found["used_cpu_ms"] = given.cpu_millis * pod.cpu_efficiency
    if pod.memory_peak_ratio is not None and given.memory_bytes:
        found["measured_mem_bs"] = float(given.memory_bytes)
        found["peak_mem_bs"] = given.memory_bytes * pod.memory_peak_ratio
    return found


def _quotient(used: float | None, given: float | None) -> float | None:
    return used / given if used is not None and given else None


def figures(sums: Mapping[str, float | None]) -> dict[str, float | None]:
    """A group's figures from its pods' ``rates`` times their seconds, summed (None
    where no pod's was known): GPU activity, idle and never-used GPU-hours, CPU
    efficiency, memory peak ratio, energy in kWh; None where nothing is known."""
    measured, active = sums.get("measured_gpu_s"), sums.get("active_gpu_s")
    unused, energy = sums.get("unused_gpu_s"), sums.get("energy_j")
    return {
        "gpu_activity_mean": _quotient(active, measured),
        "idle_gpu_hours": (measured - (active or 0.0)) / 3600 if measured is not None else None,
        "unused_gpu_hours": unused / 3600 if unused is not None else None,
        "cpu_efficiency": _quotient(sums.get("used_cpu_ms"), sums.get("measured_cpu_ms")),
        "mem_peak_ratio": _quotient(sums.get("peak_mem_bs"), sums.get("measured_mem_bs")),
        "energy_kwh": energy / JOULES_PER_KWH if energy is not None else None,
    }


def add_rates(
    sums: dict[str, float | None], found: Mapping[str, float | None], seconds: float
) -> None:
    """Add a pod's ``rates`` over ``seconds`` to ``sums``, an unknown adding nothing
    (a sum stays None until something known is added)."""
    for name in RATES:
        rate = found.get(name)
        if rate is not None:
            sums[name] = (sums.get(name) or 0.0) + rate * seconds


def weigh(pods: Sequence[tuple[Allocated, PodEfficiency | None]]) -> JobEfficiency:
    """A job's figures from its pods' allocations and summaries (None: not summarised),
    their ``rates`` over their runs."""
    sums: dict[str, float | None] = dict.fromkeys(RATES)
    unused_count: list[float | None] = []
    for given, pod in pods:
        add_rates(sums, rates(given, pod), given.run_seconds)
        if pod is not None and pod.outcome == MEASURED and pod.unused_gpus is not None:
            unused_count.append(pod.unused_gpus)
    outcomes = [pod.outcome if pod else None for _, pod in pods]
    memory_peaks = [p.gpu_memory_peak for _, p in pods if p and p.gpu_memory_peak is not None]
    count = _total(unused_count)
    return JobEfficiency(
        gpu_hours=sum(given.gpus * given.run_seconds for given, _ in pods) / 3600,
        unused_gpus=int(count) if count is not None else None,
        gpu_memory_peak=max(memory_peaks) if memory_peaks else None,
        pods=len(pods),
        unknown=sum(1 for outcome in outcomes if outcome in (None, NO_DATA, REFUSED)),
        too_short=outcomes.count(TOO_SHORT),
        **figures(sums),
    )
