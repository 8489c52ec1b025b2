"""What Kueue's attempts say of a page of jobs (decision 43): their figures (attempts,
preemptions, the three waits) and the GPU-hours their pods spent in attempts that a
preemption, or another eviction, ended: the one GPU-hour definition (decision 32), each
pod counted in the attempt it started in (``core.attempts``). And of one job, for its
detail: its attempts, why it waited, and those figures flat."""

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from jobarchive.core.attempts import Figures, evicted, figures, lost
from jobarchive.core.cutting import clip, clipped_json
from jobarchive.core.rows import MESSAGE_LENGTH, RESOURCES_LENGTH
from jobarchive.core.times import aware, rfc3339, seconds
from jobarchive.reading.queries.source import read
from jobarchive.storage.kueue import Attempt, Wait
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
# What a job's detail shows of each attempt, in this order.
SHOWN_FIELDS = (
    "cluster_queue",
    "local_queue",
    "flavors",
    "quota_reserved_at",
    "admitted_at",
    "running_at",
    "ended_at",
    "end_reason",
    "underlying_cause",
    "message",
    "preemptor_workload_id",
    "preemptor_job_id",
    "requeues",
)
# A job's attempts and waits its detail shows at most: Kueue admits a job a few times,
# a runaway requeue loop a few hundred; past these the detail says it is cut.
ATTEMPTS_SHOWN = 100
WAITS_READ = 1000
# The detail's figures, null for a job Kueue never admitted.
FIGURES = (
    "preemptions",
    "preempted_gpu_hours",
    "evicted_gpu_hours",
    "quota_wait_s",
    "start_wait_s",
    "requeue_wait_s",
)


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
    by uid: their creation, attempts and the pods of those evicted, each read in one
    statement."""
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
    # Only an evicted attempt's pods cost anything: the pods of jobs never evicted (most,
    # and a large job's thousands) are not read.
    costly = [uid for uid, rows in attempts.items() if any(evicted(r["end_reason"]) for r in rows)]
    pods: dict[str, list[dict[str, Any]]] = {}
    for row in await read(Pod).filter(job_id__in=costly).values(*POD_FIELDS) if costly else []:
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


def attempt_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """An attempt's row as a job's detail shows it: its flavors parsed, its times RFC
    3339, its message cut to its bound."""
    shown = {name: row[name] for name in SHOWN_FIELDS}
    times = ("quota_reserved_at", "admitted_at", "running_at", "ended_at")
    shown.update({name: rfc3339(aware(row[name])) for name in times})
    shown["flavors"] = clipped_json(row["flavors"], RESOURCES_LENGTH)
    shown["message"] = clip(row["message"], MESSAGE_LENGTH)
    return shown


def waits_json(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Why a job waited from its ``job_wait`` rows: each reason and message once, first
    seen first, with the first and last time it was seen and ``held_s``, how long it
    held, its stretches summed (a reason seen again after an admission counts again,
    not the admission between)."""
    held: dict[tuple[str, str], dict[str, Any]] = {}
    for row in sorted(rows, key=lambda row: row["first_seen"]):
        first, last = aware(row["first_seen"]), aware(row["last_seen"])
        found = held.setdefault(
            (row["reason"], row["message"]),
            {
                "reason": row["reason"],
                "message": clip(row["message"], MESSAGE_LENGTH),
                "first_seen": first,
                "last_seen": last,
                "held_s": 0.0,
            },
        )
        found["last_seen"] = max(found["last_seen"], last)
        found["held_s"] += max(0.0, seconds(first, last) or 0.0)
    return [
        {**wait, "first_seen": rfc3339(wait["first_seen"]), "last_seen": rfc3339(wait["last_seen"])}
        for wait in held.values()
    ]


def figures_json(facts: KueueFacts | None) -> dict[str, Any]:
    """A job's figures flat, as its detail shows them: null for a job Kueue never
    admitted."""
    if facts is None:
        return dict.fromkeys(FIGURES)
    return {
        "preemptions": facts.figures.preemptions,
        "preempted_gpu_hours": facts.preempted_gpu_hours,
        "evicted_gpu_hours": facts.evicted_gpu_hours,
        "quota_wait_s": facts.figures.quota_wait_s,
        "start_wait_s": facts.figures.start_wait_s,
        "requeue_wait_s": facts.figures.requeue_wait_s,
    }


async def job_kueue(job_uid: str) -> dict[str, Any]:
    """A job's part of its detail from Kueue (decision 43): ``attempts``, oldest first,
    at most ``ATTEMPTS_SHOWN`` (``attempts_truncated`` says when there are more);
    ``waits``, each reason once (``waits_json``; ``waits_truncated`` when the job has
    more than ``WAITS_READ`` stretches of waiting); and its figures (``figures_json``),
    of all its attempts."""
    found = (
        await read(Attempt)
        .filter(job_id=job_uid)
        .order_by("quota_reserved_at", "id")
        .limit(ATTEMPTS_SHOWN + 1)
        .values(*SHOWN_FIELDS)
    )
    stretches = (
        await read(Wait)
        .filter(job_id=job_uid)
        .order_by("first_seen", "id")
        .limit(WAITS_READ + 1)
        .values("reason", "message", "first_seen", "last_seen")
    )
    facts = (await kueue_facts([job_uid])).get(job_uid) if found else None
    return {
        "attempts": [attempt_json(row) for row in found[:ATTEMPTS_SHOWN]],
        "attempts_truncated": len(found) > ATTEMPTS_SHOWN,
        "waits": waits_json(stretches[:WAITS_READ]),
        "waits_truncated": len(stretches) > WAITS_READ,
        **figures_json(facts),
    }
