"""Realistic rows and objects for the benchmarks: Kubeflow jobs, their pods and Events,
built from the same fixtures as the tests and converted by the real converters."""

import copy
import uuid
from typing import Any

from jobarchive.config import load
from jobarchive.recording.convert import event_row, job_row, pod_row
from testbed import objects as o

Body = dict[str, Any]
KINDS = load({}).kinds
PYTORCH = next(k for k in KINDS if k.group == "kubeflow.org" and k.kind == "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def job_object(index: int, namespace: str = "bench") -> Body:
    body = o.with_meta(
        o.example("pytorch-simple.yaml"),
        name=f"mnist-{index}",
        namespace=namespace,
        uid=str(uuid.uuid4()),
        resourceVersion=str(1000 + index),
        creationTimestamp=o.T0,
    )
    body["status"] = o.job_status(o.condition("Created"), o.condition("Running"))
    return body


def pod_object(job: Body, index: int) -> Body:
    pod = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index)
    pod["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=o.T0)
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1, "memory": "16Gi"},
    }
    pod["spec"]["nodeName"] = f"gpu-node-{index % 64}"
    pod["status"] = o.running_status(
        "pytorch", IMAGE, f"10.0.{index % 250}.1", f"172.16.{index % 250}.9"
    )
    return pod


def event_object(pod: Body) -> Body:
    event = o.event(pod, "Pulled", f'Container image "{IMAGE}" already present on machine')
    event["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=o.T0)
    return event


def rows(jobs: int, pods_per_job: int) -> dict[str, list[Body]]:
    """Converted rows: jobs, their pods, and one Event per pod."""
    result: dict[str, list[Body]] = {"job": [], "pod": [], "event": []}
    for j in range(jobs):
        job = job_object(j)
        result["job"].append(job_row(job, PYTORCH, "bench-region"))
        for p in range(pods_per_job):
            pod = pod_object(job, p)
            result["pod"].append(pod_row(pod, job["metadata"]["uid"], "pytorch", "bench-region"))
            result["event"].append(event_row(event_object(pod), "bench-region"))
    return result


def newer(rows_by_table: dict[str, list[Body]]) -> dict[str, list[Body]]:
    """The same rows one resourceVersion later, in a later state: the update pass."""
    result: dict[str, list[Body]] = {}
    for table, rows_ in rows_by_table.items():
        updated = []
        for row in rows_:
            row = copy.copy(row)
            row["version"] = str(int(row["version"]) + 1)
            if table == "event":
                row["count"] += 1
            else:
                row["status"] = "Succeeded"
            updated.append(row)
        result[table] = updated
    return result
