"""Realistic Kubernetes objects, shaped as the Kubeflow and KubeDL controllers and the
kubelet write them: conditions, replicaStatuses, ownerReferences, training labels,
container statuses, Events. Built from the published Kubeflow examples in
``tests/fixtures/kubeflow-examples`` (specs only, as users write them)."""

import copy
import pathlib
import uuid
from typing import Any

import yaml

from jobarchive.core.kinds import JobKind, KindRegistry

# A Kubernetes object as the API serves it: JSON, any field possibly absent.
Body = dict[str, Any]
FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures"
EXAMPLES = FIXTURES / "kubeflow-examples"
T0 = "2026-11-20T10:00:00Z"


def example(filename: str) -> Body:
    """A job spec exactly as the Kubeflow project publishes it."""
    loaded: Body = yaml.safe_load((EXAMPLES / filename).read_text())
    return loaded


def fixture(filename: str) -> Body:
    """One of this project's own realistic objects in ``tests/fixtures``."""
    loaded: Body = yaml.safe_load((FIXTURES / filename).read_text())
    return loaded


def job_kind(kinds: KindRegistry, body: Body) -> JobKind:
    """The tracked kind of a job object; KeyError if ``kinds`` does not track it."""
    found = kinds.find(body.get("apiVersion"), body.get("kind"))
    if found is None:
        raise KeyError(f"{body.get('apiVersion')} {body.get('kind')} is not a tracked kind")
    return found


def fresh(body: Body) -> Body:
    """A copy of an object as a client creates it: without what the API server sets
    (uid, resourceVersion, creationTimestamp, status)."""
    result = copy.deepcopy(body)
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        result["metadata"].pop(field, None)
    result.pop("status", None)
    return result


def with_meta(body: Body, **meta: Any) -> Body:
    """A copy of an object with metadata fields set (uid, resourceVersion, ...)."""
    result = copy.deepcopy(body)
    result.setdefault("metadata", {}).update(meta)
    return result


def condition(kind: str, status: str = "True", at: str = T0, reason: str = "") -> Body:
    return {
        "type": kind,
        "status": status,
        "reason": reason or f"Job{kind}",
        "message": f"job is {kind.lower()}",
        "lastUpdateTime": at,
        "lastTransitionTime": at,
    }


def job_status(*conditions: Body, completion: str | None = None, **replicas: Body) -> Body:
    status: Body = {"conditions": list(conditions), "replicaStatuses": replicas, "startTime": T0}
    if completion:
        status["completionTime"] = completion
    return status


def owner_ref(job: Body) -> Body:
    """An ownerReference naming ``job`` (or any owner) as the controller, as its
    controller sets it on what it creates."""
    return {
        "apiVersion": job["apiVersion"],
        "kind": job["kind"],
        "name": job["metadata"]["name"],
        "uid": job["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def kubeflow_pod(job: Body, specs_key: str, replica_type: str, index: int) -> Body:
    """A pod as the training-operator creates it for one replica of a job."""
    name = job["metadata"]["name"]
    template = copy.deepcopy(job["spec"][specs_key][replica_type]["template"])
    labels = {
        "training.kubeflow.org/job-name": name,
        "training.kubeflow.org/operator-name": f"{job['kind'].lower()}-controller",
        "training.kubeflow.org/replica-type": replica_type.lower(),
        "training.kubeflow.org/replica-index": str(index),
    }
    if index == 0 and replica_type in ("Master", "Chief", "Launcher"):
        labels["training.kubeflow.org/job-role"] = "master"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{replica_type.lower()}-{index}",
            "namespace": job["metadata"].get("namespace", "default"),
            "labels": labels,
            "ownerReferences": [owner_ref(job)],
        },
        "spec": template["spec"],
        "status": {"phase": "Pending", "qosClass": "BestEffort"},
    }


def running_status(container: str, image: str, host_ip: str, pod_ip: str) -> Body:
    return {
        "phase": "Running",
        "hostIP": host_ip,
        "podIP": pod_ip,
        "startTime": "2026-11-20T10:00:05Z",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [
            {
                "name": container,
                "image": image,
                "ready": True,
                "restartCount": 0,
                "started": True,
                "state": {"running": {"startedAt": "2026-11-20T10:00:07Z"}},
            }
        ],
    }


def terminated_status(
    running: Body, exit_code: int, reason: str, finished: str, message: str | None = None
) -> Body:
    status = copy.deepcopy(running)
    status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
    terminated: Body = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": "2026-11-20T10:00:07Z",
        "finishedAt": finished,
        "containerID": f"containerd://{uuid.uuid4().hex}",
    }
    if message:
        terminated["message"] = message
    status["containerStatuses"][0].update(
        ready=False, started=False, state={"terminated": terminated}
    )
    return status


def event(
    involved: Body,
    reason: str,
    message: str,
    type: str = "Normal",
    count: int = 1,
    first: str = T0,
    last: str | None = None,
    component: str = "kubelet",
) -> Body:
    """A core/v1 Event as a controller or the kubelet records it."""
    meta = involved["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{meta['name']}.{uuid.uuid4().hex[:16]}",
            "namespace": meta.get("namespace", "default"),
        },
        "involvedObject": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace", "default"),
            "uid": meta["uid"],
            "resourceVersion": meta.get("resourceVersion", ""),
        },
        "reason": reason,
        "message": message,
        "type": type,
        "count": count,
        "firstTimestamp": first,
        "lastTimestamp": last or first,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": "",
    }
