"""A job of 20,000 pods and 40,000 Events, read over real HTTP from a real
``jobarchive serve``: every answer is one bounded page however large the job and
however many clients ask at once, the server's peak memory stays far below the
Deployment's 1 GiB limit, and the cursors walk every pod and Event exactly once.

The archive is written through the store's upsert (the operator's own write path
would take minutes for 60,000 objects), from rows the real converters made of
realistic objects: a PyTorchJob asking for GPUs, its pods in every state, the
scheduler's and the kubelet's Events about them, ties in every sort key."""

import asyncio
import datetime
import json
import pathlib
import random
import time
import uuid
from typing import Any

import aiohttp
import pytest

from jobarchive.config import load
from jobarchive.core.rows import EventRow, JobRow, PodRow
from jobarchive.reading.queries import MAX_PAGE
from jobarchive.recording.convert import event_row, job_row, pod_row
from jobarchive.storage.models import Event, Job, Pod
from jobarchive.storage.store import Store
from testbed import objects as o
from testbed.objects import Body
from tests.support.serve import Walk, get, jobarchive_serve, memory

pytestmark = pytest.mark.e2e

NAMESPACE, NAME = "team-a", "llama-pretrain"
PODS = 20_000
# The name recreated every day for three years: the big job is the newest of them.
INCARNATIONS = 1_000
CONCURRENT = 20
ROUNDS = 3
START = datetime.datetime(2026, 11, 20, 10, 0, tzinfo=datetime.UTC)
IMAGE = "registry.example.com/ml/llama-pretrain:2026.11.3-cuda12.4"
GPUS = {"cpu": "16", "memory": "120Gi", "nvidia.com/gpu": "8"}
UNSCHEDULABLE = (
    "0/512 nodes are available: 128 Insufficient nvidia.com/gpu, 64 node(s) had "
    "untolerated taint {nvidia.com/gpu: present}, 320 node(s) didn't match Pod's node "
    "affinity/selector. preemption: 0/512 nodes are available: 128 No preemption victims "
    "found for incoming pod, 384 Preemption is not helpful for scheduling."
)
# Bounds with a wide margin over what was measured: a page of 500 pods and 500 Events
# is about 0.7 MB; the server's peak resident memory 150-160 MB (92 MB at start).
LARGEST_ANSWER = 2 * 1024 * 1024
PEAK_RSS = 300 * 1024 * 1024


