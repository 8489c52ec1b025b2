"""Kueue's Workloads recorded by the real operator on the emulated API, which serves them
as Kueue v0.19 writes them (tests/fixtures/kueue/: conditions with their reasons and
messages, admission, requeueState, schedulingStats), each scenario's figures computed
here by hand (decision 43)."""

import datetime
import json
import pathlib

import pytest
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.core.attempts import Figures
from jobarchive.infra import cluster as kube
from jobarchive.reading import api, auth
from jobarchive.reading.kube.discovery import PREFIX
from jobarchive.reading.queries.preemptions import kueue_facts
from jobarchive.storage.kueue import Attempt, Wait
from jobarchive.storage.models import Event, Pod
from testbed import objects as o
from testbed.cluster import (
    EVENTS,
    PODS,
    WORKLOADS,
    WORKLOADS_V1BETA1,
    Cluster,
    Resource,
    Reviews,
    resource_of,
)
from testbed.operator import OperatorProcess, write_kubeconfig
from tests.support.commands import jobarchive
from tests.support.kueue_workloads import JOBS, PYTORCHJOBS, Workload, attempt_pods, pytorch_job
from tests.support.operators import OperatorFactory
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
ALICE, CAROL = "alice-token", "carol-token"
PREEMPTOR_JOB = "7d3b1f9a-0000-4000-8000-00000000cafe"
TABLE = "application/json;as=Table;g=meta.k8s.io;v=v1"
TFJOBS = resource_of("kubeflow.org", "TFJob")
RAYJOBS = resource_of("ray.io", "RayJob")


def at(clock: str, day: int = 20) -> datetime.datetime:
    hour, minute, second = map(int, clock.split(":"))
    return datetime.datetime(2026, 11, day, hour, minute, second, tzinfo=datetime.UTC)


async def serving(cluster: Cluster, start: OperatorFactory, workloads: Resource) -> OperatorProcess:
    """An operator on a cluster where Kueue serves its Workloads as ``workloads``."""
    cluster.serve(workloads)
    process = await start()
    await cluster.wait_watching([PODS, EVENTS, workloads, *JOBS])
    return process


@pytest.fixture
async def kueue(cluster: Cluster, start_operator: OperatorFactory) -> OperatorProcess:
    """An operator on a cluster where Kueue serves v1beta2 Workloads."""
    return await serving(cluster, start_operator, WORKLOADS)


@pytest.fixture
def readers(cluster: Cluster, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """alice reads team-a, carol team-b only; the reading process's own credentials a
    kubeconfig for the emulated cluster, which answers their reviews."""
    table = Reviews(cluster)
    table.user(ALICE, "alice", "ml-team-a")
    table.user(CAROL, "carol", "ml-team-b")
    table.grant("group:ml-team-a", "team-a")
    table.grant("group:ml-team-b", "team-b")
    # Both may read the cluster the operator records: what parts them is the namespace.
    table.grant_clusters("group:ml-team-a")
    table.grant_clusters("group:ml-team-b")
    path = tmp_path / "kubeconfig"
    write_kubeconfig(path, cluster.url)
    monkeypatch.setattr(kube, "KUBE_CONFIG_DEFAULT_LOCATION", str(path))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)


