"""One archive for a fleet (decision 35): two real operators on two emulated clusters,
east and west, writing one MariaDB database. Each names its rows with its cluster's
kube-system uid, and reconciles, retains and marks gone only its own cluster's rows:
a cluster whose operator is down keeps its rows as they were."""

import datetime
from typing import Any

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support import rows
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
LONG_AGO = datetime.datetime.now(tz=datetime.UTC) - datetime.timedelta(days=30)
GONE_LONG_AGO: dict[str, Any] = {
    "is_in_etcd": False,
    "gmt_created": LONG_AGO,
    "gmt_finished": LONG_AGO,
}
# Reconciling every second, pruning what finished over a day ago.
MAINTAINING = {"JOBARCHIVE_RESYNC_INTERVAL": "1", "JOBARCHIVE_RETENTION_DAYS": "1"}


async def tfjob(cluster: Cluster, name: str, namespace: str = "team-a") -> Body:
    body = o.with_meta(o.example("tfjob-simple.yaml"), name=name, namespace=namespace)
    await cluster.create(TFJOBS, body)
    status = o.job_status(o.condition("Created"), o.condition("Running"))
    return await cluster.patch(TFJOBS, namespace, name, {"status": status})


def uid(obj: Body) -> str:
    return str(obj["metadata"]["uid"])


async def reconciled(operator: OperatorProcess, times: int) -> None:
    """Until the operator has said ``times`` reconciliations finished."""

    async def enough() -> bool:
        return operator.log().count("Reconciled with the cluster") >= times

    await eventually(enough, within=60)


async def test_rows_name_their_cluster_and_one_name_in_two_clusters_is_two_histories(
    cluster: Cluster, west: Cluster, start_operator: OperatorFactory, start_west: OperatorFactory
) -> None:
    east_operator = await start_operator()
    await start_west()
    await cluster.wait_watching(ALL)
    await west.wait_watching(ALL)
    east_job = await tfjob(cluster, "train-1")
    west_job = await tfjob(west, "train-1")
    await eventually(lambda: Job.filter(job_id=uid(east_job)).exists())
    await eventually(lambda: Job.filter(job_id=uid(west_job)).exists())
    # West's pod names its job by label only, as east's job is also named: it must be
    # given west's.
    west_pod_body = o.kubeflow_pod(west_job, "tfReplicaSpecs", "Worker", 0)
    del west_pod_body["metadata"]["ownerReferences"]
    west_pod = await west.create(PODS, west_pod_body)
    east_pod = await cluster.create(PODS, o.kubeflow_pod(east_job, "tfReplicaSpecs", "Worker", 0))

    await eventually(lambda: Pod.filter(pod_id=uid(west_pod)).exists())
    await eventually(lambda: Pod.filter(pod_id=uid(east_pod)).exists())
    jobs = {
        (job.cluster, job.job_id)
        for job in await Job.filter(namespace="team-a", name="train-1", is_in_etcd=True)
    }
    assert jobs == {(cluster.uid, uid(east_job)), (west.uid, uid(west_job))}
    stored_west = await Pod.get(pod_id=uid(west_pod))
    assert (stored_west.cluster, stored_west.job_id) == (west.uid, uid(west_job))
    stored_east = await Pod.get(pod_id=uid(east_pod))
    assert (stored_east.cluster, stored_east.job_id) == (cluster.uid, uid(east_job))
    assert f"Cluster {cluster.uid} (the kube-system namespace's uid" in east_operator.log()


async def test_a_cluster_whose_operator_is_down_keeps_its_rows_as_they_were(
    cluster: Cluster, west: Cluster, start_operator: OperatorFactory, start_west: OperatorFactory
) -> None:
    west_operator = await start_west()
    await west.wait_watching(ALL)
    live = await tfjob(west, "train-1")
    await eventually(lambda: Job.filter(job_id=uid(live), status="Running").exists())
    await west_operator.stop()
    # West's history: a job gone long ago, which west's retention would prune.
    old = rows.job("west-old", name="old", namespace="team-a", status="Succeeded", **GONE_LONG_AGO)
    await Store(cluster=west.uid).upsert(Job, [old])
    # East's own: a job gone long ago, and a row whose object east no longer has.
    mine_old = rows.job(
        "east-old", name="old", namespace="team-a", status="Succeeded", **GONE_LONG_AGO
    )
    missed = rows.job("east-missed", name="missed", namespace="team-a")
    await Store(cluster=cluster.uid).upsert(Job, [mine_old, missed])
    before = {job.job_id: (job.version, job.status, job.is_in_etcd) for job in await Job.all()}

    east_operator = await start_operator(**MAINTAINING)
    await reconciled(east_operator, times=2)

    async def pruned() -> bool:
        return not await Job.filter(job_id="east-old").exists()

    await eventually(pruned)

    missed_row = await Job.get(job_id="east-missed")
    assert (missed_row.is_in_etcd, missed_row.status) == (False, "Stopped")
    # The west's live job and its old history, untouched by east's maintenance.
    for job_id in (uid(live), "west-old"):
        row = await Job.get(job_id=job_id)
        assert (row.version, row.status, row.is_in_etcd) == before[job_id]
        assert row.cluster == west.uid
    assert "Pruned 1 jobs finished over 1 days ago" in east_operator.log()


async def test_a_delete_while_its_operator_is_down_is_marked_at_its_restart_not_by_the_other(
    cluster: Cluster, west: Cluster, start_operator: OperatorFactory, start_west: OperatorFactory
) -> None:
    west_operator = await start_west()
    east_operator = await start_operator(**MAINTAINING)
    await west.wait_watching(ALL)
    await cluster.wait_watching(ALL)
    gone = await tfjob(west, "train-1")
    pod = await west.create(PODS, o.kubeflow_pod(gone, "tfReplicaSpecs", "Worker", 0))
    await eventually(lambda: Pod.filter(pod_id=uid(pod)).exists())
    await west_operator.stop()

    await west.delete(PODS, "team-a", pod["metadata"]["name"])
    await west.delete(TFJOBS, "team-a", "train-1")
    seen = east_operator.log().count("Reconciled with the cluster")
    await reconciled(east_operator, times=seen + 2)
    assert (await Job.get(job_id=uid(gone))).is_in_etcd is True
    assert (await Pod.get(pod_id=uid(pod))).is_in_etcd is True

    await start_west()
    await eventually(lambda: Job.filter(job_id=uid(gone), is_in_etcd=False).exists(), within=60)
    await eventually(lambda: Pod.filter(pod_id=uid(pod), is_in_etcd=False).exists())
    row = await Job.get(job_id=uid(gone))
    assert (row.cluster, row.status, row.deleted) == (west.uid, "Stopped", True)
