"""Two replicas under Kopf's peering: one records, the other stands by and takes over
when the first dies, losing nothing and storing nothing twice, and reconciling at once
even when its first try fails. Both are scraped for their metrics along the way. A
replica that only prunes (reconciliation off) stands by for a live peer too."""

import datetime
import signal
import time

import kmock
import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.infra.cluster import METADATA_ONLY
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import (
    EVENTS,
    PEERINGS,
    PODS,
    Cluster,
    Feed,
    job_resource,
    resource_of,
)
from testbed.operator import OperatorProcess
from tests.support import rows
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
# Short, so that the dead replica's record expires within the test; Kopf's default is 60.
LIFETIME = "4"
PER_PHASE = 20


Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def logged(process: OperatorProcess, text: str) -> bool:
    return text in process.log()


class FailOnce:
    """The reconciliation's next paged listing of pods answers 500, as an API server
    whose etcd is away (paged by 500 with the metadata-only header: Kopf's own listing
    has no such header, the start-up count pages by 1,000); later listings are answered as usual."""

    def __init__(self, cluster: Cluster) -> None:
        self.failed = False
        pods = kmock.resource(PODS.group, PODS.version, PODS.plural)
        (
            cluster.emulator[
                kmock.action.LIST,
                pods,
                kmock.params(limit="500"),
                kmock.headers(Accept=METADATA_ONLY),
            ].override
            << self._answer
        )

    def _answer(self) -> None:
        # Answering nothing hands the request on to the next reaction, and spends this one.
        if not self.failed:
            self.failed = True
            raise kmock.KubernetesError()


async def test_one_replica_records_the_other_takes_over_when_it_dies(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    cluster.serve(PEERINGS)
    await cluster.create(PEERINGS, {"metadata": {"name": "jobarchive"}})
    pods, events = Feed(cluster, PODS), Feed(cluster, EVENTS)
    peer = ("--peering=jobarchive",)
    active = await start_operator(*peer, "--priority=200", JOBARCHIVE_PEERING_LIFETIME=LIFETIME)
    await cluster.wait_watching(ALL)
    standby = await start_operator(*peer, "--priority=100", JOBARCHIVE_PEERING_LIFETIME=LIFETIME)
    await eventually(lambda: logged(standby, "Standing by for a peer of higher priority"))

    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="ha", namespace="ha")
    )
    created = []
    for index in range(PER_PHASE):
        pod = pods.add(o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))
        events.add(o.event(pod, "Scheduled", f"Successfully assigned ha/worker-{index}"))
        created.append(pod)

    async def stored(count: int) -> bool:
        return (
            await Pod.filter(namespace="ha").count() == count
            and await Event.filter(obj_namespace="ha").count() == count
        )

    await eventually(lambda: stored(PER_PHASE))
    first, second = await active.scrape(), await standby.scrape()
    assert value(first, "jobarchive_objects_total", kind="Pod", outcome="stored") >= PER_PHASE
    assert value(first, "jobarchive_objects_total", kind="Event", outcome="stored") >= PER_PHASE
    assert value(first, "jobarchive_objects_total", kind="TFJob", outcome="stored") >= 1
    assert value(first, "jobarchive_batch_rows_count") > 0
    assert value(first, "jobarchive_commit_seconds_count") > 0
    assert value(first, "jobarchive_lag_seconds_count") >= PER_PHASE
    assert value(first, "jobarchive_reconciliations_total", result="done") >= 1
    assert (value(first, "jobarchive_active"), value(second, "jobarchive_active")) == (1, 0)
    assert value(second, "jobarchive_batch_rows_count") == 0
    assert not [key for key in second if key[0] == "jobarchive_objects_total"]
    assert ("jobarchive_queue_depth", frozenset()) in second

    # The takeover's reconciliation fails at first: it must be tried again at once.
    failing = FailOnce(cluster)
    killed = time.monotonic()
    assert await active.kill() == -signal.SIGKILL
    # While nobody records: three stored pods vanish unwatched, and more pods come.
    for pod in created[:3]:
        pods.remove(pod)
    for index in range(PER_PHASE, 2 * PER_PHASE):
        pod = pods.add(o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))
        events.add(o.event(pod, "Scheduled", f"Successfully assigned ha/worker-{index}"))

    await eventually(lambda: logged(standby, "Resuming operations after the pause"), within=30)
    await eventually(lambda: stored(2 * PER_PHASE), within=30)
    print(f"Took over and caught up {time.monotonic() - killed:.1f} s after the kill")
    gone = [pod["metadata"]["uid"] for pod in created[:3]]

    async def gone_marked() -> bool:
        return await Pod.filter(pod_id__in=gone, is_in_etcd=False).count() == len(gone)

    await eventually(gone_marked, within=30)
    assert failing.failed
    assert "Reconciliation failed, trying again in" in standby.log()
    after = await standby.scrape()
    assert value(after, "jobarchive_reconciliations_total", result="failed") == 1
    assert value(after, "jobarchive_reconciliations_total", result="done") >= 1
    assert value(after, "jobarchive_active") == 1
    assert value(after, "jobarchive_marked_gone_total", table="replica_info") == len(gone)
    assert value(after, "jobarchive_objects_total", kind="Pod", outcome="stored") >= PER_PHASE
    assert await Pod.filter(namespace="ha", is_in_etcd=True).count() == 2 * PER_PHASE - 3