async def test_a_job_preempted_then_readmitted_has_two_attempts_its_waits_and_its_costs(
    cluster: Cluster, kueue: OperatorProcess, archive: str, tmp_path: pathlib.Path, readers: None
) -> None:
    job = await cluster.create(PYTORCHJOBS, pytorch_job())
    uid = job["metadata"]["uid"]
    workload = Workload(cluster)
    await workload.create("pending")
    wait = await eventually(lambda: Wait.filter(job_id=uid).first())
    assert (wait.reason, wait.first_seen, wait.last_seen) == (
        "Pending",
        at("10:00:02"),
        at("10:00:02"),
    )

    # Kueue's message changes as quota frees up: the same reason, seen longer.
    fewer = o.fixture("kueue/pending.yaml")
    fewer["status"]["conditions"][0]["message"] = fewer["status"]["conditions"][0][
        "message"
    ].replace("4 more", "2 more")
    fewer["metadata"]["managedFields"][1]["time"] = "2026-11-20T10:02:00Z"
    await workload.become(fewer)
    wait = await eventually(lambda: Wait.filter(job_id=uid, last_seen=at("10:02:00")).first())
    assert wait.message.endswith("2 more needed") and wait.first_seen == at("10:00:02")

    for state in ("admitted", "running"):
        await workload.become(state)
    await attempt_pods(cluster, job, "10:06:00", "11:00:20", gone=True)
    for state in ("preempted", "requeued", "readmitted"):
        await workload.become(state)
    await attempt_pods(cluster, job, "11:20:30", "13:00:00", gone=False)
    await workload.become("finished")
    await eventually(lambda: Attempt.filter(job_id=uid, end_reason="Finished").first())

    attempts = await Attempt.filter(job_id=uid).order_by("quota_reserved_at")
    assert [
        (a.quota_reserved_at, a.admitted_at, a.running_at, a.ended_at, a.end_reason)
        for a in attempts
    ] == [
        (at("10:05:00"), at("10:05:00"), at("10:06:30"), at("11:00:00"), "Preempted"),
        (at("11:20:00"), at("11:20:00"), at("11:21:00"), at("13:00:00"), "Finished"),
    ]
    first = attempts[0]
    assert (first.preemptor_workload_id, first.preemptor_job_id) == (
        "2f4a6c8e-0000-4000-8000-00000000beef",
        "7d3b1f9a-0000-4000-8000-00000000cafe",
    )
    assert (first.cluster_queue, first.local_queue, first.namespace) == (
        "cq-a100",
        "user-queue",
        "team-a",
    )
    waits = await Wait.filter(job_id=uid).order_by("first_seen")
    assert [(w.reason, w.first_seen, w.last_seen) for w in waits] == [
        ("Pending", at("10:00:02"), at("10:05:00")),
        ("Pending", at("11:00:40"), at("11:20:00")),
    ]
    # Created 10:00:00; reserved 10:05:00 and 11:20:00; every replica ready 90 s and 60 s
    # after; evicted at 11:00:00. The first attempt's four one-GPU pods ran 10:06:00 to
    # 11:00:20: 4 x 3,260 s = 3.622 GPU-hours lost to the preemption.
    facts = (await kueue_facts([uid]))[uid]
    assert facts.figures == Figures(2, 1, 300.0, 150.0, 1200.0)
    assert (facts.preempted_gpu_hours, facts.evicted_gpu_hours) == (3.622, 0.0)
    await shown_by_the_cli(uid, archive, tmp_path)
    await shown_by_the_apis_to_its_namespaces_readers_only(uid)

    # Kueue's Events about the Workload are the job's.
    await cluster.create(
        EVENTS,
        o.event(workload.body, "Preempted", first.message or "", component="kueue-admission"),
    )
    await eventually(lambda: Event.filter(job_id=uid, reason="Preempted").first())

    # Kueue's retention policy deletes the finished Workload before its job: its attempts
    # stay as they were.
    meta = workload.body["metadata"]
    await cluster.delete(WORKLOADS, meta["namespace"], meta["name"])
    assert [
        (a.end_reason, a.ended_at) for a in await Attempt.filter(job_id=uid).order_by("id")
    ] == [
        ("Preempted", at("11:00:00")),
        ("Finished", at("13:00:00")),
    ]


