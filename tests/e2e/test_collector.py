"""The operator manages Python's collector itself: after start-up (the database opened,
attribution primed) it freezes what start-up built and collects rarely; and with Kopf's
diffbase turned off it still writes nothing to what it watches."""

import re

import pytest

from jobarchive.core.kinds import BUILTIN_KINDS
from jobarchive.storage.models import Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, job_resource, resource_of
from testbed.operator import OperatorProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")
# Raised after start-up (bindings.COLLECTOR_THRESHOLDS).
THRESHOLDS = "50000/10/10"
COLLECTOR = re.compile(r"Collector: (\d+) objects frozen after start-up, thresholds ([\d/]+)")


async def test_the_collector_is_settled_after_start_up_and_nothing_is_written(
    operator: OperatorProcess, cluster: Cluster, archive: str
) -> None:
    async def settled() -> re.Match[str] | None:
        return COLLECTOR.search(operator.log())

    found = await eventually(settled)
    assert found[2] == THRESHOLDS
    # Frozen: at least the modules, Kopf's registry and the attribution state.
    assert int(found[1]) > 10_000
    log = operator.log()
    assert log.index("Attribution starts from") < found.start()
    # Cluster-wide, Kopf's two busy streams (pods, Events) pace themselves: no limit.
    assert "Handling at most" not in log

    job = await cluster.create(TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="gc"))
    pod = await cluster.create(PODS, o.kubeflow_pod(job, "tfReplicaSpecs", "Worker", 0))
    await eventually(Pod.filter(pod_id=pod["metadata"]["uid"]).exists)
    await cluster.wait_watching([PODS, EVENTS, *(job_resource(kind) for kind in BUILTIN_KINDS)])
    assert cluster.writes_by_others() == []
