"""A job's Kueue attempts and waits as ``jobarchive job`` prints them after its "Why:"
line (decision 43): a summary of its attempts and of its three waits, a line per
attempt, a line per reason it waited; each line within the terminal's width, its
variable text cut with the mark that says how long it was (the whole text is in ``-o
json``), and whole to a file or a pipe, as the tables are (decision 30)."""

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.cli.widths import UID_SHOWN, fitted
from jobarchive.core.times import duration, seconds, timestamp

# The resources whose flavor tells nothing of an attempt: every pod set has them.
PLAIN = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
FINISHED = "Finished"


def kueue_lines(detail: Mapping[str, Any], now: datetime.datetime, room: int | None) -> list[str]:
    """The lines of a job's attempts and waits, none for a job Kueue never saw, each
    within ``room`` columns (None: whole)."""
    attempts: Sequence[Mapping[str, Any]] = detail.get("attempts") or ()
    waits: Sequence[Mapping[str, Any]] = detail.get("waits") or ()
    lines = []
    if attempts:
        lines += [_summary(detail), _waits(detail)]
        lines += [_attempt(index, each, now) for index, each in enumerate(attempts, 1)]
        if detail.get("attempts_truncated"):
            lines.append(f"(the first {len(attempts)} attempts; -o json has them whole)")
    lines += [_waited(wait) for wait in waits]
    if detail.get("waits_truncated"):
        lines.append("(the oldest waits only)")
    return [fitted(line, room) for line in lines]


def _summary(detail: Mapping[str, Any]) -> str:
    """``Attempts: 2, 1 preempted (3.622 GPU-hours lost)``, with the GPU-hours other
    evictions cost when any."""
    count = f"{len(detail['attempts'])}{'+' if detail.get('attempts_truncated') else ''}"
    lost = [
        f"{hours:g} {said}"
        for hours, said in (
            (detail["preempted_gpu_hours"], "GPU-hours lost"),
            (detail["evicted_gpu_hours"], "to other evictions"),
        )
        if hours
    ]
    told = f" ({'; '.join(lost)})" if lost else ""
    return f"Attempts: {count}, {detail['preemptions']} preempted{told}"


def _waits(detail: Mapping[str, Any]) -> str:
    """The three waits: to the first reservation, to every replica running, requeued."""
    return (
        f"Kueue waits: quota {duration(detail['quota_wait_s'])}, "
        f"start {duration(detail['start_wait_s'])}, "
        f"requeue {duration(detail['requeue_wait_s'])}"
    )


def flavor_names(flavors: Any) -> str:
    """The flavors an attempt's pod sets were given, those of the plain resources left
    out where another resource's is named (``a100``, not ``default``)."""
    if not isinstance(flavors, dict):
        return ""
    given = [
        (str(resource), str(flavor))
        for chosen in flavors.values()
        if isinstance(chosen, dict)
        for resource, flavor in chosen.items()
    ]
    telling = {flavor for resource, flavor in given if resource not in PLAIN}
    return ",".join(sorted(telling or {flavor for _, flavor in given}))


def _attempt(index: int, attempt: Mapping[str, Any], now: datetime.datetime) -> str:
    """``  #1 2026-11-20 10:05 cq-a100/a100 55m Preempted by job 7d3b1f9a``: when its
    quota was reserved, where, for how long (so far), how it ended and why (the
    preemptor's job, else the cause, else Kueue's message)."""
    reserved = timestamp(attempt["quota_reserved_at"])
    ended = timestamp(attempt["ended_at"])
    held = duration(seconds(reserved, ended or now))
    when = (attempt["quota_reserved_at"] or "-").replace("T", " ")[:16]
    place = attempt["cluster_queue"] or "-"
    flavors = flavor_names(attempt["flavors"])
    if flavors:
        place += f"/{flavors}"
    end = attempt["end_reason"] or ("running" if ended is None else "ended")
    preemptor = attempt["preemptor_job_id"]
    if preemptor:
        told = f"{end} by job {preemptor[:UID_SHOWN]}"
    elif attempt["underlying_cause"]:
        told = f"{end} ({attempt['underlying_cause']})"
    elif attempt["message"] and end != FINISHED:
        told = f"{end}: {attempt['message']}"
    else:
        told = end
    return f"  #{index} {when} {place} {held} {told}"


def _waited(wait: Mapping[str, Any]) -> str:
    """``Waited: Pending for 5m: <message>``: the duration before the message, which is
    what is cut."""
    return f"Waited: {wait['reason']} for {duration(wait['held_s'])}: {wait['message']}"
