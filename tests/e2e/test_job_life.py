"""The real operator against the emulated API and MariaDB, through a training job's life."""

import datetime
import json

import pytest

from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.operator import OperatorProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
RAN = datetime.datetime(2026, 11, 20, 10, 1, tzinfo=datetime.UTC)


async def test_a_job_that_runs_and_succeeds_is_recorded_with_its_pods_and_events(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    body = o.example("pytorch-simple.yaml")
    body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team-a-queue"}
    job = await cluster.create(PYTORCHJOBS, body)
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    await cluster.patch(PYTORCHJOBS, ns, name, {"status": o.job_status(o.condition("Created"))})
    master = await cluster.create(PODS, o.kubeflow_pod(job, "pytorchReplicaSpecs", "Master", 0))
    worker_body = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", 0)
    worker_body["spec"]["nodeName"] = "gpu-node-7"
    worker_body["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1500m", "memory": "6Gi"},
        "limits": {"nvidia.com/gpu": 2},
    }
    worker = await cluster.create(PODS, worker_body)
    scheduled = await cluster.create(EVENTS, o.event(worker, "Scheduled", "Successfully assigned"))
    await cluster.create(
        EVENTS, o.event(job, "SuccessfulCreatePod", f"Created pod: {name}-master-0")
    )

    master_running = o.running_status("pytorch", IMAGE, "10.0.0.11", "172.16.0.11")
    worker_running = o.running_status("pytorch", IMAGE, "10.0.0.12", "172.16.0.12")
    await cluster.patch(PODS, ns, master["metadata"]["name"], {"status": master_running})
    await cluster.patch(PODS, ns, worker["metadata"]["name"], {"status": worker_running})
    ran = "2026-11-20T10:01:00Z"
    await cluster.patch(
        PYTORCHJOBS,
        ns,
        name,
        {"status": o.job_status(o.condition("Created"), o.condition("Running", at=ran))},
    )

    async def running() -> Job | None:
        return await Job.filter(job_id=job["metadata"]["uid"], status="Running").first()

    # Seen running before it finishes: Kopf hands a handler only an object's latest state.
    assert (await eventually(running)).gmt_job_running == RAN
    await cluster.patch(
        EVENTS,
        ns,
        scheduled["metadata"]["name"],
        {"count": 3, "lastTimestamp": "2026-11-20T10:05:00Z"},
    )
    await cluster.patch(
        PODS,
        ns,
        worker["metadata"]["name"],
        {"status": o.terminated_status(worker_running, 137, "OOMKilled", "2026-11-20T10:20:00Z")},
    )
    await cluster.patch(
        PODS,
        ns,
        master["metadata"]["name"],
        {"status": o.terminated_status(master_running, 0, "Completed", "2026-11-20T10:30:00Z")},
    )
    await cluster.patch(
        PYTORCHJOBS,
        ns,
        name,
        {
            "status": o.job_status(
                o.condition("Created"),
                # The training operator rewrites the time as the condition turns False.
                o.condition("Running", "False", at="2026-11-20T10:30:01Z"),
                o.condition("Succeeded", at="2026-11-20T10:30:01Z"),
                completion="2026-11-20T10:30:02Z",
            )
        },
    )

    async def finished() -> Job | None:
        return await Job.filter(job_id=job["metadata"]["uid"], status="Succeeded").first()

    row = await eventually(finished)
    assert (row.name, row.namespace, row.kind) == (name, ns, "PyTorchJob")
    assert row.gmt_finished == datetime.datetime(2026, 11, 20, 10, 30, 2, tzinfo=datetime.UTC)
    assert (row.gmt_job_running, row.queue) == (RAN, "team-a-queue")
    assert json.loads(row.resources) == {
        "Master": {"replicas": 1, "resources": {"limits": {}, "requests": {}}},
        "Worker": {"replicas": 1, "resources": {"limits": {}, "requests": {}}},
    }
    assert (row.deleted, row.is_in_etcd) == (False, True)

    async def pods_final() -> list[Pod]:
        pods = await Pod.filter(job_id=job["metadata"]["uid"]).order_by("name")
        return pods if [p.status for p in pods] == ["Succeeded", "Failed"] else []

    master_row, worker_row = await eventually(pods_final)
    assert (master_row.replica_type, master_row.image) == ("master", IMAGE)
    assert (worker_row.host_ip, worker_row.pod_ip) == ("10.0.0.12", "172.16.0.12")
    assert (worker_row.node_name, master_row.node_name) == ("gpu-node-7", None)
    assert (worker_row.gpus, worker_row.cpu_millis, worker_row.memory_bytes) == (2, 1500, 6 * 2**30)
    assert (master_row.gpus, master_row.cpu_millis, master_row.memory_bytes) == (0, 0, 0)
    assert worker_row.remark == "OOMKilled (exit code 137)"
    assert master_row.remark is None

    async def events_final() -> list[Event]:
        events = await Event.all().order_by("reason")
        return events if len(events) == 2 and events[0].count == 3 else []

    scheduled_row, created_row = await eventually(events_final)
    assert (scheduled_row.kind, scheduled_row.obj_uid) == ("Pod", worker["metadata"]["uid"])
    assert scheduled_row.last_timestamp.isoformat() == "2026-11-20T10:05:00+00:00"
    assert (created_row.kind, created_row.obj_name) == ("PyTorchJob", name)
