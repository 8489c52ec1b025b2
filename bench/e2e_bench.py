"""End to end through the real Kopf operator, against the same Kopf operator with no-op
handlers (``bench/noop_operator.py``) on an identical emulated cluster:

- catch-up: a cluster holding one PyTorchJob, N of its pods and an Event about each
  is listed and watched from scratch; objects per second from the operator's launch
  until every object is committed (jobarchive) or seen (no-op), and peak RSS;
- steady load: pods created at a fixed rate; the lag from each creation to its
  committed row (jobarchive) or its handler call (no-op), p50 and p99.
"""

import asyncio
import pathlib
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import kmock

from bench import data
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from testbed.cluster import EVENTS, PODS, Cluster, emulated_cluster, resource_of
from testbed.mariadb import Databases
from testbed.operator import REPO, OperatorProcess, write_kubeconfig

NOOP = REPO / "bench" / "noop_operator.py"
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")


def fill(cluster: Cluster, pods: int) -> int:
    """Put a job, its pods and an Event per pod straight into the emulator's store."""
    if not pods:
        return 0
    job = data.job_object(0, namespace="catchup")
    cluster.emulator.objects[PYTORCHJOBS.key, "catchup", job["metadata"]["name"]] = job
    for index in range(pods):
        pod = data.pod_object(job, index)
        cluster.emulator.objects[PODS.key, "catchup", pod["metadata"]["name"]] = pod
        event = data.event_object(pod)
        cluster.emulator.objects[EVENTS.key, "catchup", event["metadata"]["name"]] = event
    return 1 + 2 * pods


class SteadyLoad:
    """Pods of a tracked job streamed to the watcher of pods at a fixed rate.

    The pods reach the operator through a real watch stream, served by a kmock
    reaction: the emulator's own create path scans every stored object per request,
    which would bound the offered load below what is being measured.
    """

    def __init__(self, rate: int, seconds: int) -> None:
        self.rate = rate
        self.count = rate * seconds
        self.sent: dict[str, float] = {}
        self.job = data.job_object(1, namespace="steady")
        self.finished = asyncio.Event()

    async def stream(self, request: Any) -> Any:
        yield b""
        loop = asyncio.get_running_loop()
        start = loop.time()
        for index in range(self.count):
            delay = start + index / self.rate - loop.time()
            # The offered rate: each pod is sent at its own time, whatever the last one took.
            if delay > 0:
                await asyncio.sleep(delay)
            pod = data.pod_object(self.job, index)
            self.sent[pod["metadata"]["uid"]] = time.time()
            yield {"type": "ADDED", "object": pod}
        self.finished.set()
        # Open until the operator goes, as a watch stream with nothing more to say.
        await asyncio.Event().wait()

    async def done(self) -> None:
        """Wait until every pod has been sent."""
        await self.finished.wait()


