"""The export's columns, declared once: name, type and meaning (docs/usage-and-exports.md's
table is checked against them), and a job's usage as one row of them (pure)."""

import dataclasses
import datetime
import json
from typing import Any

from jobarchive.reading.queries.facts import JobUsage


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its name, its type as Arrow names it, what it means."""

    name: str
    type: str
    meaning: str


# A job's figures from Kueue's attempts (``core.attempts``), in the export.
_KUEUE_COLUMNS = (
    ("attempts", "int32", "Kueue's admissions of it (decision 43)"),
    ("preemptions", "int32", "its attempts that a preemption ended"),
    ("preempted_gpu_hours", "double", "GPU-hours of its pods in attempts a preemption ended"),
    ("quota_wait_s", "double", "seconds from creation to its first quota reservation"),
    ("start_wait_s", "double", "seconds from each admission to every replica running, summed"),
    ("requeue_wait_s", "double", "seconds from each eviction to the next reservation, summed"),
)
KUEUE = tuple(name for name, _, _ in _KUEUE_COLUMNS)
# A job's efficiency from Prometheus (``core.efficiency``, decision 45), in the export.
_EFFICIENCY_COLUMNS = (
    ("gpu_activity_mean", "its GPUs' mean activity (0-1), weighted by GPU-hours"),
    ("idle_gpu_hours", "its GPU-hours x (1 - activity), summed over its pods"),
    ("unused_gpu_hours", "the GPU-hours of its GPUs never used"),
    ("cpu_efficiency", "CPU used / requested (0-1), weighted by CPU-hours requested"),
    ("mem_peak_ratio", "memory peak / limit (0-1), weighted by the limit's byte-hours"),
    ("energy_kwh", "what its GPUs drew"),
)
EFFICIENCY = tuple(name for name, _ in _EFFICIENCY_COLUMNS)
COLUMNS = (
    Column("job_uid", "string", "the job's uid (one row per job)"),
    Column("name", "string", "the job's name"),
    Column("namespace", "string", "its namespace"),
    Column("owner", "string", "its owner (the `kubedl.io/tenancy` user), empty when none"),
    Column("tenant", "string", "its tenant, empty when none"),
    Column("queue", "string", "its queue (Kueue, Volcano or Kubeflow), null when none"),
    Column(
        "cluster",
        "string",
        "the cluster that recorded it (its JOBARCHIVE_CLUSTER); null for a KubeDL-written row",
    ),
    Column("kind", "string", "its kind (PyTorchJob, TFJob, ...)"),
    Column("status", "string", "its status when exported (Running for a running job)"),
    Column("reason", "string", "why it failed, null unless it failed"),
    Column("created", "timestamp[us, UTC]", "its creation time; its partition's day"),
    Column("started", "timestamp[us, UTC]", "when it first ran, null if it never did"),
    Column("finished", "timestamp[us, UTC]", "when it finished, null while it runs"),
    Column("queue_wait_s", "double", "seconds from creation to its first Running"),
    Column("gang_wait_s", "double", "seconds from creation to every replica running"),
    Column("run_s", "double", "seconds from its first Running to its finish (or the export)"),
    Column("gpu_hours", "double", "its pods' requested GPUs x hours run, its whole life"),
    Column("cpu_hours", "double", "its pods' requested CPUs x hours run, its whole life"),
    Column("gpu_hours_by_type", "string", 'the GPU-hours per replica type, JSON: {"worker": 8.0}'),
    Column("replicas", "int32", "the pods recorded for it"),
    Column(
        "failure_class",
        "string",
        "its failure class (decision 42), null unless it failed and was classified",
    ),
    *(
        Column(name, type_, f"{meaning}; null where Kueue never admitted it")
        for name, type_, meaning in _KUEUE_COLUMNS
    ),
    *(
        Column(name, "double", f"{meaning}; null where no pod of it was summarised")
        for name, meaning in _EFFICIENCY_COLUMNS
    ),
    Column("exported_at", "timestamp[us, UTC]", "when this row was written: its usage's as-of"),
)
NAMES = tuple(column.name for column in COLUMNS)
# The columns CSV writes as numbers, and those of times; every other is text (decision 40).
NUMBERS = frozenset(column.name for column in COLUMNS if column.type in ("double", "int32"))
TIMES = frozenset(column.name for column in COLUMNS if column.type.startswith("timestamp"))


def day_of(usage: JobUsage) -> datetime.date:
    """The day a job's row belongs to: its creation day in UTC."""
    return usage.created.astimezone(datetime.UTC).date()


def _kueue(usage: JobUsage) -> dict[str, Any]:
    """A job's Kueue columns: its attempts' figures, all null when Kueue never
    admitted it."""
    kueue = usage.kueue
    if kueue is None:
        return dict.fromkeys(KUEUE)
    figures = kueue.figures
    return {
        "attempts": figures.attempts,
        "preemptions": figures.preemptions,
        "preempted_gpu_hours": kueue.preempted_gpu_hours,
        "quota_wait_s": figures.quota_wait_s,
        "start_wait_s": figures.start_wait_s,
        "requeue_wait_s": figures.requeue_wait_s,
    }


def _efficiency(usage: JobUsage) -> dict[str, Any]:
    """A job's efficiency columns, all null where no pod of it was summarised."""
    found = usage.efficiency
    if found is None:
        return dict.fromkeys(EFFICIENCY)
    return {name: getattr(found, name) for name in EFFICIENCY}


def record(usage: JobUsage, exported_at: datetime.datetime) -> dict[str, Any]:
    """A job's usage as a row of ``COLUMNS``: its whole life's hours (to the export's
    time while it runs), not the hours of a window."""
    return {
        "job_uid": usage.job_uid,
        "name": usage.name,
        "namespace": usage.namespace,
        "owner": usage.owner,
        "tenant": usage.tenant,
        "queue": usage.queue,
        "cluster": usage.cluster,
        "kind": usage.kind,
        "status": usage.status,
        "reason": usage.reason,
        "created": usage.created,
        "started": usage.started,
        "finished": usage.finished,
        "queue_wait_s": usage.queue_wait_s,
        "gang_wait_s": usage.gang_wait_s,
        "run_s": usage.run_s,
        "gpu_hours": usage.all_gpu_hours,
        "cpu_hours": usage.all_cpu_hours,
        "gpu_hours_by_type": json.dumps(dict(usage.gpu_hours_by_type), sort_keys=True),
        "replicas": usage.replicas,
        "failure_class": usage.failure_class,
        **_kueue(usage),
        **_efficiency(usage),
        "exported_at": exported_at,
    }
