"""The recorder's pace with Kueue's Workloads beside the pods (issue 38, decision 43): the
real operator catches up with the same emulated cluster of ``jobs`` PyTorchJobs, their
``pods`` pods each and an Event per pod, once alone and once with a Workload per job
streamed through its versions as Kueue writes them (tests/fixtures/kueue/: pending,
admitted, finished; every fifth preempted, requeued and readmitted between). Each run's
CPU seconds of the operator (user+sys, from the launch until every row is committed)
per object recorded, the Workloads' versions counted among the objects; runs
interleaved, medians compared: the Workloads must not slow the recording per object.
"""

import asyncio
import copy
import pathlib
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from bench import data
from bench.e2e_bench import PYTORCHJOBS, cpu_seconds, launch, total
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.kueue import Attempt
from testbed import objects as o
from testbed.cluster import EVENTS, PODS, WORKLOADS, Cluster
from testbed.fast_emulator import fast_cluster
from testbed.mariadb import Databases

TARGET = 1.1
NAMESPACE = "kueue-bench"
# A Workload's versions, as Kueue writes them; every fifth job preempted once.
ADMITTED = ("pending", "admitted", "finished")
PREEMPTED = ("pending", "admitted", "preempted", "requeued", "readmitted", "finished")
# Every Workload's last version: the attempts written at it are the run's end.
LAST_VERSION = "90000000"


def versions(job: dict[str, Any], index: int) -> list[dict[str, Any]]:
    """The Workload of ``job`` in each of its states, owned by it, versions increasing."""
    states = PREEMPTED if index % 5 == 0 else ADMITTED
    meta = job["metadata"]
    found = []
    for step, state in enumerate(states):
        body = copy.deepcopy(o.fixture(f"kueue/{state}.yaml"))
        last = step == len(states) - 1
        body["metadata"].update(
            name=f"pytorchjob-{meta['name']}",
            namespace=meta["namespace"],
            uid=f"wl-{meta['uid']}",
            resourceVersion=LAST_VERSION if last else str(10_000_000 + 10 * index + step),
            labels={"kueue.x-k8s.io/job-uid": meta["uid"]},
        )
        body["metadata"]["ownerReferences"][0].update(name=meta["name"], uid=meta["uid"])
        found.append(body)
    return found


class Stream:
    """Every Workload's versions streamed to the watcher of Workloads, in order."""

    def __init__(self, bodies: list[list[dict[str, Any]]]) -> None:
        self.bodies = bodies
        self.count = sum(len(each) for each in bodies)

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        yield b""
        for each in self.bodies:
            for step, body in enumerate(each):
                yield {"type": "ADDED" if step == 0 else "MODIFIED", "object": body}
        # Open until the operator goes, as a watch stream with nothing more to say.
        await asyncio.Event().wait()


def fill(cluster: Cluster, jobs: int, pods: int) -> tuple[int, list[list[dict[str, Any]]]]:
    """The jobs, their pods and an Event per pod in the emulator's store: how many, and
    each job's Workload versions."""
    workloads = []
    for index in range(jobs):
        job = data.job_object(index, namespace=NAMESPACE)
        cluster.emulator.objects[PYTORCHJOBS.key, NAMESPACE, job["metadata"]["name"]] = job
        for n in range(pods):
            pod = data.pod_object(job, n)
            pod["metadata"]["name"] = f"{job['metadata']['name']}-worker-{n}"
            cluster.emulator.objects[PODS.key, NAMESPACE, pod["metadata"]["name"]] = pod
            event = data.event_object(pod)
            cluster.emulator.objects[EVENTS.key, NAMESPACE, event["metadata"]["name"]] = event
        workloads.append(versions(job, index))
    return jobs * (1 + 2 * pods), workloads


async def catch_up(
    workdir: pathlib.Path, url: str, jobs: int, pods: int, with_workloads: bool
) -> tuple[float, int]:
    """One catch-up: the operator's CPU seconds and the objects it recorded."""
    stream = Stream([])
    async with fast_cluster([(WORKLOADS, lambda request: stream.stream(request))]) as cluster:
        cluster.serve(WORKLOADS)
        objects, workloads = fill(cluster, jobs, pods)
        if with_workloads:
            stream = Stream(workloads)
        await db.open_database(url, encryption=DbTls())
        try:
            process = await launch(cluster, workdir, {"JOBARCHIVE_DB_URL": url}, None)
            ended = jobs if with_workloads else 0
            while await total() < objects or await _ended() < ended:
                await asyncio.sleep(0.2)
            cpu = cpu_seconds(process.process.pid if process.process else None)
            await process.stop()
        finally:
            await db.close_database()
    return cpu, objects + stream.count


async def _ended() -> int:
    return await Attempt.filter(version=LAST_VERSION).count()


async def run(
    databases: Databases, line: Callable[..., None], ratio: Callable[..., bool], args: Any
) -> list[bool]:
    """Interleaved runs alone and with the Workloads; prints CPU ms per object."""
    jobs, pods, runs = args.workloads_jobs, args.workloads_pods, args.runs
    print(
        f"Workloads: catch up with {jobs:,} jobs of {pods} pods and an Event each, alone "
        f"and with a Workload per job through its versions; {runs} runs: median (range)"
    )
    per_object: dict[bool, list[float]] = {False: [], True: []}
    objects = jobs * (1 + 2 * pods)
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
        for turn in range(runs):
            for with_workloads in (False, True):
                workdir = pathlib.Path(tmp) / f"{turn}-{with_workloads}"
                workdir.mkdir()
                url = databases.create(f"jobarchive_bench_workloads_{turn}")
                started = time.perf_counter()
                cpu, recorded = await catch_up(workdir, url, jobs, pods, with_workloads)
                per_object[with_workloads].append(1000 * cpu / recorded)
                print(
                    f"  ({'with' if with_workloads else 'without'} Workloads: {recorded:,} "
                    f"objects in {time.perf_counter() - started:.0f} s)",
                    flush=True,
                )
    for with_workloads, label in ((False, "pods alone"), (True, "beside Workloads")):
        figures = per_object[with_workloads]
        line(
            f"{label}: operator CPU ms per object",
            f"{statistics.median(figures):.3f}",
            f"({min(figures):.3f}-{max(figures):.3f})",
        )
    slower = statistics.median(per_object[True]) / statistics.median(per_object[False])
    # The same CPU charged to the pods, Events and jobs alone: what the Workloads add.
    added = slower * (objects + versions_count(jobs)) / objects
    line("  (charged to the pods, Events and jobs alone)", f"{added:.2f}")
    return [ratio("CPU per object beside Workloads / alone", slower, TARGET, False)]


def versions_count(jobs: int) -> int:
    """How many Workload versions ``jobs`` jobs stream."""
    return sum(len(PREEMPTED if index % 5 == 0 else ADMITTED) for index in range(jobs))
