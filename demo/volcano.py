"""The demo's Volcano Job: submitted to Volcano's ``vision`` queue (``spec.queue``), a
parameter server and three GPU workers of which two run and one is never scheduled, as
the Volcano controller and the kubelet write them. It is still running when the demo
ends, so its GPU time counts to now."""

import copy

from demo.controllers import ago, owned, running, scheduled
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.logs import Logs
from testbed.objects import Body

VOLCANO_JOBS = resource_of("batch.volcano.sh", "Job")
IMAGE = "volcanosh/dist-mnist-tf-example:0.0.1"
UNSCHEDULABLE = "0/8 nodes are available: 8 Insufficient nvidia.com/gpu. preemption: 0/8 nodes"


def submitted(created: str) -> Body:
    """The Volcano example job as its user submits it, with three workers."""
    body = owned(o.fresh(o.fixture("volcano-job.yaml")), "team-vision", "erin")
    body["metadata"].update(name="detr-train", namespace="vision", creationTimestamp=created)
    body["spec"].update(queue="vision", minAvailable=3)
    body["spec"]["tasks"][1]["replicas"] = 3
    return body


def task_pod(job: Body, task: Body, index: int) -> Body:
    """A pod as the Volcano controller creates it for one replica of a task."""
    meta = job["metadata"]
    labels = {
        "volcano.sh/job-name": meta["name"],
        "volcano.sh/task-spec": task["name"],
        "volcano.sh/job-namespace": meta["namespace"],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{meta['name']}-{task['name']}-{index}",
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [o.owner_ref(job)],
            "creationTimestamp": meta["creationTimestamp"],
        },
        "spec": copy.deepcopy(task["template"]["spec"]),
        "status": {"phase": "Pending"},
    }


async def running_with_one_pod_unscheduled(cluster: Cluster, logs: Logs) -> None:
    """Created 40 minutes ago, running 38 minutes, its last worker still Pending."""
    job = await cluster.create(VOLCANO_JOBS, submitted(ago(40)))
    started = ago(38)
    pods = [
        task_pod(job, task, index)
        for task in job["spec"]["tasks"]
        for index in range(task["replicas"])
    ]
    *placed, pending = [await cluster.create(PODS, pod) for pod in pods]
    for node, pod in enumerate(placed, start=21):
        await scheduled(cluster, pod, node, started)
        logs.write(pod, "tensorflow", f"step 18400: {pod['metadata']['name']} training\n")
        status = running("tensorflow", IMAGE, node, started)
        meta = pod["metadata"]
        await cluster.patch(PODS, meta["namespace"], meta["name"], {"status": status})
    never = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    meta = pending["metadata"]
    await cluster.patch(PODS, meta["namespace"], meta["name"], {"status": {"conditions": [never]}})
    await cluster.create(
        EVENTS,
        o.event(
            pending,
            "FailedScheduling",
            UNSCHEDULABLE,
            type="Warning",
            first=ago(38),
            component="volcano",
        ),
    )
    state = {"phase": "Running", "lastTransitionTime": started}
    conditions = [
        {"status": "Pending", "lastTransitionTime": ago(40)},
        {"status": "Running", "lastTransitionTime": started},
    ]
    status = {"state": state, "conditions": conditions, "minAvailable": 3, "running": 3}
    await cluster.patch(
        VOLCANO_JOBS, job["metadata"]["namespace"], job["metadata"]["name"], {"status": status}
    )
