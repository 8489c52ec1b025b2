"""SIGKILL in the middle of a burst: after the restart every live object's row is there
and every object deleted meanwhile is marked gone."""

import signal

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Event, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, Feed, job_resource, resource_of
from testbed.objects import Body
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
ALL = [PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)]
PODS_IN_BURST = 1000
# Pods the killed operator stored, deleted while no operator runs.
STORED_THEN_DELETED = 10


async def test_a_sigkill_in_the_middle_of_a_burst_of_2000_objects_loses_nothing(
    cluster: Cluster, start_operator: OperatorFactory
) -> None:
    pods, events = Feed(cluster, PODS), Feed(cluster, EVENTS)
    first = await start_operator()
    await cluster.wait_watching(ALL)
    job = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="burst", namespace="burst")
    )
    created: list[Body] = []

    async def stored_enough() -> bool:
        return await Pod.filter(namespace="burst").count() >= STORED_THEN_DELETED

    for index in range(PODS_IN_BURST):
        if index == 100:
            # Let the first operator store the pods deleted below, then kill it mid-stream
            # (however far behind the burst a busy machine keeps it).
            await eventually(stored_enough)
        if index == PODS_IN_BURST // 2:
            assert await first.kill() == -signal.SIGKILL
        pod = pods.add(o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", index))
        events.add(o.event(pod, "Scheduled", f"Successfully assigned burst/worker-{index}"))
        created.append(pod)
    # Deleted while nobody watched: 10 the killed operator stored, 10 no operator saw.
    seen_uids = set(await Pod.filter(namespace="burst").values_list("pod_id", flat=True))
    stored_then_deleted = [p for p in created if p["metadata"]["uid"] in seen_uids]
    stored_then_deleted = stored_then_deleted[:STORED_THEN_DELETED]
    never_seen = created[-10:]
    for pod in stored_then_deleted + never_seen:
        pods.remove(pod)

    second = await start_operator()
    expected = PODS_IN_BURST - len(never_seen)

    async def all_stored() -> bool:
        pods_stored = await Pod.filter(namespace="burst").count()
        events_stored = await Event.filter(obj_namespace="burst").count()
        return pods_stored == expected and events_stored == expected

    await eventually(all_stored, within=120)
    gone = {p["metadata"]["uid"] for p in stored_then_deleted}

    async def gone_marked() -> bool:
        rows = await Pod.filter(pod_id__in=list(gone), is_in_etcd=False, status="Stopped")
        return len(rows) == len(gone)

    await eventually(gone_marked)
    live = {p["metadata"]["uid"] for p in created[:-10]} - gone
    rows = {p.pod_id: p for p in await Pod.filter(namespace="burst")}
    assert all(rows[uid].is_in_etcd for uid in live)
    assert len(stored_then_deleted) == STORED_THEN_DELETED
    assert second.running
