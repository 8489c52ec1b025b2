"""Pod -> ``replica_info`` row, and which tracked job a pod belongs to.

A pod belongs to a tracked job when its controller ownerReference names a
tracked kind (the job's uid is then in the reference), or when a training label
names the job: ``training.kubeflow.org/job-name`` (an MPIJob v2 launcher is owned
by a batch Job but labelled so), ``jobset.sigs.k8s.io/jobset-name`` (a TrainJob's
pods, owned by the batch Jobs of its JobSet), or KubeDL's ``job-name`` together
with its ``replica-type`` label; or, failing those, when its controller is an
intermediate object (a RayCluster, a batch Job) that a tracked job owns.
``job-name`` alone is not enough: the batch Job controller puts that label on
every pod it creates.
"""

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from jobarchive.core.accounting import ACCELERATORS
from jobarchive.core.cutting import clip
from jobarchive.core.kinds import JobKind, KindRegistry, is_intermediate
from jobarchive.core.rows import (
    IMAGE_LENGTH,
    IP_LENGTH,
    LABEL_VALUE_LENGTH,
    NAME_LENGTH,
    REMARK_LENGTH,
    SHORT_TEXT_LENGTH,
    STATUS_LENGTH,
    UID_LENGTH,
    PodRow,
)
from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import controller_of, integer, mapping, sequence, text
from jobarchive.recording.convert.common import identity, uid
from jobarchive.recording.convert.resources import pod_resources

KUBEFLOW_JOB_NAME = "training.kubeflow.org/job-name"
# A TrainJob's JobSet has the TrainJob's name, and labels every pod with it.
JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
KUBEDL_JOB_NAME = "job-name"
RAY_NODE_TYPE = "ray.io/node-type"
RAY_GROUP = "ray.io/group"
PENDING = "Pending"
# The restarts column is an INT.
RESTARTS_MAX = 2**31 - 1
FAILED = "Failed"
# The labels that name a pod's role, the first present wins.
REPLICA_TYPE_LABELS = (
    "training.kubeflow.org/replica-type",
    "replica-type",
    "training.kubeflow.org/job-role",
    "jobset.sigs.k8s.io/replicatedjob-name",
    "volcano.sh/task-spec",
)


@dataclasses.dataclass(frozen=True)
class OwnerLink:
    """The pod's controller is a tracked job: its uid is known."""

    job_uid: str
    kind: JobKind


@dataclasses.dataclass(frozen=True)
class IntermediateLink:
    """The pod's controller is an intermediate object (a RayCluster, a batch Job): its
    job is whatever owns that object, learnt when the object is seen."""

    owner_uid: str


@dataclasses.dataclass(frozen=True)
class NameLink:
    """A training label names the pod's job; its uid must be looked up by name."""

    namespace: str
    job_name: str


def pod_job_link(
    pod: Mapping[str, Any], kinds: KindRegistry
) -> OwnerLink | NameLink | IntermediateLink | None:
    """How the pod links to a tracked job, or None when it cannot belong to one."""
    meta = mapping(pod.get("metadata"))
    owner = kinds.find_owner(meta.get("ownerReferences"))
    if owner is not None:
        owner_uid = text(owner.get("uid"))
        kind = kinds.find(owner.get("apiVersion"), owner.get("kind"))
        if owner_uid and kind is not None:
            return OwnerLink(owner_uid, kind)
    # An owner chain names one job by uid; a label names whichever job has that name
    # now, which after a delete the operator missed is still the old one.
    controller = controller_of(meta.get("ownerReferences"))
    if controller is not None and is_intermediate(
        controller.get("apiVersion"), controller.get("kind")
    ):
        owner_uid = text(controller.get("uid"))
        if owner_uid:
            return IntermediateLink(owner_uid)
    labels = mapping(meta.get("labels"))
    namespace = text(meta.get("namespace")) or ""
    job_name = text(labels.get(KUBEFLOW_JOB_NAME)) or text(labels.get(JOBSET_NAME))
    if not job_name and "replica-type" in labels:
        job_name = text(labels.get(KUBEDL_JOB_NAME))
    if job_name:
        return NameLink(namespace, job_name)
    return None