async def test_with_reconciliation_off_a_replica_prunes_only_while_it_is_the_active_one(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    now = datetime.datetime.now(datetime.UTC)
    finished = now - datetime.timedelta(days=365)
    await Store(cluster=cluster.uid).upsert(
        Job, [rows.job("old-job", status="Succeeded", is_in_etcd=False, gmt_finished=finished)]
    )
    cluster.serve(PEERINGS)
    # A live peer of higher priority, as Kopf records one.
    peer = {"priority": 1000, "lifetime": 3600, "lastseen": now.isoformat()}
    await cluster.create(
        PEERINGS, {"metadata": {"name": "jobarchive"}, "status": {"other-replica": peer}}
    )
    standby = await start_operator(
        "--peering=jobarchive",
        "--priority=100",
        JOBARCHIVE_PEERING_LIFETIME=LIFETIME,
        JOBARCHIVE_RESYNC_INTERVAL="0",
        JOBARCHIVE_RETENTION_DAYS="30",
    )
    await eventually(lambda: logged(standby, "Standing by for a peer of higher priority"))
    assert "Pruning waits until this replica is the active one" in standby.log()
    assert await Job.filter(job_id="old-job").exists()
    assert value(await standby.scrape(), "jobarchive_active") == 0

    # The peer's record expires: this replica is the active one, and prunes at once.
    gone = (now - datetime.timedelta(hours=1)).isoformat()
    await cluster.patch(
        PEERINGS, "", "jobarchive", {"status": {"other-replica": {"lastseen": gone}}}
    )

    async def pruned() -> bool:
        return not await Job.filter(job_id="old-job").exists()

    await eventually(pruned, within=30)
    assert value(await standby.scrape(), "jobarchive_active") == 1


async def test_the_first_replica_creates_the_peering_object_that_kopf_waits_for(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    # A fresh cluster after one `kubectl apply -f manifests/`: the CRD, no object.
    cluster.serve(PEERINGS)
    replica = await start_operator("--peering=jobarchive", JOBARCHIVE_PEERING_LIFETIME=LIFETIME)
    await eventually(lambda: logged(replica, "Created the peering object jobarchive"))
    await cluster.wait_watching(ALL)
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="first", namespace="fresh")
    )
    await eventually(lambda: Job.filter(job_id=job["metadata"]["uid"]).exists())

    async def active() -> bool:
        return value(await replica.scrape(), "jobarchive_active") == 1

    await eventually(active)
    created = [
        request
        for request in cluster.emulator
        if request.method == "POST" and request.url.path == PEERINGS.path(None)
    ]
    assert len(created) == 1
