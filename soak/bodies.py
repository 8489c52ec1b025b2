"""The objects of the workload, shaped as their controllers write them: Kubeflow's
training-operator (jobs, their conditions, their pods), mpi-operator (an MPIJob's
launcher as a batch Job), the kubelet and the scheduler (pod statuses, Events).

Pure functions of their arguments; the specs are the published Kubeflow examples and
this project's MPIJob fixture (``tests/fixtures``).
"""

import copy
import dataclasses
import datetime
import random
import string
import uuid
from collections.abc import Callable

from testbed import objects as o
from testbed.cluster import Resource, now_rfc3339, resource_of
from testbed.objects import Body

TERMINAL = ("Succeeded", "Failed")
LAUNCHER = "Launcher"


@dataclasses.dataclass(frozen=True)
class KindPlan:
    """One job kind of the workload: where it lives, its spec, its roles."""

    resource: Resource
    spec: Callable[[], Body]
    specs_key: str
    # The controller's name in the Events it records about its jobs.
    controller: str
    # An MPIJob's launcher runs as a batch Job of its own, not as a pod of the job.
    launcher: bool = False

    @property
    def kind(self) -> str:
        """The kind's name (``PyTorchJob``)."""
        return self.resource.kind


def _mpijob() -> Body:
    body = o.fixture("mpijob-v2beta1-pi.yaml")
    body.pop("status", None)
    return body


PLANS = (
    KindPlan(
        resource_of("kubeflow.org", "PyTorchJob"),
        lambda: o.example("pytorch-simple.yaml"),
        "pytorchReplicaSpecs",
        "pytorchjob-controller",
    ),
    KindPlan(
        resource_of("kubeflow.org", "TFJob"),
        lambda: o.example("tfjob-simple.yaml"),
        "tfReplicaSpecs",
        "tfjob-controller",
    ),
    KindPlan(
        resource_of("kubeflow.org", "MPIJob"),
        _mpijob,
        "mpiReplicaSpecs",
        "mpi-job-controller",
        launcher=True,
    ),
    KindPlan(
        resource_of("kubeflow.org", "XGBoostJob"),
        lambda: o.example("xgboostjob.yaml"),
        "xgbReplicaSpecs",
        "xgboostjob-controller",
    ),
    KindPlan(
        resource_of("kubeflow.org", "JAXJob"),
        lambda: o.example("jaxjob-simple.yaml"),
        "jaxReplicaSpecs",
        "jaxjob-controller",
    ),
)


def suffix(rng: random.Random, length: int = 5) -> str:
    """A random suffix, as controllers give generated names."""
    return "".join(rng.choices(string.ascii_lowercase + string.digits, k=length))


def moment(text: str | None) -> datetime.datetime | None:
    """An RFC 3339 time as the database returns it: naive, in UTC."""
    if text is None:
        return None
    parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed.astimezone(datetime.UTC).replace(tzinfo=None)


def job(plan: KindPlan, namespace: str, name: str) -> Body:
    """A new job of the kind, as a user submits it (no status, no uid)."""
    body = plan.spec()
    metadata = {
        key: value
        for key, value in body.get("metadata", {}).items()
        if key not in ("uid", "resourceVersion", "creationTimestamp", "generation")
    }
    body["metadata"] = {**metadata, "name": name, "namespace": namespace}
    return body


def roles(plan: KindPlan, job_body: Body) -> list[tuple[str, int]]:
    """(replica type, index) of every pod the job's controller creates itself."""
    specs = job_body["spec"][plan.specs_key]
    return [
        (role, index)
        for role, spec in specs.items()
        if not (plan.launcher and role == LAUNCHER)
        for index in range(int(spec.get("replicas", 1)))
    ]


def set_condition(conditions: list[Body], kind: str, reason: str, message: str) -> list[Body]:
    """The conditions after the training-operator sets ``kind``: the old condition of that
    type goes, the new one is appended, true; a terminal or Restarting condition makes
    Running false, and Running makes Restarting false."""
    at = now_rfc3339()
    result = [copy.deepcopy(c) for c in conditions if c["type"] != kind]
    falsified = {"Running"} if kind in (*TERMINAL, "Restarting") else set()
    if kind == "Running":
        falsified = {"Restarting"}
    for condition in result:
        if condition["type"] in falsified and condition["status"] == "True":
            condition.update(status="False", lastUpdateTime=at, lastTransitionTime=at)
    result.append(o.condition(kind, at=at, reason=reason) | {"message": message})
    return result


def status_of(conditions: list[Body]) -> str:
    """The job's status as ARCHITECTURE.md defines it for Kubeflow v1 kinds: the type of
    the last true condition, ``Created`` when none is."""
    true = [c["type"] for c in conditions if c["status"] == "True"]
    return true[-1] if true else "Created"


def job_status(conditions: list[Body], started: str, completion: str | None = None) -> Body:
    """A job's status as the training-operator writes it."""
    status: Body = {"conditions": conditions, "replicaStatuses": {}, "startTime": started}
    if completion is not None:
        status["completionTime"] = completion
    return status


