"""Two replicas under Kopf's peering: one records, the other stands by and takes over
when the first dies, losing nothing and storing nothing twice. Both are scraped for
their metrics along the way."""

import signal
import time

import pytest

from jobarchive.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Event, Pod
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
    after = await standby.scrape()
    assert value(after, "jobarchive_active") == 1
    assert value(after, "jobarchive_marked_gone_total", table="replica_info") == len(gone)
    assert value(after, "jobarchive_objects_total", kind="Pod", outcome="stored") >= PER_PHASE
    assert await Pod.filter(namespace="ha", is_in_etcd=True).count() == 2 * PER_PHASE - 3
