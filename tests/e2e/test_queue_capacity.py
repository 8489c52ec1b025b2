"""Queue capacity over time, end to end (decision 44): a ClusterQueue served by the
emulated API as Kueue v0.19 writes it, its quota changed mid-day, recorded by the real
operator as a history; and a job Kueue preempts and readmits in that queue (the flow of
test_kueue.py). ``jobarchive usage --by clusterqueue`` and ``/api/v1/usage`` answer the
figures computed here by hand."""

import asyncio
import datetime
import json
import pathlib
import urllib.request
from typing import Any

import pytest

from jobarchive.storage.kueue import Attempt, Quota
from jobarchive.storage.models import Pod
from testbed import objects as o
from testbed.cluster import CLUSTER_QUEUES, EVENTS, PODS, WORKLOADS, Cluster
from tests.support.console import serving_console
from tests.support.kueue_workloads import JOBS, PYTORCHJOBS, Workload, attempt_pods, pytorch_job
from tests.support.operators import OperatorFactory
from tests.support.small_archive import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
WINDOW = ("--since", "2026-11-20T00:00:00Z", "--until", "2026-11-21T00:00:00Z")


def at(day: int, hour: int, minute: int = 0) -> datetime.datetime:
    return datetime.datetime(2026, 11, day, hour, minute, tzinfo=datetime.UTC)


def cluster_queue(nominal: int, written: str) -> dict[str, Any]:
    """The fixture's ClusterQueue as cq-a100: one flavor of A100s, its spec last
    written at ``written``."""
    body = o.fixture("kueue/clusterqueue.yaml")
    body["metadata"] = {
        "name": "cq-a100",
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "managedFields": body["metadata"]["managedFields"],
    }
    body["metadata"]["managedFields"][0]["time"] = written
    gpus = body["spec"]["resourceGroups"][1]
    gpus["flavors"] = gpus["flavors"][:1]
    gpus["flavors"][0]["resources"][0]["nominalQuota"] = nominal
    return body


def fetched(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read().decode())


async def test_usage_by_cluster_queue_across_a_quota_change_mid_day(
    cluster: Cluster,
    start_operator: OperatorFactory,
    archive: str,
    e2e_db_url: str,
    tmp_path: pathlib.Path,
) -> None:
    cluster.serve(WORKLOADS)
    cluster.serve(CLUSTER_QUEUES)
    await start_operator()
    await cluster.wait_watching([PODS, EVENTS, WORKLOADS, CLUSTER_QUEUES, *JOBS])

    # 4 A100s since its creation on the 1st; 2 from the 20th at 11:30.
    queue = await cluster.create(CLUSTER_QUEUES, cluster_queue(4, "2026-11-01T00:00:00Z"))
    await eventually(lambda: Quota.filter(cluster_queue="cq-a100").first())
    changed = cluster_queue(2, "2026-11-20T11:30:00Z")
    patch = {
        "spec": changed["spec"],
        "metadata": {"managedFields": changed["metadata"]["managedFields"]},
    }
    await cluster.patch(CLUSTER_QUEUES, "", queue["metadata"]["name"], patch)
    await eventually(lambda: Quota.filter(cluster_queue="cq-a100", nominal=2).first())
    history = await Quota.filter(cluster_queue="cq-a100").order_by("valid_from")
    assert [(q.flavor, q.nominal, q.valid_from, q.valid_until) for q in history] == [
        ("a100", 4, at(1, 0), at(20, 11, 30)),
        ("a100", 2, at(20, 11, 30), None),
    ]
    assert {q.resource for q in history} == {"nvidia.com/gpu"}
    assert (history[0].borrowing_limit, history[0].lending_limit, history[0].cohort) == (
        4,
        2,
        "research",
    )

    # The job of test_kueue.py: four one-GPU pods 10:06:00-11:00:20, preempted; four
    # again 11:20:30-13:00:00.
    job = await cluster.create(PYTORCHJOBS, pytorch_job())
    uid = job["metadata"]["uid"]
    workload = Workload(cluster)
    await workload.create("pending")
    for state in ("admitted", "running"):
        await workload.become(state)
    await attempt_pods(cluster, job, "10:06:00", "11:00:20", gone=True)
    for state in ("preempted", "requeued", "readmitted"):
        await workload.become(state)
    await attempt_pods(cluster, job, "11:20:30", "13:00:00", gone=False)
    await workload.become("finished")
    await eventually(lambda: Attempt.filter(job_id=uid, end_reason="Finished").first())

    async def eight_pods_finished() -> bool:
        return await Pod.filter(job_id=uid, gmt_finished__isnull=False).count() == 8

    await eventually(eight_pods_finished)

    # Allocated: 4 x 3,260 s + 4 x 5,970 s = 36,920 s = 10.256 GPU-h, 3.622 of them
    # preempted. Quota: 4 x 11.5 h + 2 x 12.5 h = 71 GPU-h; utilization 0.1444. Borrowed:
    # 4 GPUs held against 2 from 11:30 to 13:00, 2 x 1.5 h = 3. Waits: created 10:00:00,
    # first pod 10:06:00 (360 s), reserved 10:05:00 (300 s), ready 90 s and 60 s after.
    expected = {
        "clusterqueue": "cq-a100",
        "allocated_gpu_hours": 10.256,
        "quota_gpu_hours": 71.0,
        "utilization": 0.1444,
        "borrowed_gpu_hours": 3.0,
        "preempted_gpu_hours": 3.622,
        "queue_wait_p50_s": 360.0,
        "queue_wait_p95_s": 360.0,
        "quota_wait_p50_s": 300.0,
        "quota_wait_p95_s": 300.0,
        "start_wait_p50_s": 150.0,
        "start_wait_p95_s": 150.0,
    }
    printed = run(e2e_db_url, "usage", "--by", "clusterqueue", *WINDOW, "-o", "json")
    assert printed.returncode == 0, printed.stderr
    [row] = json.loads(printed.stdout)["items"]
    assert {key: value for key, value in row.items() if key != "period"} == expected

    async with serving_console(e2e_db_url, tmp_path) as origin:
        url = f"{origin}/api/v1/usage?by=clusterqueue&every=day&since=2026-11-20&until=2026-11-21"
        answered = await asyncio.to_thread(fetched, url)
    assert answered["items"] == [{**expected, "period": "2026-11-20"}]
