"""Realistic rows and objects for the benchmarks: Kubeflow jobs, their pods and Events,
built from the same fixtures as the tests and converted by the real converters."""

import dataclasses
import uuid
from collections.abc import Sequence

from jobarchive.config import load
from jobarchive.core.rows import EventRow, JobRow, PodRow, Row
from jobarchive.recording.convert import event_row, job_row, pod_row
from jobarchive.storage.models import Event, Job, Pod, Stamped
from testbed import kubelet
from testbed import objects as o
from testbed.objects import Body

KINDS = load({}).kinds
PYTORCH = next(k for k in KINDS if k.group == "kubeflow.org" and k.kind == "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def job_object(
    index: int,
    namespace: str = "bench",
    example: str = "pytorch-simple.yaml",
    prefix: str = "mnist",
) -> Body:
    """A running job made from a published example, named ``prefix-index``."""
    body = o.with_meta(
        o.example(example),
        name=f"{prefix}-{index}",
        namespace=namespace,
        uid=str(uuid.uuid4()),
        resourceVersion=str(1000 + index),
        creationTimestamp=o.T0,
    )
    body["status"] = o.job_status(o.condition("Created"), o.condition("Running"))
    return body


def pod_object(job: Body, index: int, specs_key: str = "pytorchReplicaSpecs") -> Body:
    """A running worker pod of ``job``, as its controller and the kubelet leave it."""
    pod = o.kubeflow_pod(job, specs_key, "Worker", index)
    pod["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=o.T0)
    container = pod["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1},
        "limits": {"nvidia.com/gpu": 1, "memory": "16Gi"},
    }
    pod["spec"]["nodeName"] = f"gpu-node-{index % 64}"
    pod["status"] = o.running_status(
        container["name"], container["image"], f"10.0.{index % 250}.1", f"172.16.{index % 250}.9"
    )
    return pod


def event_object(pod: Body) -> Body:
    event = o.event(pod, "Pulled", f'Container image "{IMAGE}" already present on machine')
    event["metadata"].update(uid=str(uuid.uuid4()), resourceVersion="1", creationTimestamp=o.T0)
    return event


def kubelet_pod(job: Body, index: int, specs_key: str = "pytorchReplicaSpecs") -> Body:
    """``pod_object`` whole, as an API server serves it (``testbed.kubelet``)."""
    return kubelet.pod(pod_object(job, index, specs_key), index)


def kubelet_event(pod: Body, index: int) -> Body:
    """``event_object`` whole, as an API server serves it (``testbed.kubelet``)."""
    return kubelet.event(event_object(pod), index)


@dataclasses.dataclass(frozen=True)
class Rows:
    """Converted rows of the three tables, as the store takes them."""

    jobs: list[JobRow]
    pods: list[PodRow]
    events: list[EventRow]

    def by_model(self) -> list[tuple[type[Stamped], Sequence[Row]]]:
        """Each table's model with its rows."""
        return [(Job, self.jobs), (Pod, self.pods), (Event, self.events)]

    def __len__(self) -> int:
        return len(self.jobs) + len(self.pods) + len(self.events)


def rows(jobs: int, pods_per_job: int) -> Rows:
    """Converted rows: jobs, their pods, and one Event per pod."""
    result = Rows([], [], [])
    for j in range(jobs):
        job = job_object(j)
        result.jobs.append(job_row(job, PYTORCH, "bench-region"))
        for p in range(pods_per_job):
            pod = pod_object(job, p)
            result.pods.append(pod_row(pod, job["metadata"]["uid"], "pytorch", "bench-region"))
            result.events.append(event_row(event_object(pod), "bench-region"))
    return result


def _next(version: str) -> str:
    return str(int(version) + 1)


def newer(rows: Rows) -> Rows:
    """The same rows one resourceVersion later, in a later state: the update pass."""
    return Rows(
        jobs=[
            {**row, "version": _next(row["version"]), "status": "Succeeded"} for row in rows.jobs
        ],
        pods=[
            {**row, "version": _next(row["version"]), "status": "Succeeded"} for row in rows.pods
        ],
        events=[
            {**row, "version": _next(row["version"]), "count": row["count"] + 1}
            for row in rows.events
        ],
    )
