"""The operator process also serves the read-only API when asked, and prunes by its
retention setting: both while it records."""

import datetime
import json
import urllib.request
from typing import Any

import pytest

from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body
from testbed.ports import free_port
from tests.support.operators import OperatorFactory
from tests.support.rows import event, job, pod
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
TFJOBS = resource_of("kubeflow.org", "TFJob")


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


async def test_the_operator_serves_the_api_and_prunes_what_retention_drops(
    cluster: Cluster, start_operator: OperatorFactory, archive: str
) -> None:
    # Recorded long ago: a job that finished in January and left the cluster.
    finished = datetime.datetime(2026, 1, 10, tzinfo=datetime.UTC)
    old = job(
        uid="old-job", name="old", status="Succeeded", is_in_etcd=False, gmt_finished=finished
    )
    await Store(cluster=cluster.uid).upsert(Job, [old])
    await Store(cluster=cluster.uid).upsert(
        Pod, [pod(uid="old-pod", job_id="old-job", is_in_etcd=False)]
    )
    await Store(cluster=cluster.uid).upsert(Event, [event(uid="old-event", obj_uid="old-pod")])

    port = free_port()
    # Without authentication, so bound to loopback (test_api_auth.py reviews callers).
    operator = await start_operator(
        JOBARCHIVE_API_PORT=str(port),
        JOBARCHIVE_API_AUTH="none",
        JOBARCHIVE_API_HOST="127.0.0.1",
        JOBARCHIVE_RETENTION_DAYS="30",
    )
    await cluster.wait_watching([PODS, EVENTS, TFJOBS])
    created = await cluster.create(
        TFJOBS, o.with_meta(o.example("tfjob-simple.yaml"), name="fresh", namespace="api")
    )

    async def pruned() -> bool:
        return not await Job.filter(job_id="old-job").exists()

    await eventually(pruned)
    assert not await Pod.filter(pod_id="old-pod").exists()
    assert not await Event.filter(event_id="old-event").exists()
    assert "Pruned 1 jobs finished over 30 days ago, with 1 pods and 1 Events" in operator.log()

    async def listed() -> list[Body]:
        items: list[Body] = fetch(f"http://127.0.0.1:{port}/api/v1/jobs?namespace=api")["items"]
        return items

    [row] = await eventually(listed)
    assert row["job_id"] == created["metadata"]["uid"]
