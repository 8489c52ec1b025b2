"""Usage from a workload the real operator recorded on the emulated API, its figures
computed here by hand (decision 33): pods of 1, 2, 4 and 8 GPUs, a pod that never
started, a restarted container, a failed job across midnight, a running job counted to
the window's end, a Kueue-queued job with a known wait. The roll-up, the command line
and the API give the same numbers."""

import asyncio
import json
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.reading import api, auth
from jobarchive.reading.queries import job_usage, parse_time, rollup
from jobarchive.storage.models import Job, Pod
from testbed import objects as o
from testbed.cluster import PODS, Cluster, resource_of
from testbed.operator import OperatorProcess
from tests.support.small_archive import run
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
SINCE, UNTIL = "2026-11-20T00:00:00Z", "2026-11-22T00:00:00Z"
OOM = "OOMKilled (exit code 137)"


def job_body(name: str, namespace: str, created: str, queue: str | None = None) -> o.Body:
    body = o.with_meta(
        o.example("pytorch-simple.yaml"), name=name, namespace=namespace, creationTimestamp=created
    )
    if queue:
        body["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": queue}
    return body


def pod_body(job: o.Body, role: str, index: int, gpus: int, cpu: str = "0") -> o.Body:
    pod = o.kubeflow_pod(job, "pytorchReplicaSpecs", role, index)
    pod["metadata"]["creationTimestamp"] = job["metadata"]["creationTimestamp"]
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": cpu},
        "limits": {"nvidia.com/gpu": gpus},
    }
    return pod


def started(at: str, restarts: int = 0) -> o.Body:
    status = o.running_status("pytorch", IMAGE, "10.0.0.1", "172.16.0.1")
    status["startTime"] = at
    container = status["containerStatuses"][0]
    container["state"] = {"running": {"startedAt": at}}
    if restarts:
        container["restartCount"] = restarts
        container["lastState"] = {
            "terminated": {"exitCode": 1, "reason": "Error", "finishedAt": at, "startedAt": at}
        }
    return status


def ran(running: str, finished: str | None = None, outcome: str = "Succeeded") -> o.Body:
    conditions = [o.condition("Created", at=running), o.condition("Running", at=running)]
    if finished:
        conditions = [
            o.condition("Created", at=running),
            o.condition("Running", "False", at=finished),
            o.condition(outcome, at=finished),
        ]
    return o.job_status(*conditions, completion=finished)


async def pods_of(cluster: Cluster, job: o.Body, *pods: tuple[o.Body, o.Body | None]) -> None:
    for body, status in pods:
        made = await cluster.create(PODS, body)
        if status is not None:
            await cluster.patch(
                PODS, made["metadata"]["namespace"], made["metadata"]["name"], {"status": status}
            )


async def finish(cluster: Cluster, job: o.Body, running: str, finished: str, outcome: str) -> None:
    """Running, seen so (Kopf hands a handler only an object's latest state, and the
    first time running is kept from it), then finished."""
    namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
    await cluster.patch(PYTORCHJOBS, namespace, name, {"status": ran(running)})

    async def seen() -> Job | None:
        return await Job.filter(name=name, gmt_job_running__isnull=False).first()

    await eventually(seen)
    await cluster.patch(PYTORCHJOBS, namespace, name, {"status": ran(running, finished, outcome)})