def launcher_job(job_body: Body) -> Body:
    """The batch Job mpi-operator creates for an MPIJob's launcher, owned by the MPIJob."""
    meta = job_body["metadata"]
    template = copy.deepcopy(job_body["spec"]["mpiReplicaSpecs"][LAUNCHER]["template"])
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": f"{meta['name']}-launcher",
            "namespace": meta["namespace"],
            "labels": {
                "training.kubeflow.org/job-name": meta["name"],
                "training.kubeflow.org/job-role": "launcher",
                "training.kubeflow.org/operator-name": "mpi-operator",
            },
            "ownerReferences": [o.owner_ref(job_body)],
        },
        "spec": {"backoffLimit": 6, "template": template},
        "status": {},
    }


def launcher_pod(job_body: Body, batch_job: Body, suffix: str) -> Body:
    """The launcher's pod: owned by the batch Job, linked to the MPIJob by its labels."""
    batch_meta = batch_job["metadata"]
    template = batch_job["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{batch_meta['name']}-{suffix}",
            "namespace": batch_meta["namespace"],
            "labels": {
                "batch.kubernetes.io/controller-uid": batch_meta["uid"],
                "batch.kubernetes.io/job-name": batch_meta["name"],
                "controller-uid": batch_meta["uid"],
                "job-name": batch_meta["name"],
                "training.kubeflow.org/job-name": job_body["metadata"]["name"],
                "training.kubeflow.org/job-role": "launcher",
                "training.kubeflow.org/operator-name": "mpi-operator",
                "training.kubeflow.org/replica-type": "launcher",
            },
            "ownerReferences": [o.owner_ref(batch_job)],
        },
        "spec": {"restartPolicy": "Never", **copy.deepcopy(template["spec"])},
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


def container(pod: Body) -> Body:
    """The pod's (only) container."""
    found: Body = pod["spec"]["containers"][0]
    return found


def scheduled(node: int) -> Body:
    """A pod bound to a node, its container being created: still Pending."""
    return {
        "phase": "Pending",
        "hostIP": f"10.0.{node // 250}.{node % 250 + 1}",
        "conditions": [{"type": "PodScheduled", "status": "True"}],
        "startTime": now_rfc3339(),
    }


def running(pod: Body, node: int, pod_ip: str, restarts: int = 0, last: Body | None = None) -> Body:
    """A Running pod's status; ``last`` is its container's previous termination."""
    spec = container(pod)
    now = now_rfc3339()
    state: Body = {
        "name": spec["name"],
        "image": spec["image"],
        "imageID": f"{spec['image']}@sha256:{uuid.uuid4().hex}{uuid.uuid4().hex}",
        "containerID": f"containerd://{uuid.uuid4().hex}",
        "ready": True,
        "started": True,
        "restartCount": restarts,
        "state": {"running": {"startedAt": now}},
    }
    if last is not None:
        state["lastState"] = {"terminated": last}
    status = scheduled(node)
    status.update(
        phase="Running",
        podIP=pod_ip,
        podIPs=[{"ip": pod_ip}],
        conditions=[
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": "True"},
        ],
        containerStatuses=[state],
    )
    return status


def termination(code: int, reason: str, message: str | None = None) -> Body:
    """A container's terminated state, finished now."""
    now = now_rfc3339()
    state: Body = {
        "exitCode": code,
        "reason": reason,
        "startedAt": now,
        "finishedAt": now,
        "containerID": f"containerd://{uuid.uuid4().hex}",
    }
    if message:
        state["message"] = message
    return state


def terminated(status: Body, state: Body) -> Body:
    """The status of a pod whose container ended with ``state`` and is not restarted."""
    result = copy.deepcopy(status)
    result["phase"] = "Succeeded" if state["exitCode"] == 0 else "Failed"
    result["conditions"] = [
        {"type": "PodScheduled", "status": "True"},
        {"type": "Ready", "status": "False", "reason": "PodCompleted"},
    ]
    result["containerStatuses"][0].update(ready=False, started=False, state={"terminated": state})
    return result


def remark(state: Body) -> str:
    """What the archive says of a failed pod, as ARCHITECTURE.md defines it."""
    head = f"{state['reason']} (exit code {state['exitCode']})"
    return f"{head}: {state['message']}" if state.get("message") else head


def event(
    involved: Body, reason: str, message: str, type: str = "Normal", component: str = "kubelet"
) -> Body:
    """A core/v1 Event about ``involved``, first seen now."""
    return o.event(involved, reason, message, type=type, first=now_rfc3339(), component=component)


def plain_pod(namespace: str, name: str, labels: Body, image: str) -> Body:
    """A pod of no training job (a web server, a backup)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": name.split("-")[0], "image": image}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def node_event(name: str, uid: str, reason: str, message: str) -> Body:
    """An Event about a Node: in ``default``, its subject in no namespace."""
    subject = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
    body = event(subject, reason, message, component="kubelet")
    body["metadata"]["namespace"] = "default"
    del body["involvedObject"]["namespace"]
    return body