def _time(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class BigJob:
    """The rows of one job of ``PODS`` pods with two Events each, and of the earlier
    jobs of the same name; what the API must answer about them."""

    def __init__(self, seed: int = 13) -> None:
        rng = random.Random(seed)
        self.uid = str(uuid.UUID(int=rng.getrandbits(128)))
        self.jobs: list[JobRow] = []
        self.pods: list[PodRow] = []
        self.events: list[EventRow] = []
        self.replicas: dict[str, dict[str, int]] = {}
        self.example = o.example("pytorch-simple.yaml")
        job = self._job(self.uid, START)
        kind = o.job_kind(load({}).kinds, job)
        self.jobs.append(job_row(job, kind, None))
        for day in range(1, INCARNATIONS):
            uid = str(uuid.UUID(int=rng.getrandbits(128)))
            earlier = self._job(uid, START - datetime.timedelta(days=day), finished=True)
            self.jobs.append(job_row(earlier, kind, None))
        for index in range(PODS):
            pod = self._pod(job, index, rng)
            self.pods.append(pod_row(pod, self.uid, kind.main_container, None))
            for event in self._events(pod, index, rng):
                self.events.append(event_row(event, None, self.uid))

    def _job(self, uid: str, created: datetime.datetime, finished: bool = False) -> Body:
        body = o.with_meta(
            self.example,
            uid=uid,
            name=NAME,
            namespace=NAMESPACE,
            resourceVersion=str(int(created.timestamp())),
            creationTimestamp=_time(created),
        )
        specs = body["spec"]["pytorchReplicaSpecs"]
        specs["Worker"]["replicas"] = PODS - 1
        for spec in specs.values():
            container = spec["template"]["spec"]["containers"][0]
            container["image"] = IMAGE
            container["resources"] = {"requests": GPUS, "limits": GPUS}
        if finished:
            done = _time(created + datetime.timedelta(hours=20))
            conditions = [o.condition("Created", at=_time(created)), o.condition("Succeeded")]
            body["status"] = o.job_status(*conditions, completion=done)
        else:
            conditions = [o.condition("Created", at=_time(created)), o.condition("Running")]
            body["status"] = o.job_status(*conditions)
        return body

    def _pod(self, job: Body, index: int, rng: random.Random) -> Body:
        replica, replica_index = ("Master", 0) if index == 0 else ("Worker", index - 1)
        # A hundred pods a second: many share their creation time.
        created = START + datetime.timedelta(seconds=index // 100)
        pod = o.with_meta(
            o.kubeflow_pod(job, "pytorchReplicaSpecs", replica, replica_index),
            uid=str(uuid.UUID(int=rng.getrandbits(128))),
            resourceVersion=str(100_000 + index),
            creationTimestamp=_time(created),
        )
        host = f"10.2.{index // 250 % 250}.{index % 250 + 1}"
        running = o.running_status("pytorch", IMAGE, host, f"172.20.{index // 250}.{index % 250}")
        if index % 20 == 7:
            message = "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 3; 79.15 GiB total)"
            pod["status"] = o.terminated_status(running, 137, "OOMKilled", _time(START), message)
        elif index % 9 == 4:
            pod["status"] = o.terminated_status(running, 0, "Completed", _time(START))
        elif index % 50 == 11:
            pod["status"] = {"phase": "Pending", "qosClass": "Guaranteed"}
        else:
            pod["status"] = running
        counts = self.replicas.setdefault(
            replica.lower(), {"active": 0, "succeeded": 0, "failed": 0, "stopped": 0}
        )
        phase = pod["status"]["phase"]
        counts[{"Succeeded": "succeeded", "Failed": "failed"}.get(phase, "active")] += 1
        return pod

    def _events(self, pod: Body, index: int, rng: random.Random) -> list[Body]:
        created = datetime.datetime.fromisoformat(pod["metadata"]["creationTimestamp"])
        name, phase = pod["metadata"]["name"], pod["status"]["phase"]
        node = f"gpu-node-{rng.randrange(512)}"
        if phase == "Pending":
            first = o.event(
                pod,
                "FailedScheduling",
                UNSCHEDULABLE,
                type="Warning",
                count=rng.randrange(2, 40),
                first=_time(created),
                last=_time(created + datetime.timedelta(seconds=rng.randrange(30, 900))),
                component="default-scheduler",
            )
        else:
            assigned = f"Successfully assigned {NAMESPACE}/{name} to {node}"
            first = o.event(
                pod, "Scheduled", assigned, first=_time(created), component="default-scheduler"
            )
        later = _time(created + datetime.timedelta(seconds=rng.randrange(2, 60)))
        if phase == "Failed":
            second = o.event(
                pod,
                "OOMKilling",
                "Memory cgroup out of memory: Killed process 4242 (python3) total-vm:"
                "98765432kB, anon-rss:87654321kB, file-rss:0kB, shmem-rss:0kB",
                type="Warning",
                first=later,
            )
        elif phase == "Pending":
            second = o.event(
                pod,
                "NotTriggerScaleUp",
                "pod didn't trigger scale-up: 3 node(s) didn't match Pod's node affinity",
                first=later,
                component="cluster-autoscaler",
            )
        else:
            second = o.event(pod, "Started", "Started container pytorch", first=later)
        return [
            o.with_meta(event, uid=str(uuid.UUID(int=rng.getrandbits(128))), resourceVersion="1")
            for event in (first, second)
        ]


@pytest.fixture
async def big_job(archive: str) -> BigJob:
    """The archive holding the big job and its namesakes, written through the store."""
    started = time.monotonic()
    job = BigJob()
    converted = time.monotonic()
    store = Store()
    await store.upsert(Job, job.jobs)
    await store.upsert(Pod, job.pods)
    await store.upsert(Event, job.events)
    print(
        f"rows made by the converters in {converted - started:.1f} s, "
        f"written in {time.monotonic() - converted:.1f} s"
    )
    return job


def assert_each_once_in_order(
    rows: list[dict[str, Any]], uids: list[str], key: str, field: str
) -> None:
    """Every expected uid exactly once, in (``field``, id) order."""
    found = [row[key] for row in rows]
    assert len(found) == len(uids) and set(found) == set(uids)
    order = [(row[field], row["id"]) for row in rows]
    assert order == sorted(order)


async def test_a_job_of_20000_pods_answers_in_bounded_pages_to_many_clients_at_once(
    big_job: BigJob, e2e_db_url: str, tmp_path: pathlib.Path
) -> None:
    async with (
        # Every client here is one flow (one address, no authentication), which the fair
        # gate keeps a turn from for a newcomer: its last request waits for one, however
        # slow a loaded machine makes the others, instead of being turned away.
        jobarchive_serve(
            e2e_db_url, tmp_path / "serve.log", CONCURRENT, JOBARCHIVE_API_FLOW_WAIT_MS="120000"
        ) as (base, pid),
        aiohttp.ClientSession() as session,
    ):
        rss_at_start, _ = memory(pid)
        detail_url, named_url = f"{base}/jobs/{big_job.uid}", f"{base}/jobs/{NAMESPACE}/{NAME}"

        started = time.monotonic()
        pods = await Walk().read(session, detail_url, "pods", "pods_cursor", "pods_next_cursor")
        events = await Walk().read(
            session, detail_url, "events", "events_cursor", "events_next_cursor"
        )
        named = await Walk().read(session, named_url, "items", "cursor", "next_cursor")
        listed = await Walk().read(
            session, f"{base}/events", "items", "cursor", "next_cursor", namespace=NAMESPACE
        )
        walked = time.monotonic() - started
        assert_each_once_in_order(
            pods.rows, [pod["pod_id"] for pod in big_job.pods], "pod_id", "gmt_created"
        )
        assert_each_once_in_order(
            events.rows,
            [event["event_id"] for event in big_job.events],
            "event_id",
            "last_timestamp",
        )
        assert_each_once_in_order(
            list(reversed(listed.rows)),
            [event["event_id"] for event in big_job.events],
            "event_id",
            "last_timestamp",
        )
        assert {job["job_id"] for job in named.rows} == {job["job_id"] for job in big_job.jobs}
        assert (len(pods.cursors), len(events.cursors), len(named.cursors)) == (39, 79, 1)

        status, body = await get(session, detail_url)
        detail = json.loads(body)
        assert status == 200 and detail["replicas"] == big_job.replicas
        assert (len(detail["pods"]), len(detail["events"])) == (50, 50)

        # Each of CONCURRENT clients asks at once for a page of its own: of the job's pods
        # and Events, 500 of each; of its namesakes; of the namespace's Events.
        page = {"limit": str(MAX_PAGE)}
        bursts = {
            "detail": [
                page | {"pods_cursor": pods.cursors[n], "events_cursor": events.cursors[n]}
                for n in range(CONCURRENT)
            ],
            "named": [
                page | {"cursor": named.cursors[0]} if n % 2 else page for n in range(CONCURRENT)
            ],
            "events": [
                page | {"namespace": NAMESPACE, "cursor": listed.cursors[n]}
                for n in range(CONCURRENT)
            ],
        }
        urls = {"detail": detail_url, "named": named_url, "events": f"{base}/events"}
        largest = max(walk.largest for walk in (pods, events, named, listed))
        slowest = {what: 0.0 for what in bursts}
        for _ in range(ROUNDS):
            for what, asked in bursts.items():
                started = time.monotonic()
                answers = await asyncio.gather(*(get(session, urls[what], p) for p in asked))
                slowest[what] = max(slowest[what], time.monotonic() - started)
                assert {status for status, _ in answers} == {200}
                largest = max(largest, *(len(body) for _, body in answers))
        rss, peak = memory(pid)

    times = ", ".join(f"{what} {seconds:.1f} s" for what, seconds in slowest.items())
    print(
        f"largest answer {largest / 1e6:.2f} MB; serve's RSS {rss_at_start / 1e6:.0f} MB at "
        f"start, {rss / 1e6:.0f} MB after, peak (VmHWM) {peak / 1e6:.0f} MB; walking "
        f"{PODS} pods, {2 * PODS} Events twice and {INCARNATIONS} namesakes {walked:.1f} s; "
        f"{CONCURRENT} requests at once, the slowest burst: {times}"
    )
    assert largest < LARGEST_ANSWER
    assert peak < PEAK_RSS