async def record(cluster: Cluster) -> None:
    """The workload: A in team-a (queue research), created 08:00, running from 08:10
    (a 600 s wait): 1 GPU and 4 GPUs (2 CPUs; its container restarted once) for 2 h,
    a third pod of 4 GPUs that never started: 10 GPU-hours, 4 CPU-hours. B in team-a,
    created and running at 23:00, 2 GPUs until it fails at 01:00: 2 GPU-hours on each
    day. C in team-b, running from 12:00 on the 21st on 8 GPUs: 96 GPU-hours to the end
    of the window."""
    a = await cluster.create(
        PYTORCHJOBS, job_body("usage-a", "team-a", "2026-11-20T08:00:00Z", "research")
    )
    await pods_of(
        cluster,
        a,
        (
            pod_body(a, "Master", 0, 1),
            o.terminated_status(
                started("2026-11-20T08:10:00Z"), 0, "Completed", "2026-11-20T10:10:00Z"
            ),
        ),
        (
            pod_body(a, "Worker", 0, 4, "2"),
            o.terminated_status(
                started("2026-11-20T08:10:00Z", restarts=1), 0, "Completed", "2026-11-20T10:10:00Z"
            ),
        ),
        (pod_body(a, "Worker", 1, 4), None),
    )
    await finish(cluster, a, "2026-11-20T08:10:00Z", "2026-11-20T10:10:00Z", "Succeeded")
    b = await cluster.create(PYTORCHJOBS, job_body("usage-b", "team-a", "2026-11-20T23:00:00Z"))
    await pods_of(
        cluster,
        b,
        (
            pod_body(b, "Worker", 0, 2),
            o.terminated_status(
                started("2026-11-20T23:00:00Z"), 137, "OOMKilled", "2026-11-21T01:00:00Z"
            ),
        ),
    )
    await finish(cluster, b, "2026-11-20T23:00:00Z", "2026-11-21T01:00:00Z", "Failed")
    c = await cluster.create(PYTORCHJOBS, job_body("usage-c", "team-b", "2026-11-21T12:00:00Z"))
    await pods_of(cluster, c, (pod_body(c, "Worker", 0, 8), started("2026-11-21T12:00:00Z")))
    await cluster.patch(PYTORCHJOBS, "team-b", "usage-c", {"status": ran("2026-11-21T12:00:00Z")})

    async def recorded() -> bool:
        jobs = await Job.filter(status__in=["Succeeded", "Failed", "Running"]).count()
        finished = await Pod.filter(gmt_finished__isnull=False).count()
        running = await Pod.filter(gmt_started__isnull=False, gmt_finished__isnull=True).count()
        waited = await Job.filter(gmt_job_running__isnull=False).count()
        return (
            jobs == 3
            and finished == 3
            and running == 1
            and waited == 3
            and await Pod.all().count() == 5
        )

    await eventually(recorded)


def shown(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], dict[str, Any]]:
    return {tuple(row[key] for key in keys): row for row in rows}


async def test_usage_of_a_recorded_workload_is_what_the_hand_computes(
    cluster: Cluster, operator: OperatorProcess, archive: str
) -> None:
    await record(cluster)
    since, until = parse_time(SINCE, "since"), parse_time(UNTIL, "until")
    by_namespace = shown(await rollup("namespace", since=since, until=until), "namespace")
    a, b = by_namespace[("team-a",)], by_namespace[("team-b",)]
    assert (a["jobs"], a["succeeded"], a["failed"]) == (2, 1, 1)
    assert (a["gpu_hours"], a["failed_gpu_hours"], a["cpu_hours"]) == (14.0, 4.0, 4.0)
    assert (a["queue_wait_p50_s"], a["queue_wait_p95_s"]) == (0, 600)
    assert a["top_failure_reasons"] == [{"reason": OOM, "gpu_hours": 4.0, "jobs": 1}]
    assert (b["jobs"], b["succeeded"], b["failed"], b["gpu_hours"]) == (1, 0, 0, 96.0)

    per_day = await rollup("namespace", "day", since=since, until=until)
    days = shown(per_day, "namespace", "period")
    assert (
        days[("team-a", "2026-11-20")]["gpu_hours"],
        days[("team-a", "2026-11-21")]["gpu_hours"],
    ) == (12.0, 2.0)
    assert (days[("team-a", "2026-11-20")]["jobs"], days[("team-a", "2026-11-21")]["jobs"]) == (
        2,
        1,
    )
    assert days[("team-a", "2026-11-21")]["failed"] == 1
    assert days[("team-b", "2026-11-21")]["gpu_hours"] == 96.0
    queues = shown(await rollup("queue", since=since, until=until), "queue")
    assert (
        queues[("research",)]["queue_wait_p50_s"] == 600
        and queues[("research",)]["gpu_hours"] == 10.0
    )

    facts = {job.name: job async for batch in job_usage(since, until) for job in batch}
    assert (facts["usage-a"].queue_wait_s, facts["usage-a"].gang_wait_s) == (600, None)
    assert (facts["usage-a"].run_s, facts["usage-a"].replicas) == (7200, 3)
    assert dict(facts["usage-a"].gpu_hours_by_type) == {"master": 2.0, "worker": 8.0}
    assert (facts["usage-b"].reason, facts["usage-b"].gpu_hours) == (OOM, 4.0)
    assert facts["usage-c"].queue is None and facts["usage-c"].gpu_hours == 96.0

    flags = ["--every", "day", "--since", SINCE, "--until", UNTIL, "-o", "json"]
    printed = await asyncio.to_thread(run, archive, "usage", *flags)
    assert printed.returncode == 0, printed.stderr
    assert json.loads(printed.stdout) == {"items": per_day}
    async with TestClient(TestServer(api.Api(auth.NoAuth()).app())) as client:
        answer = await client.get(f"{api.PREFIX}/usage?every=day&since={SINCE}&until={UNTIL}")
        assert await answer.json() == {"items": per_day}
