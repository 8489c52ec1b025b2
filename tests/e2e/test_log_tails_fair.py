"""One tenant's mass failure cannot hold back another's log tails: through the real
operator at its defaults, a pod of 10,000 failed containers and a namespace's backlog
of reads are capped, what is not read says why, and another namespace's first tail is
read within seconds."""

import pathlib
import time
from typing import Any

import pytest

from jobarchive.storage.models import LogTail, Pod
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, Cluster, Feed, resource_of
from testbed.logs import Logs
from testbed.objects import Body
from tests.support.commands import jobarchive
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
# The defaults: JOBARCHIVE_LOG_TAILS_PER_POD, JOBARCHIVE_LOG_TAILS_PER_NAMESPACE and
# JOBARCHIVE_LOG_RATE (the dispatcher takes a second of reads at a time).
PER_POD = 20
PER_NAMESPACE = 500
RATE = 10
HUGE = 10_000
# Pods of PER_POD failed containers each: more than the namespace may queue at once.
BACKLOG_PODS = 60
VICTIM_WITHIN = 10.0


def queued(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> float:
    return scraped.get(("jobarchive_log_tail_queue", frozenset())) or 0


def skipped(scraped: dict[tuple[str, frozenset[tuple[str, str]]], float], reason: str) -> float:
    labels = frozenset({"outcome": "skipped", "reason": reason}.items())
    return scraped.get(("jobarchive_log_tails_total", labels)) or 0


async def job_in(cluster: Cluster, namespace: str) -> Body:
    job = o.with_meta(o.example("pytorch-simple.yaml"), name="train", namespace=namespace)
    return await cluster.create(PYTORCHJOBS, job)


def failed_pod(job: Body, index: int, containers: int) -> Body:
    """A worker whose ``containers`` containers all exited 1."""
    pod: dict[str, Any] = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index)
    names = ["pytorch", *(f"c{number}" for number in range(1, containers))]
    pod["spec"]["containers"] = [{"name": name, "image": IMAGE} for name in names]
    terminated = {"exitCode": 1, "reason": "Error", "finishedAt": "2026-11-20T10:20:00Z"}
    statuses = [
        {"name": name, "image": IMAGE, "restartCount": 0, "state": {"terminated": terminated}}
        for name in names
    ]
    pod["status"] = {"phase": "Failed", "containerStatuses": statuses}
    return pod


async def test_a_pod_of_10000_failed_containers_does_not_hold_back_another_namespaces_tail(
    cluster: Cluster, start_operator: OperatorFactory, archive: str, tmp_path: pathlib.Path
) -> None:
    logs = Logs(cluster)
    feed = Feed(cluster, PODS)
    operator = await start_operator()
    await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
    attacker, victim_job = await job_in(cluster, "attacker"), await job_in(cluster, "team-a")

    huge = feed.add(failed_pod(attacker, 0, HUGE))
    note = (
        f"the pod's first {PER_POD} failed containers are read (JOBARCHIVE_LOG_TAILS_PER_POD); "
        f"not read: this one and {HUGE - PER_POD - 1:,} more of the pod's failed containers"
    )

    async def set_aside() -> list[LogTail]:
        return await LogTail.filter(pod_id=huge["metadata"]["uid"], captured=False)

    [row] = await eventually(set_aside, within=60)
    assert (row.container, row.note) == (f"c{PER_POD}", note)
    assert skipped(await operator.scrape(), "per_pod") == HUGE - PER_POD

    for index in range(1, BACKLOG_PODS + 1):
        feed.add(failed_pod(attacker, index, PER_POD))

    async def backlog_recorded() -> bool:
        return await Pod.filter(job_id=attacker["metadata"]["uid"]).count() == BACKLOG_PODS + 1

    await eventually(backlog_recorded, within=60)
    before = await operator.scrape()
    assert skipped(before, "per_namespace") > 0
    assert PER_NAMESPACE - 100 < queued(before) <= PER_NAMESPACE + RATE

    victim = failed_pod(victim_job, 0, 1)
    logs.write(victim, "pytorch", "NCCL error: unhandled system error\n")
    started = time.monotonic()
    feed.add(victim)

    async def victims_tail() -> LogTail | None:
        return await LogTail.filter(namespace="team-a", captured=True).first()

    tail = await eventually(victims_tail, within=60, interval=0.05)
    latency = time.monotonic() - started
    after = await operator.scrape()
    print(
        f"team-a's tail stored {latency:.2f} s after its pod failed, behind "
        f"{queued(before):.0f} queued attacker reads ({queued(after):.0f} still queued)"
    )
    assert tail.log_tail == "NCCL error: unhandled system error\n"
    # First in, first out, the victim would have waited for every read queued before it,
    # PER_NAMESPACE / RATE = 50 s at the rate's wall clock, however fast the machine: half
    # of that tells the two apart and leaves a busy machine room (how soon is printed).
    assert latency < PER_NAMESPACE / RATE / 2
    # And most of them still waited when it was stored.
    assert queued(after) > VICTIM_WITHIN * RATE
    assert queued(after) <= PER_NAMESPACE + RATE

    aside = LogTail.filter(namespace="attacker", captured=False)
    assert await aside.filter(note__contains="JOBARCHIVE_LOG_TAILS_PER_NAMESPACE").exists()
    shown = jobarchive(
        "logs",
        "attacker/train",
        "--pod",
        huge["metadata"]["name"],
        # Its tails share one failure time, so which page holds the note depends on the
        # order the rows were written in: ask for the container.
        "--container",
        f"c{PER_POD}",
        cwd=tmp_path,
        env={"JOBARCHIVE_DB_URL": archive},
    )
    assert shown.returncode == 0, shown.stderr
    ended = "exit code 1 Error at 2026-11-20 10:20:00"
    assert f"container c{PER_POD} (restart 0): {ended}: not captured: {note}" in shown.stdout
