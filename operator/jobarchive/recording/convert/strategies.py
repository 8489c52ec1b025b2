"""How each family of job kinds states its status, times and roles.

Kubeflow v1 and KubeDL kinds share one shape (conditions, ``*ReplicaSpecs``); the
others each have their own, read from their controllers' Go sources (Trainer v2.3,
KubeRay v1.7, Volcano 1.15). A strategy is three pure functions of the object:
the normalized status, when it finished, and its roles as the seed's
``{"<role>": {"replicas": N, "resources": {...}}}``; plus when it first ran, a remark
for the kinds that explain a failure in their status, and the queue their spec names.
"""

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from jobarchive.core.kinds import JobKind
from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import integer, mapping, sequence, text
from jobarchive.recording.convert.common import TERMINAL_STATUSES, InvalidObject
from jobarchive.recording.convert.resources import effective_resources

Object = Mapping[str, Any]
CREATED = "Created"


@dataclasses.dataclass(frozen=True)
class Strategy:
    """The readers of one family of job kinds."""

    status: Callable[[Object], str]
    finished: Callable[[Object, str], datetime.datetime | None]
    roles: Callable[[Object, JobKind], dict[str, Any]]
    # When the job first ran (KubeDL's gmt_job_running); None where its kind says not.
    running: Callable[[Object, str], datetime.datetime | None] = lambda obj, status: None
    remark: Callable[[Object, str], str | None] = lambda obj, status: None
    # The queue its own spec names; Kueue's label, read for every kind, comes first.
    queue: Callable[[Object], str | None] = lambda obj: None


KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def queue(obj: Object, strategy: Strategy) -> str | None:
    """The job's queue: Kueue's label, else the one its kind's spec names (decision 32)."""
    labels = mapping(mapping(obj.get("metadata")).get("labels"))
    return text(labels.get(KUEUE_QUEUE_LABEL)) or strategy.queue(obj) or None


def _conditions(obj: Object) -> list[Mapping[str, Any]]:
    return [mapping(c) for c in sequence(mapping(obj.get("status")).get("conditions"))]


