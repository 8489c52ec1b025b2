"""Plain advice from a job's efficiency (decision 45), pure: one line per threshold
crossed, in the order a user should act on them. The thresholds are documented in
docs/efficiency.md and nowhere else changed.

A job of several replica types is advised per type, each line led by the type's name
(``Worker: 8 GPUs requested, 2 never used: request 6``): each type's pods are requested
apart, and a job-wide sum would hide an idle type behind a busy one.
"""

from collections.abc import Mapping

from jobarchive.core.efficiency import JobEfficiency

# Below this mean GPU activity, the GPUs mostly waited: on data, on the CPU, on I/O.
LOW_ACTIVITY = 0.15
# Below this GPU memory peak, a smaller GPU (or a MIG slice) would have held the job.
LOW_GPU_MEMORY = 0.25
# Below this share of the CPUs requested, fewer would have done.
LOW_CPU = 0.25
# Below this peak of the memory limit, the limit (and request) can come down.
LOW_MEMORY = 0.25


def _percent(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def advice(figures: JobEfficiency, gpus: int) -> list[str]:
    """What to change, from a job's figures and the GPUs its pods requested in all."""
    return _changes(figures, gpus) + _unknown(figures)


def job_advice(
    figures: JobEfficiency, gpus: int, replicas: Mapping[str, tuple[JobEfficiency, int]]
) -> list[str]:
    """A job's advice: ``advice`` when it has one replica type (or none); else each
    type's changes (``replicas``: its figures and the GPUs its pods requested), by name,
    then the pods without data, job-wide."""
    if len(replicas) < 2:
        return advice(figures, gpus)
    lines = [
        f"{name}: {line}"
        for name, (found, requested) in sorted(replicas.items())
        for line in _changes(found, requested)
    ]
    return lines + _unknown(figures)


def _unknown(figures: JobEfficiency) -> list[str]:
    if not figures.unknown:
        return []
    return [f"{figures.unknown} of {figures.pods} pods have no data in Prometheus"]


def _changes(figures: JobEfficiency, gpus: int) -> list[str]:
    """One line per threshold crossed."""
    lines = []
    if figures.unused_gpus:
        lines.append(
            f"{gpus} GPUs requested, {figures.unused_gpus} never used: "
            f"request {gpus - figures.unused_gpus}"
        )
    if figures.gpu_activity_mean is not None and figures.gpu_activity_mean < LOW_ACTIVITY:
        lines.append(
            f"GPU activity {_percent(figures.gpu_activity_mean)}: "
            "the input pipeline is the likely bottleneck"
        )
    if figures.gpu_memory_peak is not None and figures.gpu_memory_peak < LOW_GPU_MEMORY:
        lines.append(
            f"GPU memory peak {_percent(figures.gpu_memory_peak)}: "
            "a smaller GPU or a MIG slice would hold it"
        )
    if figures.cpu_efficiency is not None and figures.cpu_efficiency < LOW_CPU:
        lines.append(f"CPU efficiency {_percent(figures.cpu_efficiency)}: request fewer CPUs")
    if figures.mem_peak_ratio is not None and figures.mem_peak_ratio < LOW_MEMORY:
        lines.append(f"memory peak {_percent(figures.mem_peak_ratio)} of the limit")
    return lines
