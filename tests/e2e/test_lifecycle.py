"""Deletion, recreation, attribution out of order, and what is not stored: the real
operator against the emulated API and MariaDB."""

import datetime
import uuid
from typing import Any

import pytest

from jobarchive.storage.models import Event, Job, Pod
from testbed import objects as o
from testbed.cluster import BATCH_JOBS, EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
MPIJOBS = resource_of("kubeflow.org", "MPIJob")
KUBEDL_TFJOBS = resource_of("training.kubedl.io", "TFJob")
IMAGE = "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest"


async def running_tfjob(cluster: Cluster, name: str = "tfjob-simple", **meta: Any) -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), name=name, **meta)
    job = await cluster.create(TFJOBS, body)
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    status = o.job_status(o.condition("Created"), o.condition("Running"))
    return await cluster.patch(TFJOBS, ns, name, {"status": status})


async def job_row(uid: str, **expected: object) -> Job | None:
    return await Job.filter(job_id=uid, **expected).first()


async def test_a_running_job_deleted_is_stopped_and_so_is_its_running_pod(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    # As `kubectl delete --cascade=foreground` does: the job stays, with a deletionTimestamp,
    # until its dependents are gone and the finalizer is removed.
    job = await running_tfjob(cluster, finalizers=["foregroundDeletion"])
    ns, name, uid = job["metadata"]["namespace"], job["metadata"]["name"], job["metadata"]["uid"]
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    running = o.running_status("tensorflow", IMAGE, "10.0.0.1", "172.16.0.1")
    await cluster.patch(PODS, ns, pod["metadata"]["name"], {"status": running})
    await eventually(lambda: Pod.filter(pod_id=pod["metadata"]["uid"], status="Running").first())

    await cluster.delete(TFJOBS, ns, name)
    marked = await eventually(lambda: job_row(uid, deleted=True))
    assert (marked.status, marked.is_in_etcd, marked.gmt_finished) == ("Running", True, None)

    released = datetime.datetime.now(tz=datetime.UTC)
    await cluster.delete(PODS, ns, pod["metadata"]["name"])
    await cluster.patch(TFJOBS, ns, name, {"metadata": {"finalizers": []}})
    gone = await eventually(lambda: job_row(uid, is_in_etcd=False))
    assert (gone.status, gone.deleted) == ("Stopped", True)
    # Stopped when the operator saw it go: after its release, before the row was read.
    finished = gone.gmt_finished
    assert finished is not None and released <= finished <= datetime.datetime.now(tz=datetime.UTC)
    pod_row = await eventually(
        lambda: Pod.filter(pod_id=pod["metadata"]["uid"], is_in_etcd=False).first()
    )
    assert (pod_row.status, pod_row.deleted) == ("Stopped", True)


async def test_a_succeeded_job_deleted_keeps_its_status(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    job = await running_tfjob(cluster)
    ns, name, uid = job["metadata"]["namespace"], job["metadata"]["name"], job["metadata"]["uid"]
    done = o.job_status(o.condition("Created"), o.condition("Succeeded"), completion=o.T0)
    await cluster.patch(TFJOBS, ns, name, {"status": done})
    await cluster.delete(TFJOBS, ns, name)
    gone = await eventually(lambda: job_row(uid, is_in_etcd=False))
    assert (gone.status, gone.gmt_finished) == (
        "Succeeded",
        datetime.datetime(2026, 11, 20, 10, tzinfo=datetime.UTC),
    )


async def test_a_job_recreated_under_the_same_name_is_a_second_row(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    first = await running_tfjob(cluster)
    ns, name = first["metadata"]["namespace"], first["metadata"]["name"]
    await cluster.delete(TFJOBS, ns, name)
    second = await running_tfjob(cluster)
    assert second["metadata"]["uid"] != first["metadata"]["uid"]
    await eventually(lambda: job_row(first["metadata"]["uid"], is_in_etcd=False))
    await eventually(lambda: job_row(second["metadata"]["uid"], status="Running"))
    rows = await Job.filter(namespace=ns, name=name).order_by("id")
    assert [(r.job_id, r.is_in_etcd) for r in rows] == [
        (first["metadata"]["uid"], False),
        (second["metadata"]["uid"], True),
    ]


async def test_unrelated_pods_and_their_events_are_not_stored(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    nginx = await cluster.create(
        PODS,
        {
            "metadata": {"name": "web-7d9f8", "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]},
            "status": {"phase": "Running"},
        },
    )
    backup = await cluster.create(
        PODS,
        {
            "metadata": {
                "name": "backup-x2",
                "namespace": "ops",
                "labels": {"job-name": "backup", "batch.kubernetes.io/job-name": "backup"},
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": "backup",
                        "uid": str(uuid.uuid4()),
                        "controller": True,
                    }
                ],
            },
            "spec": {"containers": [{"name": "backup", "image": "restic:0.17"}]},
        },
    )
    await cluster.create(EVENTS, o.event(nginx, "Pulled", "Container image pulled"))
    await cluster.create(EVENTS, o.event(backup, "Started", "Started container backup"))
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": str(uuid.uuid4())},
    }
    await cluster.create(EVENTS, o.event(deployment, "ScalingReplicaSet", "Scaled up"))

    # A tracked job's Event created after them is the sign the operator got past them.
    job = await running_tfjob(cluster)
    await cluster.create(EVENTS, o.event(job, "SuccessfulCreatePod", "Created pod"))
    await eventually(lambda: Event.filter(obj_uid=job["metadata"]["uid"]).exists())
    assert await Pod.all().count() == 0
    assert await Event.all().count() == 1


async def test_an_event_that_arrives_before_its_pod_is_kept(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    job = await running_tfjob(cluster)
    pod = o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 1)
    pod["metadata"]["uid"] = str(uuid.uuid4())
    pod["apiVersion"], pod["kind"] = "v1", "Pod"
    await cluster.create(EVENTS, o.event(pod, "Scheduled", "Successfully assigned to node-a"))
    await cluster.create(EVENTS, o.event(job, "SuccessfulCreatePod", "Created pod"))
    await eventually(lambda: Event.filter(obj_uid=job["metadata"]["uid"]).exists())
    assert not await Event.filter(obj_uid=pod["metadata"]["uid"]).exists()

    await cluster.create(PODS, pod)
    row = await eventually(lambda: Event.filter(obj_uid=pod["metadata"]["uid"]).first())
    assert (row.reason, row.kind, row.obj_name) == ("Scheduled", "Pod", pod["metadata"]["name"])


async def test_an_mpijob_launcher_seen_before_its_job_is_linked_through_its_batch_job(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    job_body = o.fixture("mpijob-v2beta1-pi.yaml")
    launcher = o.fixture("mpijob-v2beta1-launcher-pod.yaml")
    for body in (job_body, launcher):
        for field in ("uid", "resourceVersion", "creationTimestamp"):
            del body["metadata"][field]
    launcher = await cluster.create(PODS, launcher)
    await cluster.create(EVENTS, o.event(launcher, "Started", "Started container mpi-launcher"))
    job = await cluster.create(MPIJOBS, job_body)
    # mpi-operator's batch Job, which owns the launcher, comes last of all.
    [owner] = launcher["metadata"]["ownerReferences"]
    await cluster.create(
        BATCH_JOBS,
        {
            "metadata": {
                "name": owner["name"],
                "namespace": job["metadata"]["namespace"],
                "uid": owner["uid"],
                "ownerReferences": [o.owner_ref(job)],
            }
        },
    )

    pod_row = await eventually(lambda: Pod.filter(pod_id=launcher["metadata"]["uid"]).first())
    assert (pod_row.job_id, pod_row.replica_type) == (job["metadata"]["uid"], "launcher")
    assert pod_row.image == "mpioperator/mpi-pi:openmpi"
    await eventually(lambda: Event.filter(obj_uid=launcher["metadata"]["uid"]).exists())
    job_row_ = await Job.get(job_id=job["metadata"]["uid"])
    assert (job_row_.kind, job_row_.status) == ("MPIJob", "Succeeded")


async def test_a_kubedl_job_and_its_pod_are_recorded(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    body = o.fixture("kubedl-tfjob.yaml")
    for field in ("uid", "resourceVersion", "creationTimestamp"):
        del body["metadata"][field]
    job = await cluster.create(KUBEDL_TFJOBS, body)
    pod = o.kubeflow_pod(job, "tfReplicaSpecs", "PS", 0)
    pod["metadata"]["labels"] = {
        "job-name": "mnist",
        "replica-type": "ps",
        "group-name": "kubedl.io",
    }
    pod = await cluster.create(PODS, pod)
    row = await eventually(lambda: Pod.filter(pod_id=pod["metadata"]["uid"]).first())
    assert (row.job_id, row.replica_type) == (job["metadata"]["uid"], "ps")
    job_row_ = await Job.get(job_id=job["metadata"]["uid"])
    assert (job_row_.kind, job_row_.tenant, job_row_.owner) == ("TFJob", "search", "alice")


async def test_the_operator_never_writes_to_the_cluster(
    cluster: Cluster, operator: OperatorProcess
) -> None:
    job = await running_tfjob(cluster)
    ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    await cluster.create(EVENTS, o.event(pod, "Scheduled", "Successfully assigned"))
    await cluster.delete(TFJOBS, ns, name)
    await eventually(lambda: job_row(job["metadata"]["uid"], is_in_etcd=False))
    await eventually(lambda: Event.filter(obj_uid=pod["metadata"]["uid"]).exists())
    assert cluster.writes_by_others() == []
    stored = cluster.emulator.objects[PODS.key, ns, pod["metadata"]["name"]]
    assert "finalizers" not in stored["metadata"]
    assert not [k for k in stored["metadata"].get("annotations", {}) if "kopf" in k]
