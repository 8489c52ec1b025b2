"""A job's efficiency as ``pod_efficiency`` keeps it (decision 45): its figures, per
replica type and per pod, and the advice they give: the ``efficiency`` of a job's
detail, which ``jobarchive eff``, the API and the console show.

A job's figures weigh every pod; the pods listed are the first ``POD_ROWS`` by name,
and the answer says how many there are.
"""

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from jobarchive.core.advice import job_advice
from jobarchive.core.efficiency import (
    JOULES_PER_KWH,
    Allocated,
    GpuUse,
    JobEfficiency,
    PodEfficiency,
    allocated,
    weigh,
)
from jobarchive.reading.queries.source import read
from jobarchive.storage.models import Pod
from jobarchive.storage.summaries import Summary

# The pods a job's efficiency lists; its figures weigh them all.
POD_ROWS = 200
# Pods whose rows one job's figures read at most (a job of more says so).
MOST_PODS = 50_000
_POD = (
    "pod_id",
    "name",
    "replica_type",
    "gpus",
    "cpu_millis",
    "memory_bytes",
    "resources",
    "gmt_started",
    "gmt_finished",
)
_FIGURES = tuple(
    field.name for field in dataclasses.fields(PodEfficiency) if field.name not in ("per_gpu",)
)


def _efficiency(row: Any) -> PodEfficiency:
    """A stored summary as the pure figures."""
    per_gpu = tuple(GpuUse(**gpu) for gpu in json.loads(row.get("per_gpu") or "[]"))
    return PodEfficiency(**{name: row[name] for name in _FIGURES}, per_gpu=per_gpu)


def figures_json(figures: JobEfficiency) -> dict[str, Any]:
    """A job's (or a replica type's) figures as JSON, rounded as the API gives them."""
    return {
        name: round(value, 4) if isinstance(value, float) else value
        for name, value in dataclasses.asdict(figures).items()
    }


def _pod_json(pod: dict[str, Any], given: Allocated, found: PodEfficiency | None) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "name": pod["name"],
        "replica_type": pod["replica_type"],
        "gpus": given.gpus,
        "run_seconds": round(given.run_seconds, 1),
        "outcome": found.outcome if found else None,
    }
    if found is not None:
        energy = found.energy_joules
        shown.update(
            {
                name: round(value, 4) if isinstance(value, float) else value
                for name, value in dataclasses.asdict(found).items()
                if name not in ("outcome", "energy_joules")
            }
        )
        shown["energy_kwh"] = round(energy / JOULES_PER_KWH, 6) if energy is not None else None
    return shown


async def efficiency_json(job_uid: str) -> dict[str, Any] | None:
    """A job's efficiency: its figures, per replica type and per pod, and advice; None
    when no pod of the job has been summarised."""
    summaries = {
        row["pod_id"]: _efficiency(row)
        for row in await read(Summary)
        .filter(job_id=job_uid)
        .limit(MOST_PODS)
        .values("pod_id", "per_gpu", *_FIGURES)
    }
    if not summaries:
        return None
    pods = (
        await read(Pod)
        .filter(job_id=job_uid, gmt_finished__isnull=False)
        .order_by("name")
        .limit(MOST_PODS)
        .values(*_POD)
    )
    weighed = [(pod, allocated(pod), summaries.get(pod["pod_id"])) for pod in pods]
    return _answer(weighed, complete=len(pods) < MOST_PODS)


def _answer(
    weighed: Sequence[tuple[dict[str, Any], Allocated, PodEfficiency | None]], complete: bool
) -> dict[str, Any]:
    """The efficiency's JSON from the job's pods, each with what it was given."""
    figures = weigh([(given, found) for _, given, found in weighed])
    replicas: dict[str, list[tuple[Allocated, PodEfficiency | None]]] = {}
    for pod, given, found in weighed:
        replicas.setdefault(str(pod["replica_type"]), []).append((given, found))
    each = {name: (weigh(pods), _requested(pods)) for name, pods in sorted(replicas.items())}
    return {
        **figures_json(figures),
        "advice": job_advice(figures, _requested([(g, f) for _, g, f in weighed]), each),
        "replicas": {name: figures_json(found) for name, (found, _) in each.items()},
        "per_pod": [_pod_json(*row) for row in weighed[:POD_ROWS]],
        "per_pod_more": len(weighed) > POD_ROWS or not complete,
    }


def _requested(pods: Sequence[tuple[Allocated, PodEfficiency | None]]) -> int:
    """The GPUs the summarised pods requested."""
    return sum(given.gpus for given, found in pods if found is not None)


async def jobs_efficiency(job_uids: Sequence[str]) -> dict[str, JobEfficiency]:
    """The efficiency of the jobs of these uids (a page of a list) a pod of which was
    summarised, by uid: their summaries in one statement, their finished pods in one."""
    summaries: dict[str, PodEfficiency] = {}
    for row in (
        await read(Summary).filter(job_id__in=list(job_uids)).values("pod_id", "per_gpu", *_FIGURES)
    ):
        summaries[row["pod_id"]] = _efficiency(row)
    if not summaries:
        return {}
    pods: dict[str, list[tuple[Allocated, PodEfficiency | None]]] = {}
    for pod in (
        await read(Pod)
        .filter(job_id__in=list(job_uids), gmt_finished__isnull=False)
        .values("job_id", *_POD)
    ):
        pods.setdefault(pod["job_id"], []).append((allocated(pod), summaries.get(pod["pod_id"])))
    return {uid: weigh(found) for uid, found in pods.items() if any(s for _, s in found)}
