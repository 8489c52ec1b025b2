"""A failed job's evidence for the taxonomy (decision 42), built from its stored rows:
its pods' ``replica_info`` rows, their containers' ``container_log_tail`` rows, the
``event_info`` rows about the pods and the job, and Kueue's ``job_attempt`` rows.

What the archive keeps of a pod is less than its status held. A failed container
instance is known by its log tail's row (reason, exit code, finish time, and the tail
when it was read); a pod without one (an archive from before the tails, or one whose
tails were not read) by its ``remark``, the one termination, or pod reason, the
recorder kept. The DisruptionTarget condition is not stored: a preemption or eviction
is read from the Events instead. Pure: no I/O.
"""

import dataclasses
import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.core.ruletable import Rule
from jobarchive.core.taxonomy import (
    ContainerState,
    JobFailure,
    KueueEviction,
    PodEvidence,
    PodFailure,
    Reported,
    job_failure,
    pod_failure,
)

FAILED = "Failed"
# Kueue's ends of an attempt that are not evictions (``convert.workloads``).
NOT_EVICTED = frozenset({"Finished", "Deleted"})
# The pod's remark as the recorder writes it: ``Reason (exit code N): message``, the
# exit code only for a container's termination.
_REMARK = re.compile(
    r"(?P<reason>[^:(]*?)(?: \(exit code (?P<code>-?\d+)\))?(?:: (?P<message>.*))?"
)

Row = Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class JobEvidence:
    """A failed job's stored rows, as the classifying pass loads them."""

    job: Row
    pods: Sequence[Row] = ()
    tails: Sequence[Row] = ()
    events: Sequence[Row] = ()
    attempts: Sequence[Row] = ()


@dataclasses.dataclass(frozen=True)
class Classified:
    """A job's failure, with the uid and name of the pod it was read from (empty for a
    job none of whose pods failed, classified by its own Events)."""

    pod_id: str
    pod_name: str
    failure: JobFailure
    # Each failed pod's own class, by the pod's uid: every failed pod has one.
    pods: tuple[PodFailure, ...] = ()


def classify_job(evidence: JobEvidence, rules: Sequence[Rule]) -> Classified:
    """The job's failure: its first failing pod's; else, no pod having failed, what its
    own Events say (a deadline, a backoff limit), else ``Unknown``."""
    job_events = _reported(
        event
        for event in evidence.events
        if event.get("obj_uid") not in {pod["pod_id"] for pod in evidence.pods}
    )
    names = {}
    classified = []
    for pod in failed_pods(evidence):
        names[str(pod["pod_id"])] = str(pod["name"])
        pod_evidence = pod_evidence_of(pod, evidence, job_events)
        classified.append(pod_failure(pod_evidence, rules))
    found = job_failure(classified)
    if found is None:
        alone = PodEvidence("", events=job_events, kueue=_eviction(evidence.attempts, None))
        found = job_failure([pod_failure(alone, rules)])
        assert found is not None  # one pod given, one chosen
    return Classified(found.pod, names.get(found.pod, ""), found, tuple(classified))


def failed_pods(evidence: JobEvidence) -> list[Row]:
    """The job's pods that failed: in phase Failed, or with a failed container's row."""
    failing = {tail["pod_id"] for tail in evidence.tails}
    return [pod for pod in evidence.pods if pod.get("status") == FAILED or pod["pod_id"] in failing]


def pod_evidence_of(
    pod: Row, evidence: JobEvidence, job_events: tuple[Reported, ...]
) -> PodEvidence:
    """A pod's evidence: its containers from its tails' rows (else its remark's
    termination), its remark's pod reason, its Events then its job's, and the eviction
    of the Kueue attempt it ran in."""
    uid = pod["pod_id"]
    containers = tuple(_container(tail) for tail in evidence.tails if tail["pod_id"] == uid)
    remarked, status = _remark(pod.get("remark"), pod.get("gmt_finished"))
    if not containers and remarked is not None:
        containers = (remarked,)
    own = _reported(event for event in evidence.events if event.get("obj_uid") == uid)
    return PodEvidence(
        str(uid),
        containers,
        status=status,
        events=own + job_events,
        kueue=_eviction(evidence.attempts, pod.get("gmt_created")),
        ended_at=pod.get("gmt_finished"),
    )


def _container(tail: Row) -> ContainerState:
    text = tail.get("log_tail") if tail.get("captured") else None
    return ContainerState(
        str(tail["container"]),
        reason=tail.get("reason"),
        exit_code=tail.get("exit_code"),
        finished_at=tail.get("gmt_failed"),
        tail=text,
    )


def _remark(
    remark: str | None, finished: datetime.datetime | None
) -> tuple[ContainerState | None, Reported | None]:
    """The remark read back: a container's termination (its name not kept), or the
    pod's own reason and message."""
    if not remark:
        return None, None
    match = _REMARK.fullmatch(remark.split("\n", 1)[0])
    if match is None or not match["reason"]:
        return None, Reported("", remark)
    reason, message = match["reason"], match["message"] or ""
    if match["code"] is None:
        return None, Reported(reason, message)
    return ContainerState(
        "",
        reason=reason,
        message=message or None,
        exit_code=int(match["code"]),
        finished_at=finished,
    ), None


def _reported(events: Any) -> tuple[Reported, ...]:
    """Events as reasons and messages, oldest first."""
    ordered = sorted(
        events, key=lambda event: _when(event.get("last_timestamp") or event.get("first_timestamp"))
    )
    return tuple(Reported(str(e.get("reason") or ""), str(e.get("message") or "")) for e in ordered)


def _eviction(attempts: Sequence[Row], started: datetime.datetime | None) -> KueueEviction | None:
    """The eviction that ended the attempt the pod ran in: the last attempt reserved
    before the pod was created (the job's last, when that is not known)."""
    before = [
        attempt
        for attempt in attempts
        if started is None or attempt["quota_reserved_at"] <= started
    ] or list(attempts)
    if not before:
        return None
    last = max(before, key=lambda attempt: attempt["quota_reserved_at"])
    reason = last.get("end_reason")
    if not reason or reason in NOT_EVICTED:
        return None
    return KueueEviction(reason, last.get("underlying_cause"), last.get("message"))


def _when(moment: datetime.datetime | None) -> datetime.datetime:
    return moment or datetime.datetime.min.replace(tzinfo=datetime.UTC)