def pod_row(
    pod: Mapping[str, Any],
    job_uid: str,
    main_container: str | None,
    region: str | None,
    accelerators: frozenset[str] = ACCELERATORS,
) -> PodRow:
    """The ``replica_info`` row of a pod of the job ``job_uid``; its GPUs count the
    ``accelerators`` (JOBARCHIVE_ACCELERATORS) beside ``nvidia.com/gpu`` and ``amd.com/gpu``."""
    meta = mapping(pod.get("metadata"))
    spec = mapping(pod.get("spec"))
    status = mapping(pod.get("status"))
    labels = mapping(meta.get("labels"))
    containers = [mapping(c) for c in sequence(spec.get("containers"))]
    main_spec = _main(containers, main_container)
    main_name = text(main_spec.get("name"))
    statuses = [mapping(s) for s in sequence(status.get("containerStatuses"))]
    main_status = next((s for s in statuses if main_name and s.get("name") == main_name), {})
    phase = text(status.get("phase")) or PENDING
    base = identity(pod)
    resources, counted = pod_resources(spec, accelerators)
    return {
        "pod_id": uid(pod),
        "name": base["name"],
        "job_id": clip(job_uid, UID_LENGTH),
        "namespace": base["namespace"],
        "version": base["version"],
        "gmt_created": base["gmt_created"],
        "status": clip(phase, STATUS_LENGTH),
        "image": clip(text(main_spec.get("image")) or "", IMAGE_LENGTH),
        "replica_type": clip(_replica_type(labels), LABEL_VALUE_LENGTH) or "",
        "resources": resources,
        "gpus": counted.gpus,
        "cpu_millis": counted.cpu_millis,
        "memory_bytes": counted.memory_bytes,
        "node_name": clip(text(spec.get("nodeName")) or None, NAME_LENGTH),
        "host_ip": clip(text(status.get("hostIP")), IP_LENGTH),
        "pod_ip": clip(text(status.get("podIP")), IP_LENGTH),
        "deploy_region": clip(region, SHORT_TEXT_LENGTH),
        "deleted": meta.get("deletionTimestamp") is not None,
        "is_in_etcd": True,
        "remark": clip(_remark(status, main_status, statuses), REMARK_LENGTH)
        if phase == FAILED
        else None,
        "gmt_started": timestamp(status.get("startTime")),
        "gmt_finished": _finished_at(main_status),
        "restarts": _restarts(statuses),
        "gmt_restarted": _restarted_at(statuses),
    }


def _main(containers: list[Mapping[str, Any]], name: str | None) -> Mapping[str, Any]:
    for container in containers:
        if name and container.get("name") == name:
            return container
    return containers[0] if containers else {}


def _replica_type(labels: Mapping[str, Any]) -> str | None:
    for label in REPLICA_TYPE_LABELS:
        value = text(labels.get(label))
        if value:
            return value
    # A Ray head is its own role; a worker's role is its group, as a RayJob's roles are.
    if text(labels.get(RAY_NODE_TYPE)) == "head":
        return "head"
    return text(labels.get(RAY_GROUP))


def _terminated(container_status: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(mapping(container_status.get("state")).get("terminated"))


def _finished_at(main_status: Mapping[str, Any]) -> datetime.datetime | None:
    return timestamp(_terminated(main_status).get("finishedAt"))


def _restarts(statuses: list[Mapping[str, Any]]) -> int:
    """Its containers' restarts added up, as kubectl's RESTARTS counts them (a hostile
    count held to the column's range)."""
    total = sum(max(integer(s.get("restartCount")) or 0, 0) for s in statuses)
    return min(total, RESTARTS_MAX)


def _restarted_at(statuses: list[Mapping[str, Any]]) -> datetime.datetime | None:
    """When a container of it last ended to be restarted: the latest end of an instance
    before the current one (``lastState``)."""
    ends = [
        timestamp(mapping(mapping(s.get("lastState")).get("terminated")).get("finishedAt"))
        for s in statuses
        if (integer(s.get("restartCount")) or 0) > 0
    ]
    return max((end for end in ends if end is not None), default=None)


def _remark(
    status: Mapping[str, Any],
    main_status: Mapping[str, Any],
    statuses: list[Mapping[str, Any]],
) -> str | None:
    """Why a pod failed: its main container's termination, else a failed container's, else
    the pod's own reason (an eviction, say)."""
    candidates = [main_status, *(s for s in statuses if s is not main_status)]
    for container_status in candidates:
        terminated = _terminated(container_status)
        exit_code = integer(terminated.get("exitCode"))
        if terminated and exit_code != 0:
            return _describe(text(terminated.get("reason")), exit_code, terminated.get("message"))
    reason = text(status.get("reason"))
    message = text(status.get("message"))
    if reason or message:
        return _describe(reason, None, message)
    return None


def _describe(reason: str | None, exit_code: int | None, message: object) -> str:
    head = reason or "Failed"
    if exit_code is not None:
        head = f"{head} (exit code {exit_code})"
    detail = text(message)
    return f"{head}: {detail}" if detail else head