def _true(conditions: list[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    for condition in conditions:
        if condition.get("type") == kind and condition.get("status") == "True":
            return condition
    return None


def _complete_failed_suspended(conditions: list[Mapping[str, Any]]) -> str | None:
    """The status the Complete, Failed and Suspended conditions of batch-like jobs
    (TrainJob, batch/v1 Job) settle, Failed first; None while none is true."""
    for condition, status in (("Failed", "Failed"), ("Complete", "Succeeded")):
        if _true(conditions, condition):
            return status
    return "Suspended" if _true(conditions, "Suspended") else None


def _replicas(value: object, where: str, default: int) -> int:
    if value is None:
        return default
    count = integer(value)
    if count is None:
        raise InvalidObject(f"{where} is not an integer: {value!r}")
    return count


def _role(replicas: int, pod_spec: object) -> dict[str, Any]:
    return {"replicas": replicas, "resources": effective_resources(mapping(pod_spec))}


def _roles(specs: Iterable[tuple[str, Mapping[str, Any], str, int]]) -> dict[str, Any]:
    """Roles by name from (name, spec with replicas and template, where the spec is,
    replicas when unset); a later spec of a name replaces an earlier one."""
    return {
        name: _role(
            _replicas(spec.get("replicas"), f"{where}.replicas", default),
            mapping(spec.get("template")).get("spec"),
        )
        for name, spec, where, default in specs
    }


# Kubeflow v1 and KubeDL: the last condition that is true, conditions appended in order.


def kubeflow_status(obj: Object) -> str:
    """The type of the last condition whose status is "True"; ``Created`` if none."""
    for condition in reversed(_conditions(obj)):
        kind = text(condition.get("type"))
        if kind and condition.get("status") == "True":
            return kind
    return CREATED


def kubeflow_finished(obj: Object, status: str) -> datetime.datetime | None:
    """completionTime, else when the terminal condition became true."""
    completion = timestamp(mapping(obj.get("status")).get("completionTime"))
    if completion is not None or status not in TERMINAL_STATUSES:
        return completion
    for condition in reversed(_conditions(obj)):
        if condition.get("type") == status and condition.get("status") == "True":
            return timestamp(condition.get("lastTransitionTime"))
    return None


def kubeflow_running(obj: Object, status: str) -> datetime.datetime | None:
    """When the ``Running`` condition turned True, while it is True: the training
    operator rewrites its time when it turns False, and the upsert keeps the earliest
    time written (decision 32)."""
    running = _true(_conditions(obj), "Running")
    return timestamp(running.get("lastTransitionTime")) if running else None


def kubeflow_queue(obj: Object) -> str | None:
    """``runPolicy.schedulingPolicy.queue`` (a gang scheduler's queue)."""
    policy = mapping(mapping(mapping(obj.get("spec")).get("runPolicy")).get("schedulingPolicy"))
    return text(policy.get("queue"))


def kubeflow_roles(obj: Object, kind: JobKind) -> dict[str, Any]:
    """One role per replica spec, replicas defaulting to 1 as the controllers do."""
    key = kind.replica_specs_key
    specs = mapping(mapping(obj.get("spec")).get(key))
    return _roles((name, mapping(spec), f"spec.{key}.{name}", 1) for name, spec in specs.items())


# Trainer v2 TrainJob: conditions Suspended, Complete, Failed; running from jobsStatus.


def trainjob_status(obj: Object) -> str:
    """Failed, Succeeded (Complete), Suspended, Running (a child job active or ready)."""
    settled = _complete_failed_suspended(_conditions(obj))
    if settled is not None:
        return settled
    for job in sequence(mapping(obj.get("status")).get("jobsStatus")):
        job_status = mapping(job)
        if (integer(job_status.get("active")) or 0) > 0 or (
            integer(job_status.get("ready")) or 0
        ) > 0:
            return "Running"
    return CREATED


def trainjob_finished(obj: Object, status: str) -> datetime.datetime | None:
    """When the terminal condition (Complete or Failed) became true."""
    terminal = {"Succeeded": "Complete", "Failed": "Failed"}.get(status)
    condition = _true(_conditions(obj), terminal) if terminal else None
    return timestamp(condition.get("lastTransitionTime")) if condition else None


def trainjob_roles(obj: Object, kind: JobKind) -> dict[str, Any]:
    """The trainer's nodes: ``numNodes`` (1 when unset), each with ``resourcesPerNode``."""
    trainer = mapping(mapping(obj.get("spec")).get("trainer"))
    nodes = _replicas(trainer.get("numNodes"), "spec.trainer.numNodes", 1)
    per_node = mapping(trainer.get("resourcesPerNode"))
    return {"node": _role(nodes, {"containers": [{"resources": per_node}]})}


def jobset_roles(jobset: Object) -> dict[str, Any]:
    """A TrainJob's roles as its JobSet spells them, the runtime's defaults applied: each
    replicated job (``node``, ``dataset-initializer``, ...) with replicas x parallelism."""
    roles: dict[str, Any] = {}
    for index, raw in enumerate(sequence(mapping(jobset.get("spec")).get("replicatedJobs"))):
        replicated = mapping(raw)
        where = f"spec.replicatedJobs[{index}]"
        name = text(replicated.get("name")) or f"job-{index}"
        replicas = _replicas(replicated.get("replicas"), f"{where}.replicas", 1)
        job_spec = mapping(mapping(replicated.get("template")).get("spec"))
        parallelism = _replicas(
            job_spec.get("parallelism"), f"{where}.template.spec.parallelism", 1
        )
        pod_spec = mapping(job_spec.get("template")).get("spec")
        roles[name] = _role(replicas * parallelism, pod_spec)
    return roles


# KubeRay RayJob: no conditions; jobDeploymentStatus with jobStatus.

_RAY_DEPLOYMENT = {
    "Initializing": CREATED,
    "Waiting": CREATED,
    "Running": "Running",
    "Failed": "Failed",
    "ValidationFailed": "Failed",
    "Suspending": "Suspended",
    "Suspended": "Suspended",
    "Retrying": "Restarting",
}
_RAY_COMPLETE = {"SUCCEEDED": "Succeeded", "STOPPED": "Stopped", "FAILED": "Failed"}


def rayjob_status(obj: Object) -> str:
    """jobDeploymentStatus mapped; Complete reads jobStatus (SUCCEEDED, STOPPED, FAILED)."""
    status = mapping(obj.get("status"))
    deployment = text(status.get("jobDeploymentStatus")) or ""
    if deployment == "Complete":
        return _RAY_COMPLETE.get(text(status.get("jobStatus")) or "", "Succeeded")
    return _RAY_DEPLOYMENT.get(deployment, CREATED)


def rayjob_finished(obj: Object, status: str) -> datetime.datetime | None:
    """``status.endTime`` once the job is over."""
    if status not in (*TERMINAL_STATUSES, "Stopped"):
        return None
    return timestamp(mapping(obj.get("status")).get("endTime"))


def rayjob_running(obj: Object, status: str) -> datetime.datetime | None:
    """``status.startTime``, set when the job left ``New``, once it is past Created."""
    if status == CREATED:
        return None
    return timestamp(mapping(obj.get("status")).get("startTime"))


def rayjob_remark(obj: Object, status: str) -> str | None:
    """Why a RayJob failed: its status's reason and message."""
    if status != "Failed":
        return None
    raw = mapping(obj.get("status"))
    parts = [part for part in (text(raw.get("reason")), text(raw.get("message"))) if part]
    return ": ".join(parts) or None


def rayjob_roles(obj: Object, kind: JobKind) -> dict[str, Any]:
    """The head (1) and each worker group (replicas x numOfHosts) of its RayCluster spec."""
    cluster = mapping(mapping(obj.get("spec")).get("rayClusterSpec"))
    head = mapping(cluster.get("headGroupSpec"))
    roles: dict[str, Any] = {}
    if head:
        roles["head"] = _role(1, mapping(head.get("template")).get("spec"))
    for index, raw_group in enumerate(sequence(cluster.get("workerGroupSpecs"))):
        group = mapping(raw_group)
        where = f"spec.rayClusterSpec.workerGroupSpecs[{index}]"
        replicas = group.get("replicas")
        if replicas is None:
            replicas = group.get("minReplicas")
        count = _replicas(replicas, f"{where}.replicas", 0)
        hosts = _replicas(group.get("numOfHosts"), f"{where}.numOfHosts", 1)
        name = text(group.get("groupName")) or f"worker-{index}"
        roles[name] = _role(count * hosts, mapping(group.get("template")).get("spec"))
    return roles


# Volcano Job: status.state.phase; roles are spec.tasks.

_VOLCANO_PHASES = {
    "Pending": CREATED,
    "Running": "Running",
    "Completing": "Running",
    "Restarting": "Restarting",
    "Completed": "Succeeded",
    "Failed": "Failed",
    "Terminating": "Running",
    "Terminated": "Failed",
    "Aborting": "Suspended",
    "Aborted": "Suspended",
}


def volcano_status(obj: Object) -> str:
    """``status.state.phase`` mapped to the archive's statuses."""
    state = mapping(mapping(obj.get("status")).get("state"))
    return _VOLCANO_PHASES.get(text(state.get("phase")) or "", CREATED)


def volcano_finished(obj: Object, status: str) -> datetime.datetime | None:
    """When the state last changed, once the job is over."""
    if status not in TERMINAL_STATUSES:
        return None
    state = mapping(mapping(obj.get("status")).get("state"))
    return timestamp(state.get("lastTransitionTime"))


def volcano_running(obj: Object, status: str) -> datetime.datetime | None:
    """When the job first entered the Running phase (its conditions keep each phase)."""
    for condition in _conditions(obj):
        if condition.get("status") == "Running":
            return timestamp(condition.get("lastTransitionTime"))
    return None


def volcano_queue(obj: Object) -> str | None:
    """``spec.queue``."""
    return text(mapping(obj.get("spec")).get("queue"))


def volcano_roles(obj: Object, kind: JobKind) -> dict[str, Any]:
    """One role per task, by its name, with its replicas and template."""
    tasks = [mapping(task) for task in sequence(mapping(obj.get("spec")).get("tasks"))]
    return _roles(
        (text(task.get("name")) or f"task-{index}", task, f"spec.tasks[{index}]", 0)
        for index, task in enumerate(tasks)
    )


# A plain batch/v1 Job (opted in): conditions Complete, Failed, Suspended.


def batch_status(obj: Object) -> str:
    """Failed, Succeeded (Complete), Suspended, Running while a pod is active."""
    settled = _complete_failed_suspended(_conditions(obj))
    if settled is not None:
        return settled
    if (integer(mapping(obj.get("status")).get("active")) or 0) > 0:
        return "Running"
    return CREATED


def batch_finished(obj: Object, status: str) -> datetime.datetime | None:
    """completionTime (set on success), else when the Failed condition became true."""
    completion = timestamp(mapping(obj.get("status")).get("completionTime"))
    if completion is not None or status != "Failed":
        return completion
    failed = _true(_conditions(obj), "Failed")
    return timestamp(failed.get("lastTransitionTime")) if failed else None


def batch_running(obj: Object, status: str) -> datetime.datetime | None:
    """``status.startTime``: when the Job controller started the job's pods."""
    return timestamp(mapping(obj.get("status")).get("startTime"))


def batch_roles(obj: Object, kind: JobKind) -> dict[str, Any]:
    """One role, ``job``: ``parallelism`` pods (1 when unset) of its template."""
    spec = mapping(obj.get("spec"))
    pods = _replicas(spec.get("parallelism"), "spec.parallelism", 1)
    return {"job": _role(pods, mapping(spec.get("template")).get("spec"))}


STRATEGIES: dict[str, Strategy] = {
    "kubeflow": Strategy(
        kubeflow_status,
        kubeflow_finished,
        kubeflow_roles,
        kubeflow_running,
        queue=kubeflow_queue,
    ),
    # A TrainJob's status holds no time at which it started running.
    "trainjob": Strategy(trainjob_status, trainjob_finished, trainjob_roles),
    "rayjob": Strategy(rayjob_status, rayjob_finished, rayjob_roles, rayjob_running, rayjob_remark),
    "volcano": Strategy(
        volcano_status, volcano_finished, volcano_roles, volcano_running, queue=volcano_queue
    ),
    "batch": Strategy(batch_status, batch_finished, batch_roles, batch_running),
}
