"""``jobarchive eff JOB``: a job's efficiency as Slurm's ``seff`` reports it (decision
45): its figures, per replica type and per pod, then plain advice; every line within 80
columns."""

from collections.abc import Mapping, Sequence
from typing import Any

import click

from jobarchive.cli import rendering
from jobarchive.cli.archive import Where
from jobarchive.cli.options import output_option
from jobarchive.cli.reads import archive, one_job
from jobarchive.cli.widths import Column, print_table

UNKNOWN = "-"
POD_COLUMNS = (
    Column("POD", 0),
    Column("GPUS", 1),
    Column("ACTIVE", 1),
    Column("PEAK", 3),
    Column("GPU MEM", 2),
    Column("CPU", 2),
    Column("MEM", 2),
    Column("KWH", 4),
)
REPLICA_COLUMNS = (
    Column("REPLICA", 0),
    Column("PODS", 1),
    Column("ACTIVE", 1),
    Column("IDLE GPU-H", 2),
    Column("UNUSED", 2),
    Column("CPU", 3),
    Column("MEM", 3),
)


def percent(value: float | None) -> str:
    """A ratio as a whole percentage; ``-`` when unknown."""
    return UNKNOWN if value is None else f"{value * 100:.0f}%"


def number(value: float | None, digits: int = 1) -> str:
    """A figure with ``digits`` decimals; ``-`` when unknown."""
    return UNKNOWN if value is None else f"{value:,.{digits}f}"


def summary_lines(figures: Mapping[str, Any]) -> list[str]:
    """The job's figures in a few lines."""
    lines = [
        f"GPU-hours {number(figures['gpu_hours'])}, GPU activity "
        f"{percent(figures['gpu_activity_mean'])}, idle GPU-hours "
        f"{number(figures['idle_gpu_hours'])}",
        f"GPUs never used {number(figures['unused_gpus'], 0)} "
        f"({number(figures['unused_gpu_hours'])} GPU-hours), GPU memory peak "
        f"{percent(figures['gpu_memory_peak'])}",
        f"CPU efficiency {percent(figures['cpu_efficiency'])}, memory peak "
        f"{percent(figures['mem_peak_ratio'])} of the limit, energy "
        f"{number(figures['energy_kwh'], 2)} kWh",
    ]
    if figures["unknown"] or figures["too_short"]:
        lines.append(
            f"Of {figures['pods']} pods: {figures['unknown']} without data, "
            f"{figures['too_short']} too short to judge"
        )
    return lines


def _pod_row(pod: Mapping[str, Any]) -> list[str]:
    return [
        str(pod["name"]),
        str(pod["gpus"]),
        percent(pod.get("gpu_activity_mean")),
        percent(pod.get("gpu_activity_peak")),
        percent(pod.get("gpu_memory_peak")),
        percent(pod.get("cpu_efficiency")),
        percent(pod.get("memory_peak_ratio")),
        number(pod.get("energy_kwh"), 2),
    ]


def _replica_row(name: str, figures: Mapping[str, Any]) -> list[str]:
    return [
        name,
        str(figures["pods"]),
        percent(figures["gpu_activity_mean"]),
        number(figures["idle_gpu_hours"]),
        number(figures["unused_gpus"], 0),
        percent(figures["cpu_efficiency"]),
        percent(figures["mem_peak_ratio"]),
    ]


def print_efficiency(efficiency: Mapping[str, Any], wide: bool) -> None:
    """A job's efficiency: its summary, its replica types, its pods, the advice."""
    for line in summary_lines(efficiency):
        rendering.echo(line)
    replicas: Mapping[str, Any] = efficiency["replicas"]
    rendering.echo("")
    print_table(REPLICA_COLUMNS, [_replica_row(n, f) for n, f in replicas.items()], wide)
    pods: Sequence[Mapping[str, Any]] = efficiency["per_pod"]
    rendering.echo("")
    print_table(POD_COLUMNS, [_pod_row(pod) for pod in pods], wide)
    if efficiency["per_pod_more"]:
        rendering.echo(f"(the first {len(pods)} pods; the figures above weigh them all)")
    if efficiency["advice"]:
        rendering.echo("")
        rendering.echo("Advice:")
        for line in efficiency["advice"]:
            rendering.echo(f"  {line}")


@click.command()
@click.argument("reference")
@output_option
@click.pass_obj
def eff(where: Where, /, reference: str, output: str) -> None:
    """How well a job (NAMESPACE/NAME, NAMESPACE/UID or UID) used what it was given:
    GPU activity, GPUs never used, GPU memory, CPU, memory, energy, and advice."""
    detail = one_job(archive(where).job(reference, limit=1), reference, output, "eff")
    if detail is None:
        return
    efficiency = detail.get("efficiency")
    if output == "json":
        rendering.print_json(efficiency)
        return
    if efficiency is None:
        rendering.echo(f"{reference}: no pod of it has been summarised from Prometheus")
        return
    print_efficiency(efficiency, wide=output == "wide")
