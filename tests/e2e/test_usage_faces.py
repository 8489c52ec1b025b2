"""A workload recorded by the real operator, its figures computed by hand: the usage
the CLI prints, the API answers and the export writes are the same numbers (issue 27).

Job ``train`` (Kueue label): created 10:00, running from 10:10 (a 600 s wait); its
master (1 CPU, no GPU) runs 10:10-11:10, its worker (2 GPUs as a limit only, 1.5 CPUs)
10:10-12:10: 4 GPU-hours, 1 + 3 = 4 CPU-hours. Job ``crash``: created 20:00, its worker
(4 GPUs) runs 22:00 to 02:00 the next day and is OOMKilled: 16 GPU-hours lost to a
failure; its second worker never starts and costs nothing."""

import json
import urllib.request
from typing import Any

import pytest

from jobarchive.storage.models import Job
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.objects import Body
from testbed.ports import free_port
from tests.support.exports import read_export
from tests.support.operators import OperatorFactory
from tests.support.small_archive import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
WINDOW = ("2026-11-20", "2026-11-22")


async def _pod(
    cluster: Cluster, job: Body, role: str, index: int, resources: Body, life: tuple | None
) -> None:
    """A pod of ``job`` with these resources, run from life[0] to life[1] with exit code
    life[2]; never started when ``life`` is None."""
    body = o.kubeflow_pod(job, "pytorchReplicaSpecs", role, index)
    body["spec"]["containers"][0]["resources"] = resources
    pod = await cluster.create(PODS, body)
    if life is None:
        return
    started, finished, code = life
    running = o.running_status("pytorch", IMAGE, "10.0.0.11", "172.16.0.11")
    running["startTime"] = started
    ended = o.terminated_status(running, code, "Completed" if code == 0 else "OOMKilled", finished)
    await cluster.patch(
        PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], {"status": ended}
    )


async def _job(cluster: Cluster, name: str, created: str, labels: dict[str, str]) -> Body:
    body = o.with_meta(
        o.example("pytorch-simple.yaml"),
        name=name,
        namespace="team-a",
        creationTimestamp=created,
        labels=labels,
    )
    return await cluster.create(PYTORCHJOBS, body)


async def _record(cluster: Cluster) -> None:
    train = await _job(cluster, "train", "2026-11-20T10:00:00Z", {"kueue.x-k8s.io/queue-name": "q"})
    await _pod(
        cluster,
        train,
        "Master",
        0,
        {"requests": {"cpu": "1"}},
        ("2026-11-20T10:10:00Z", "2026-11-20T11:10:00Z", 0),
    )
    await _pod(
        cluster,
        train,
        "Worker",
        0,
        {"requests": {"cpu": "1500m"}, "limits": {"nvidia.com/gpu": 2}},
        ("2026-11-20T10:10:00Z", "2026-11-20T12:10:00Z", 0),
    )
    ran = o.condition("Running", "False", at="2026-11-20T12:10:00Z")
    await cluster.patch(
        PYTORCHJOBS,
        "team-a",
        "train",
        {
            "status": o.job_status(
                o.condition("Created", at="2026-11-20T10:00:00Z"),
                ran,
                o.condition("Succeeded", at="2026-11-20T12:10:00Z"),
                completion="2026-11-20T12:10:00Z",
            )
        },
    )
    crash = await _job(cluster, "crash", "2026-11-20T20:00:00Z", {})
    await _pod(
        cluster,
        crash,
        "Worker",
        0,
        {"limits": {"nvidia.com/gpu": 4}},
        ("2026-11-20T22:00:00Z", "2026-11-21T02:00:00Z", 137),
    )
    await _pod(cluster, crash, "Worker", 1, {"limits": {"nvidia.com/gpu": 4}}, None)
    await cluster.patch(
        PYTORCHJOBS,
        "team-a",
        "crash",
        {
            "status": o.job_status(
                o.condition("Created", at="2026-11-20T20:00:00Z"),
                o.condition("Failed", at="2026-11-21T02:00:00Z"),
                completion="2026-11-21T02:00:00Z",
            )
        },
    )


def fetch(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


async def test_the_cli_the_api_and_the_export_give_the_numbers_computed_by_hand(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path
) -> None:
    port = free_port()
    # Without authentication, so bound to loopback (test_api_auth.py reviews callers).
    await start_operator(
        JOBARCHIVE_API_PORT=str(port), JOBARCHIVE_API_AUTH="none", JOBARCHIVE_API_HOST="127.0.0.1"
    )
    await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
    await _record(cluster)

    async def recorded() -> bool:
        done = await Job.filter(namespace="team-a", status__in=["Succeeded", "Failed"]).count()
        return (
            done == 2
            and fetch(
                f"http://127.0.0.1:{port}/api/v1/usage?by=namespace&since={WINDOW[0]}&until={WINDOW[1]}"
            )["items"][0]["gpu_hours"]
            == 20.0
        )

    await eventually(recorded)
    query = f"by=namespace&since={WINDOW[0]}&until={WINDOW[1]}"
    [api] = fetch(f"http://127.0.0.1:{port}/api/v1/usage?{query}")["items"]
    window = ("--since", WINDOW[0], "--until", WINDOW[1])
    cli = run(archive, "usage", "--by", "namespace", *window, "-o", "json")
    assert cli.returncode == 0, cli.stderr
    assert json.loads(cli.stdout)["items"] == [api]
    assert (api["namespace"], api["jobs"], api["succeeded"], api["failed"]) == ("team-a", 2, 1, 1)
    assert (api["gpu_hours"], api["failed_gpu_hours"], api["cpu_hours"]) == (20.0, 16.0, 4.0)

    exported = run(archive, "export", *window, "--to", str(tmp_path / "export"))
    assert exported.returncode == 0, exported.stderr
    rows = {row["name"]: row for row in read_export(tmp_path / "export").values()}
    train, crash = rows["train"], rows["crash"]
    assert (train["gpu_hours"], train["cpu_hours"], train["queue_wait_s"]) == (4.0, 4.0, 600)
    assert (train["queue"], train["status"], train["replicas"]) == ("q", "Succeeded", 2)
    assert (crash["gpu_hours"], crash["status"], crash["reason"]) == (
        16.0,
        "Failed",
        "OOMKilled (exit code 137)",
    )
    assert crash["gang_wait_s"] is None and crash["replicas"] == 2
    assert sum(row["gpu_hours"] for row in rows.values()) == api["gpu_hours"]
    assert [str(row["date"]) for row in (train, crash)] == ["2026-11-20", "2026-11-20"]
