"""A reconciliation the database leaves in the middle goes on as soon as it returns, not
an interval later. Stops and restarts the run's own MariaDB server, and no other: on
an external server (JOBARCHIVE_TEST_MYSQL_URL) it is skipped."""

import asyncio
import signal
import time

import kmock
import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.infra.cluster import METADATA_ONLY
from jobarchive.storage.models import Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.mariadb import MariaDBServer
from testbed.objects import Body
from testbed.operator import OperatorProcess
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
IMAGE = "docker.io/kubeflowkatib/tf-mnist-with-summaries:latest"
# Whatever the interval, a failed or interrupted run must not wait for it.
INTERVAL = "600"
# As long as the database of the chaos run that found the defect stayed away.
OUTAGE_SECONDS = 6.0
# The reads wait at most 5 s between tries, the writer's flushers too.
WITHIN = 20.0


class Gate:
    """Holds the reconciliation's first paged listing of pods until the test opens it.

    Kopf lists without the metadata-only header, the start-up count 1,000 at a time,
    the reconciliation 500 with the header: only its listing is held,
    once, and then answered by the test bed's paging as any other.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.reached = asyncio.Event()
        self.opened = asyncio.Event()
        pods = kmock.resource(PODS.group, PODS.version, PODS.plural)
        (
            cluster.emulator[
                kmock.action.LIST,
                pods,
                kmock.params(limit="500"),
                kmock.headers(Accept=METADATA_ONLY),
            ].override
            << self._hold
        )

    async def _hold(self) -> None:
        # Answering nothing hands the request on to the next reaction, and spends this one.
        self.reached.set()
        await self.opened.wait()


async def worker(cluster: Cluster, job: Body, index: int) -> Body:
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))
    running = o.running_status("tensorflow", IMAGE, "10.0.0.1", f"172.16.0.{index}")
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    return await cluster.patch(PODS, ns, name, {"status": running})


async def in_etcd(uids: list[str]) -> set[str] | None:
    """Which of the pods are still marked in the cluster; None while the test's own
    connections find the restarted server."""
    try:
        found = await Pod.filter(pod_id__in=uids, is_in_etcd=True).values_list("pod_id", flat=True)
    except Exception:
        return None
    return {str(uid) for uid in found}


async def met_the_outage(process: OperatorProcess) -> bool:
    log = process.log()
    return "the reconciliation waits for it" in log or "Reconciliation failed" in log


async def test_pods_deleted_while_down_are_marked_as_soon_as_the_database_returns(
    cluster: Cluster, start_operator: OperatorFactory, private_mariadb: MariaDBServer
) -> None:
    first = await start_operator()
    await cluster.wait_watching(ALL)
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="chaos", namespace="chaos")
    )
    pods = [await worker(cluster, job, index) for index in range(3)]
    uids = [pod["metadata"]["uid"] for pod in pods]

    async def all_running() -> bool:
        return await Pod.filter(pod_id__in=uids, status="Running").count() == 3

    await eventually(all_running)
    assert await first.kill() == -signal.SIGKILL
    for pod in pods[:2]:
        await cluster.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"])
    deleted = uids[:2]

    gate = Gate(cluster)
    second = await start_operator(JOBARCHIVE_RESYNC_INTERVAL=INTERVAL)
    await asyncio.wait_for(gate.reached.wait(), 60)
    # The start-up reconciliation has begun listing: the database goes away under it.
    await asyncio.to_thread(private_mariadb.stop)
    down = time.monotonic()
    try:
        gate.opened.set()
        await eventually(lambda: met_the_outage(second), within=60)
        # The outage itself is what the test simulates: it lasts, whatever the test waited.
        await asyncio.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down)))
    finally:
        await asyncio.to_thread(private_mariadb.start)
    back = time.monotonic()

    async def marked() -> bool:
        return await in_etcd(uids) == {uids[2]}

    await eventually(marked, within=WITHIN)
    took = time.monotonic() - back
    gone = await Pod.filter(pod_id__in=deleted).values_list("status", "deleted")
    assert sorted(gone) == [("Stopped", True), ("Stopped", True)]

    async def reconciled() -> bool:
        return "Reconciled with the cluster: 0 jobs and 2 pods were gone" in second.log()

    await eventually(reconciled)
    samples = await second.scrape()
    done = samples[("jobarchive_reconciliations_total", frozenset({("result", "done")}))]
    assert done == 1
    print(f"missed deletes marked {took:.1f} s after the database returned")
