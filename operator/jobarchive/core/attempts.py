"""A job's figures from its Kueue attempts (decision 43), pure: how many, how many ended
preempted, and its waits split as Slurm splits them; and the GPU-seconds its pods spent
in attempts that an eviction ended.

The waits: ``quota_wait_s``, from the job's creation to its first quota reservation;
``start_wait_s``, from each admission (its reservation, when no admission time is known)
to every replica running (``PodsReady``), summed over the attempts that ran;
``requeue_wait_s``, from each eviction to the next reservation, summed (0 for a job of
one attempt). A pod belongs to the latest attempt reserved before it started; its
GPU-seconds are its GPUs times its run time, the one definition (decision 32).
"""

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.core.times import seconds

PREEMPTED = "Preempted"
# Ends that are no eviction: the job's own, and its Workload's deletion.
NOT_EVICTED = frozenset({"Finished", "Deleted"})


@dataclasses.dataclass(frozen=True)
class Figures:
    """A job's figures from its attempts; the waits None where there is no attempt."""

    attempts: int
    preemptions: int
    quota_wait_s: float | None
    start_wait_s: float | None
    requeue_wait_s: float | None


@dataclasses.dataclass(frozen=True)
class Lost:
    """GPU-seconds of a job's pods in attempts ended by a preemption, or by another
    eviction."""

    preempted: float = 0.0
    evicted: float = 0.0


def ordered(attempts: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Attempts in the order of their reservations."""
    return sorted(attempts, key=lambda attempt: attempt["quota_reserved_at"])


def figures(created: datetime.datetime | None, attempts: Sequence[Mapping[str, Any]]) -> Figures:
    """A job's figures from its creation and its attempts' rows (``job_attempt``'s
    columns), in any order."""
    rows = ordered(attempts)
    if not rows:
        return Figures(0, 0, None, None, None)
    starts = [
        seconds(row["admitted_at"] or row["quota_reserved_at"], row["running_at"])
        for row in rows
        if row["running_at"] is not None
    ]
    gaps = [
        seconds(rows[index - 1]["ended_at"], rows[index]["quota_reserved_at"])
        for index in range(1, len(rows))
    ]
    return Figures(
        attempts=len(rows),
        preemptions=sum(1 for row in rows if row["end_reason"] == PREEMPTED),
        quota_wait_s=seconds(created, rows[0]["quota_reserved_at"]),
        start_wait_s=sum(start for start in starts if start is not None) if starts else None,
        requeue_wait_s=sum(gap for gap in gaps if gap is not None),
    )


def evicted(end_reason: str | None) -> bool:
    """Whether an attempt's end is an eviction (a preemption among them)."""
    return end_reason is not None and end_reason not in NOT_EVICTED


def lost(
    attempts: Sequence[Mapping[str, Any]],
    pods: Sequence[Mapping[str, Any]],
    now: datetime.datetime,
) -> Lost:
    """The GPU-seconds of ``pods`` (``gpus``, ``gmt_started``, ``gmt_finished``; running:
    to ``now``) in the attempts an eviction ended, each pod counted whole in the latest
    attempt reserved at or before its start; a pod that started before every attempt
    counts in none."""
    rows = ordered(attempts)
    preempted = other = 0.0
    for pod in pods:
        start = pod["gmt_started"]
        owner = None
        for row in rows:
            if start is not None and row["quota_reserved_at"] <= start:
                owner = row
        if owner is None or not evicted(owner["end_reason"]):
            continue
        spent = (pod["gpus"] or 0) * max(0.0, seconds(start, pod["gmt_finished"] or now) or 0.0)
        if owner["end_reason"] == PREEMPTED:
            preempted += spent
        else:
            other += spent
    return Lost(preempted, other)