async def shown_by_the_cli(uid: str, archive: str, tmp_path: pathlib.Path) -> None:
    """The job's detail as ``jobarchive job`` answers it, in JSON and in 80 columns."""
    env = {"JOBARCHIVE_DB_URL": archive}
    shown = jobarchive("job", uid, "-o", "json", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    assert [
        (a["quota_reserved_at"], a["running_at"], a["ended_at"], a["end_reason"])
        for a in detail["attempts"]
    ] == [
        ("2026-11-20T10:05:00Z", "2026-11-20T10:06:30Z", "2026-11-20T11:00:00Z", "Preempted"),
        ("2026-11-20T11:20:00Z", "2026-11-20T11:21:00Z", "2026-11-20T13:00:00Z", "Finished"),
    ]
    first = detail["attempts"][0]
    assert (first["cluster_queue"], first["preemptor_job_id"]) == ("cq-a100", PREEMPTOR_JOB)
    assert first["flavors"]["worker"]["nvidia.com/gpu"] == "a100"
    # Pending from 10:00:02 to 10:05:00 (298 s), and from 11:00:40 to 11:20:00 (1,160 s).
    assert sum(wait["held_s"] for wait in detail["waits"]) == 298.0 + 1160.0
    assert {wait["reason"] for wait in detail["waits"]} == {"Pending"}
    assert {name: detail[name] for name in ("preemptions", "preempted_gpu_hours")} == {
        "preemptions": 1,
        "preempted_gpu_hours": 3.622,
    }
    waits = ("quota_wait_s", "start_wait_s", "requeue_wait_s", "evicted_gpu_hours")
    assert [detail[name] for name in waits] == [300.0, 150.0, 1200.0, 0.0]
    # In an 80-column terminal (to a pipe every line is whole, as the tables are).
    ran = jobarchive("job", uid, cwd=tmp_path, env={**env, "COLUMNS": "80"})
    printed = ran.stdout.splitlines()
    start = printed.index("Attempts: 2, 1 preempted (3.622 GPU-hours lost)")
    block = printed[start : start + 4]
    assert block[1:] == [
        "Kueue waits: quota 5m, start 2m 30s, requeue 20m",
        "  #1 2026-11-20 10:05 cq-a100/a100 55m Preempted by job 7d3b1f9a",
        "  #2 2026-11-20 11:20 cq-a100/a100 1h 40m Finished (Succeeded)",
    ]
    waited = [line for line in printed if line.startswith("Waited: Pending for ")]
    assert waited and all(len(line) <= 80 for line in block + waited)


async def shown_by_the_apis_to_its_namespaces_readers_only(uid: str) -> None:
    """The JSON API's detail and the aggregated API's ArchivedJob of a team-a job: its
    attempts to a reader of team-a, nothing of it to a reader of team-b."""
    access = await auth.access("kubernetes")
    async with TestClient(TestServer(api.Api(access).app())) as client:
        as_alice = {"Authorization": f"Bearer {ALICE}"}
        got = await client.get(f"{PREFIX}/namespaces/team-a/archivedjobs/{uid}", headers=as_alice)
        status = (await got.json())["status"]
        assert got.status == 200, status
        assert [a["endReason"] for a in status["attempts"]] == ["Preempted", "Finished"]
        assert status["attempts"][0]["preemptorJobUID"] == PREEMPTOR_JOB
        assert (status["preemptions"], status["preemptedGPUHours"]) == (1, 3.622)
        assert (status["quotaWaitSeconds"], status["requeueWaitSeconds"]) == (300.0, 1200.0)
        listed = await client.get(
            f"{PREFIX}/namespaces/team-a/archivedjobs", headers={**as_alice, "Accept": TABLE}
        )
        table = await listed.json()
        names = [column["name"] for column in table["columnDefinitions"]]
        [row] = table["rows"]
        # Not failed: no class.
        assert dict(zip(names, row["cells"], strict=True))["Failure"] == ""
        as_carol = {"Authorization": f"Bearer {CAROL}"}
        for path in (f"{PREFIX}/namespaces/team-a/archivedjobs/{uid}", f"{api.PREFIX}/jobs/{uid}"):
            refused = await client.get(path, headers=as_carol)
            answer = await refused.text()
            assert refused.status in (403, 404), answer
            assert "attempts" not in answer and "Preempted" not in answer


async def test_a_workload_in_another_namespace_naming_the_job_is_not_believed(
    cluster: Cluster, kueue: OperatorProcess, archive: str
) -> None:
    job = await cluster.create(PYTORCHJOBS, pytorch_job())
    uid = job["metadata"]["uid"]
    intruder = Workload(cluster)
    await intruder.create(
        "finished", namespace="team-x", uid="0e0e0e0e-0000-4000-8000-0000000000aa"
    )
    own = Workload(cluster)
    await own.create("running")
    await eventually(lambda: Attempt.filter(job_id=uid).first())

    async def refused() -> bool:
        return "Not attributing Workload team-x/pytorchjob-pytorch-simple-8d3e1" in kueue.log()

    await eventually(refused)
    assert await Attempt.filter(workload_id="0e0e0e0e-0000-4000-8000-0000000000aa").count() == 0
    assert [a.workload_id for a in await Attempt.filter(job_id=uid)] == [
        own.body["metadata"]["uid"]
    ]


async def test_an_eviction_for_the_podsready_timeout_and_multikueues_managers_workload(
    cluster: Cluster, kueue: OperatorProcess, archive: str
) -> None:
    tfjob = o.with_meta(
        o.example("tfjob-simple.yaml"),
        name="mnist-slow",
        namespace="team-b",
        uid="6e2d8b4a-1c3f-4a5e-8b7d-9f0a1b2c3d4e",
        creationTimestamp="2026-11-20T12:00:00Z",
    )
    await cluster.create(TFJOBS, tfjob)
    manager_job = o.with_meta(
        pytorch_job(),
        name="dist-train",
        uid="8f1a2b3c-4d5e-4f60-8172-93a4b5c6d7e8",
        creationTimestamp="2026-11-20T09:00:00Z",
    )
    await cluster.create(PYTORCHJOBS, manager_job)
    await Workload(cluster).create("podsready-timeout")
    await Workload(cluster).create("multikueue-manager")
    slow = await eventually(lambda: Attempt.filter(job_id=tfjob["metadata"]["uid"]).first())
    assert (slow.end_reason, slow.underlying_cause, slow.requeues) == (
        "PodsReadyTimeout",
        "WaitForStart",
        1,
    )
    assert (slow.ended_at, slow.running_at) == (at("12:10:05"), None)
    manager = await eventually(
        lambda: Attempt.filter(job_id=manager_job["metadata"]["uid"]).first()
    )
    assert (manager.cluster_queue, manager.end_reason, manager.admitted_at) == (
        "cq-multikueue",
        "ClusterQueueStopped",
        at("09:00:09"),
    )
    facts = await kueue_facts([tfjob["metadata"]["uid"], manager_job["metadata"]["uid"]])
    # Quota reserved 5 s and 3 s after creation; neither ran, one attempt each.
    assert facts[tfjob["metadata"]["uid"]].figures == Figures(1, 0, 5.0, None, 0.0)
    assert facts[manager_job["metadata"]["uid"]].figures == Figures(1, 0, 3.0, None, 0.0)


async def test_a_cluster_serving_only_v1beta1_workloads_is_recorded_the_same(
    cluster: Cluster, start_operator: OperatorFactory, archive: str
) -> None:
    await serving(cluster, start_operator, WORKLOADS_V1BETA1)
    rayjob = o.with_meta(
        o.fixture("rayjob.yaml"),
        name="rl-sweep",
        namespace="team-c",
        uid="2c3d4e5f-6a7b-4c8d-9e0f-1a2b3c4d5e6f",
        creationTimestamp="2026-11-19T08:00:00Z",
    )
    await cluster.create(RAYJOBS, rayjob)
    await Workload(cluster, WORKLOADS_V1BETA1).create("v1beta1-preempted")
    attempt = await eventually(lambda: Attempt.filter(job_id=rayjob["metadata"]["uid"]).first())
    assert (attempt.quota_reserved_at, attempt.ended_at, attempt.end_reason) == (
        at("08:30:00", 19),
        at("09:00:00", 19),
        "Preempted",
    )


async def test_without_kueue_nothing_changes_and_nothing_is_said_per_object(
    cluster: Cluster, operator: OperatorProcess, archive: str
) -> None:
    job = await cluster.create(PYTORCHJOBS, pytorch_job())
    await attempt_pods(cluster, job, "10:06:00", "11:00:20", gone=False)

    async def recorded() -> bool:
        return await Pod.filter(job_id=job["metadata"]["uid"]).count() == 4

    await eventually(recorded)
    said = [line for line in operator.log().splitlines() if "orkload" in line]
    assert len(said) == 1 and "Unresolved resources" in said[0], said
    assert await Attempt.all().count() == 0 and await Wait.all().count() == 0
