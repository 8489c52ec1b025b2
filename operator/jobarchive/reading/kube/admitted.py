"""Kueue's part of an ArchivedJob's status (decision 43): a job's detail's attempts,
waits and figures (``queries.preemptions.job_kueue``) under the names Kubernetes spells
them, and back. Pure, as ``objects``."""

from collections.abc import Mapping
from typing import Any

# The JSON API's names of an attempt's fields, and the status's, where they differ.
ATTEMPT_NAMES = {
    "cluster_queue": "clusterQueue",
    "local_queue": "localQueue",
    "quota_reserved_at": "quotaReservedAt",
    "admitted_at": "admittedAt",
    "running_at": "runningAt",
    "ended_at": "endedAt",
    "end_reason": "endReason",
    "underlying_cause": "underlyingCause",
    "preemptor_workload_id": "preemptorWorkloadUID",
    "preemptor_job_id": "preemptorJobUID",
}
WAIT_NAMES = {"first_seen": "firstSeen", "last_seen": "lastSeen", "held_s": "heldSeconds"}
# The detail's own fields: its lists, whether they are cut, and its figures.
STATUS_NAMES = {
    "attempts": "attempts",
    "attempts_truncated": "attemptsTruncated",
    "waits": "waits",
    "waits_truncated": "waitsTruncated",
    "preemptions": "preemptions",
    "preempted_gpu_hours": "preemptedGPUHours",
    "evicted_gpu_hours": "evictedGPUHours",
    "quota_wait_s": "quotaWaitSeconds",
    "start_wait_s": "startWaitSeconds",
    "requeue_wait_s": "requeueWaitSeconds",
}


# A job Kueue never saw, as its detail says it.
NONE: dict[str, Any] = {
    **dict.fromkeys(STATUS_NAMES),
    "attempts": [],
    "attempts_truncated": False,
    "waits": [],
    "waits_truncated": False,
}


def renamed(found: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """``found`` with each key ``names`` names under its other name, the others as
    they are."""
    return {names.get(key, key): value for key, value in found.items()}


def _inverse(names: Mapping[str, str]) -> dict[str, str]:
    return {shown: field for field, shown in names.items()}


def kueue_status(detail: Mapping[str, Any]) -> dict[str, Any]:
    """What an ArchivedJob's status says of the job's Kueue attempts, from its detail:
    nothing for a job Kueue never saw (no attempt, no wait), so that ``kubectl
    describe`` of a cluster without Kueue says nothing of it."""
    if not detail.get("attempts") and not detail.get("waits"):
        return {}
    status = {shown: detail[field] for field, shown in STATUS_NAMES.items()}
    status["attempts"] = [renamed(each, ATTEMPT_NAMES) for each in detail["attempts"]]
    status["waits"] = [renamed(each, WAIT_NAMES) for each in detail["waits"]]
    return status


def kueue_detail(status: Mapping[str, Any]) -> dict[str, Any]:
    """The job's detail's Kueue fields an ArchivedJob's status was made of
    (``kueue_status``'s inverse): a GET's status (its ``replicas``) without them, a job
    Kueue never saw."""
    if "attempts" not in status:
        return dict(NONE) if "replicas" in status else {}
    detail = {field: status[shown] for field, shown in STATUS_NAMES.items()}
    detail["attempts"] = [renamed(each, _inverse(ATTEMPT_NAMES)) for each in status["attempts"]]
    detail["waits"] = [renamed(each, _inverse(WAIT_NAMES)) for each in status["waits"]]
    return detail
