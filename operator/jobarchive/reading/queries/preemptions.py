"""What Kueue's attempts say of a page of jobs (decision 43): their figures (attempts,
preemptions, the three waits) and the GPU-hours their pods spent in attempts that a
preemption, or another eviction, ended: the one GPU-hour definition (decision 32), each
pod counted in the attempt it started in (``core.attempts``)."""

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.core.attempts import Figures, figures, lost
from jobarchive.core.times import aware
from jobarchive.reading.queries.source import read
from jobarchive.storage.kueue import Attempt
from jobarchive.storage.models import Job, Pod

ATTEMPT_FIELDS = (
    "job_id",
    "quota_reserved_at",
    "admitted_at",
    "running_at",
    "ended_at",
    "end_reason",
)
POD_FIELDS = ("job_id", "gpus", "gmt_started", "gmt_finished")


@dataclasses.dataclass(frozen=True)
class KueueFacts:
    """A job's figures from its attempts, and the GPU-hours preemptions and other
    evictions cost it."""

    figures: Figures
    preempted_gpu_hours: float
    evicted_gpu_hours: float


def _aware(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the database gives it, its times aware (MySQL's are naive, in UTC)."""
    return {k: aware(v) if isinstance(v, datetime.datetime) else v for k, v in row.items()}


async def kueue_facts(job_uids: Sequence[str]) -> dict[str, KueueFacts]:
    """The Kueue facts of the jobs of these uids (a page of a list) that Kueue admitted,
    by uid: their creation, attempts and pods, each read in one statement."""
    if not job_uids:
        return {}
    uids = list(job_uids)
    attempts: dict[str, list[dict[str, Any]]] = {}
    for row in await read(Attempt).filter(job_id__in=uids).values(*ATTEMPT_FIELDS):
        attempts.setdefault(row["job_id"], []).append(_aware(row))
    if not attempts:
        return {}
    created = {
        str(uid): aware(when)
        for uid, when in await read(Job)
        .filter(job_id__in=list(attempts))
        .values_list("job_id", "gmt_created")
    }
    pods: dict[str, list[dict[str, Any]]] = {}
    for row in await read(Pod).filter(job_id__in=list(attempts)).values(*POD_FIELDS):
        pods.setdefault(row["job_id"], []).append(_aware(row))
    now = datetime.datetime.now(datetime.UTC)
    found = {}
    for uid, rows in attempts.items():
        spent = lost(rows, pods.get(uid, []), now)
        found[uid] = KueueFacts(
            figures=figures(created.get(uid), rows),
            preempted_gpu_hours=round(spent.preempted / 3600, 3),
            evicted_gpu_hours=round(spent.evicted / 3600, 3),
        )
    return found