def percentiles(lags: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(lags, n=100, method="inclusive")
    return cuts[49], cuts[98]


class Run:
    """One operator against a freshly filled emulated cluster."""

    def __init__(self, workdir: pathlib.Path, objects: int) -> None:
        self.workdir = workdir
        self.objects = objects
        self.rate = 0.0
        self.peak_rss = 0
        self.lag = (0.0, 0.0)


async def with_cluster(pods: int, load: SteadyLoad | None, body: Callable[..., Any]) -> Any:
    """An emulated cluster holding a job with ``pods`` pods and Events, or streaming ``load``."""
    async with emulated_cluster() as cluster:
        if load is not None:
            cluster.emulator[kmock.action.WATCH, kmock.resource("", "v1", "pods")] << load.stream
        return await body(cluster, fill(cluster, pods))


async def noop_catch_up(workdir: pathlib.Path, pods: int) -> Run:
    async def body(cluster: Cluster, objects: int) -> Run:
        result = Run(workdir, objects)
        env: dict[str, str | None] = {"NOOP_EXPECT": str(objects), "JOBARCHIVE_DB_URL": None}
        process = await launch(cluster, workdir, env, NOOP)
        started = time.perf_counter()
        await caught_up(process)
        result.rate = objects / (time.perf_counter() - started)
        result.peak_rss = process.peak_rss()
        await process.stop()
        return result

    result: Run = await with_cluster(pods, None, body)
    return result


async def noop_lag(workdir: pathlib.Path, rate: int, seconds: int) -> tuple[float, float]:
    load = SteadyLoad(rate, seconds)
    seen_file = workdir / "seen.txt"

    async def body(cluster: Cluster, objects: int) -> tuple[float, float]:
        env: dict[str, str | None] = {
            "NOOP_SEEN_FILE": str(seen_file),
            "NOOP_EXPECT": str(load.count),
            "JOBARCHIVE_DB_URL": None,
        }
        process = await launch(cluster, workdir, env, NOOP)
        await load.done()
        await caught_up(process)
        await process.stop()
        seen = dict(line.split() for line in seen_file.read_text().splitlines())
        return percentiles([float(seen[uid]) - t for uid, t in load.sent.items() if uid in seen])

    lag: tuple[float, float] = await with_cluster(0, load, body)
    return lag


async def jobarchive_catch_up(workdir: pathlib.Path, url: str, pods: int) -> Run:
    async def body(cluster: Cluster, objects: int) -> Run:
        result = Run(workdir, objects)
        await db.open_database(url, encryption=DbTls())
        process = await launch(cluster, workdir, {"JOBARCHIVE_DB_URL": url}, None)
        started = time.perf_counter()
        while (count := await total()) < objects:
            # COUNT(*) scans: polled coarsely it would steal the database's CPU from the
            # operator being measured; finely only near the end, where timing matters.
            await asyncio.sleep(0.1 if count > 0.97 * objects else 1.0)
        result.rate = objects / (time.perf_counter() - started)
        result.peak_rss = process.peak_rss()
        await process.stop()
        await db.close_database()
        return result

    result: Run = await with_cluster(pods, None, body)
    return result


async def jobarchive_lag(
    workdir: pathlib.Path, url: str, rate: int, seconds: int
) -> tuple[float, float]:
    load = SteadyLoad(rate, seconds)

    async def body(cluster: Cluster, objects: int) -> tuple[float, float]:
        await db.open_database(url, encryption=DbTls())
        process = await launch(cluster, workdir, {"JOBARCHIVE_DB_URL": url}, None)
        await load.done()
        while await Pod.filter(namespace="steady").count() < load.count:
            await asyncio.sleep(0.1)
        rows = await Pod.filter(namespace="steady").values_list("pod_id", "gmt_modified")
        await process.stop()
        await db.close_database()
        return percentiles([stamp.timestamp() - load.sent[uid] for uid, stamp in rows])

    lag: tuple[float, float] = await with_cluster(0, load, body)
    return lag


async def caught_up(process: OperatorProcess, within: float = 600.0) -> None:
    """Wait until the no-op operator says it has seen every object it expects."""
    deadline = time.monotonic() + within
    while "caught up" not in process.log():
        if time.monotonic() > deadline:
            raise AssertionError(f"the no-op operator did not catch up in {within} s")
        await asyncio.sleep(0.05)


async def total() -> int:
    return await Job.all().count() + await Pod.all().count() + await Event.all().count()


async def launch(
    cluster: Cluster, workdir: pathlib.Path, env: dict[str, str | None], script: pathlib.Path | None
) -> OperatorProcess:
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    process = (
        OperatorProcess(workdir, kubeconfig, env, script)
        if script
        else OperatorProcess(workdir, kubeconfig, env)
    )
    await process.start()
    return process


async def run(databases: Databases, line: Any, ratio: Any, args: Any) -> list[bool]:
    """Both operators, the same cluster and load; prints figures and returns targets met."""
    pods, rate, seconds = args.catch_up_pods, args.rate, args.seconds
    print(f"End to end: catch up with 1 job, {pods:,} pods, {pods:,} Events; then {rate} pods/s")
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
        dirs = [pathlib.Path(tmp, name) for name in ("noop-1", "noop-2", "ours-1", "ours-2")]
        for directory in dirs:
            directory.mkdir()
        noop = await noop_catch_up(dirs[0], pods)
        noop.lag = await noop_lag(dirs[1], rate, seconds)
        url = databases.create("jobarchive_bench_e2e")
        ours = await jobarchive_catch_up(dirs[2], url, pods)
        ours.lag = await jobarchive_lag(
            dirs[3], databases.create("jobarchive_bench_lag"), rate, seconds
        )
    mib = 1024 * 1024
    line("no-op Kopf catch-up objects/s", f"{noop.rate:,.0f}")
    line("jobarchive catch-up objects/s", f"{ours.rate:,.0f}")
    results = [ratio("e2e/kopf-noop", ours.rate / noop.rate, 0.8)]
    line("no-op Kopf peak RSS MB", f"{noop.peak_rss / mib:,.0f}")
    line("jobarchive peak RSS MB", f"{ours.peak_rss / mib:,.0f}")
    results.append(ratio("RSS jobarchive/no-op", ours.peak_rss / noop.peak_rss, 1.25, False))
    line(f"no-op Kopf lag p50/p99 at {rate}/s, s", f"{noop.lag[0]:.3f} / {noop.lag[1]:.3f}")
    line(f"jobarchive lag p50/p99 at {rate}/s, s", f"{ours.lag[0]:.3f} / {ours.lag[1]:.3f}")
    results.append(ratio("jobarchive lag p99, s", ours.lag[1], 1.0, False))
    return results
