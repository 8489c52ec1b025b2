"""Objects deleted while the operator was down are marked gone when it comes back."""

import datetime
import signal

import kmock
import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.infra.cluster import METADATA_ONLY
from jobarchive.storage.models import Job, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.objects import Body
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
IMAGE = "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest"
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]


async def tfjob(cluster: Cluster, name: str, *conditions: Body) -> Body:
    job = await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name=name))
    meta = job["metadata"]
    status = o.job_status(o.condition("Created"), *conditions)
    return await cluster.patch(TFJOBS, meta["namespace"], meta["name"], {"status": status})


async def worker(cluster: Cluster, job: Body, phase: str) -> Body:
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    running = o.running_status("tensorflow", IMAGE, "10.0.0.1", "172.16.0.1")
    status = running if phase == "Running" else o.terminated_status(running, 0, "Completed", o.T0)
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    return await cluster.patch(PODS, ns, name, {"status": status})


async def test_jobs_and_pods_deleted_while_down_are_marked_gone_after_a_restart(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    first = await start_operator()
    await cluster.wait_watching(ALL)
    running = await tfjob(cluster, "running", o.condition("Running"))
    done = await tfjob(cluster, "done", o.condition("Succeeded"))
    kept = await tfjob(cluster, "kept", o.condition("Running"))
    running_pod = await worker(cluster, running, "Running")
    done_pod = await worker(cluster, done, "Succeeded")
    uids = [j["metadata"]["uid"] for j in (running, done, kept)]
    await eventually(
        lambda: Pod.filter(pod_id=done_pod["metadata"]["uid"], status="Succeeded").exists()
    )
    await eventually(lambda: Job.filter(job_id__in=uids).count(), within=10)
    assert await first.kill() == -signal.SIGKILL

    for job, pod in ((running, running_pod), (done, done_pod)):
        await cluster.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
        await cluster.delete(TFJOBS, job["metadata"]["namespace"], job["metadata"]["name"])
    created = await tfjob(cluster, "created-meanwhile", o.condition("Running"))

    restarted = datetime.datetime.now(tz=datetime.UTC)
    second = await start_operator()
    gone = await eventually(
        lambda: Job.filter(job_id=running["metadata"]["uid"], is_in_etcd=False).first()
    )
    assert (gone.status, gone.deleted) == ("Stopped", True)
    # Stopped when the reconciliation found it gone: after the restart, before the read.
    finished = gone.gmt_finished
    assert finished is not None and restarted <= finished <= datetime.datetime.now(tz=datetime.UTC)
    done_row = await Job.get(job_id=done["metadata"]["uid"])
    assert (done_row.status, done_row.is_in_etcd) == ("Succeeded", False)
    assert (await Job.get(job_id=kept["metadata"]["uid"])).is_in_etcd is True
    # Jobs and pods are reconciled as two lists, marked gone in commits of their own.
    await eventually(
        lambda: Pod.filter(pod_id=running_pod["metadata"]["uid"], is_in_etcd=False).exists()
    )
    pods = {p.pod_id: p for p in await Pod.all()}
    assert (
        pods[running_pod["metadata"]["uid"]].status,
        pods[running_pod["metadata"]["uid"]].is_in_etcd,
    ) == ("Stopped", False)
    assert (
        pods[done_pod["metadata"]["uid"]].status,
        pods[done_pod["metadata"]["uid"]].is_in_etcd,
    ) == ("Succeeded", False)
    await eventually(
        lambda: Job.filter(job_id=created["metadata"]["uid"], status="Running").exists()
    )

    async def reconciled() -> bool:
        return "Reconciled with the cluster: 2 jobs and 2 pods were gone" in second.log()

    await eventually(reconciled)
    # Attribution started from what the database knew, sparing a query per Event.
    assert "Attribution starts from 3 live jobs and 2 recent pods" in second.log()


async def test_a_kind_that_cannot_be_listed_keeps_its_rows_in_the_cluster(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    paddlejobs = resource_of("kubeflow.org", "PaddleJob")
    first = await start_operator()
    await cluster.wait_watching(ALL)
    job = await cluster.create(paddlejobs, o.example("paddle-simple-gpu.yaml"))
    await eventually(lambda: Job.filter(job_id=job["metadata"]["uid"]).exists())
    assert await first.kill() == -signal.SIGKILL

    # The reconciliation's paged listing fails (its CRD gone meanwhile): a 404 must not
    # read as "no such jobs". Kopf's own listing (no metadata-only header) still works.
    target = kmock.resource(paddlejobs.group, paddlejobs.version, paddlejobs.plural)
    (
        cluster.emulator[
            kmock.action.LIST,
            target,
            kmock.params(limit="500"),
            kmock.headers(Accept=METADATA_ONLY),
        ]
        << 404
    )
    second = await start_operator()

    async def reconciled() -> bool:
        return "Reconciled with the cluster: 0 jobs and 0 pods were gone" in second.log()

    await eventually(reconciled)
    assert "(not listed: PaddleJob)" in second.log()
    assert (await Job.get(job_id=job["metadata"]["uid"])).is_in_etcd is True
