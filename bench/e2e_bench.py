"""End to end through the real Kopf operator, against the same Kopf operator with no-op
handlers (``bench/noop_operator.py``), on identical emulated clusters that list and
watch as an API server does (``testbed.fast_emulator``):

- catch-up, per size: a cluster holding one PyTorchJob, N of its pods and an Event
  about each is listed and watched from scratch; objects per second from the launch
  until every object is committed (jobarchive) or seen (no-op), the CPU seconds per
  1,000 objects of the operator and of MariaDB (user+sys from ``/proc/PID/stat``, from
  the launch to that moment), and peak RSS. Two no-ops: Kopf's defaults (what a user
  would write), and Kopf with jobarchive's settings. Each figure is the median of
  ``--runs`` runs, with their range: wall rates swing with other load on the machine,
  CPU per object much less.
- steady load: pods created at a fixed rate; the lag from each creation to its
  committed row (jobarchive) or its handler call (no-op), p50 and p99.
"""

import asyncio
import dataclasses
import os
import pathlib
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench import data
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import Event, Job, Pod
from testbed.cluster import EVENTS, PODS, Cluster, resource_of
from testbed.fast_emulator import fast_cluster
from testbed.mariadb import Databases
from testbed.operator import REPO, OperatorProcess, write_kubeconfig

NOOP = REPO / "bench" / "noop_operator.py"
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
TICKS = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024


def cpu_seconds(pid: int | None) -> float:
    """User plus system CPU seconds a process has used so far (0 for none)."""
    if pid is None:
        return 0.0
    stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    # The command may hold spaces and parentheses: fields are counted after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


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


@dataclasses.dataclass
class Run:
    """One catch-up of one operator against a freshly filled emulated cluster."""

    objects: int
    rate: float = 0.0
    cpu: float = 0.0
    database_cpu: float = 0.0
    peak_rss: int = 0

    def per_thousand(self, seconds: float) -> float:
        return 1000 * seconds / self.objects


async def with_cluster(pods: int, load: SteadyLoad | None, body: Callable[..., Any]) -> Any:
    """An emulated cluster holding a job with ``pods`` pods and Events, or streaming ``load``."""
    before = [(PODS, load.stream)] if load is not None else []
    async with fast_cluster(before) as cluster:
        if load is not None:
            # Their job is in the cluster: a pod is stored once its job's namespace is known.
            name = load.job["metadata"]["name"]
            cluster.emulator.objects[PYTORCHJOBS.key, "steady", name] = load.job
        return await body(cluster, fill(cluster, pods))


async def noop_catch_up(workdir: pathlib.Path, pods: int, settings: str, server: int | None) -> Run:
    async def body(cluster: Cluster, objects: int) -> Run:
        result = Run(objects)
        env: dict[str, str | None] = {
            "NOOP_EXPECT": str(objects),
            "NOOP_SETTINGS": settings,
            "JOBARCHIVE_DB_URL": None,
        }
        database_before = cpu_seconds(server)
        started = time.perf_counter()
        process = await launch(cluster, workdir, env, NOOP)
        await caught_up(process)
        result.rate = objects / (time.perf_counter() - started)
        result.cpu = cpu_seconds(process.process.pid if process.process else None)
        result.database_cpu = cpu_seconds(server) - database_before
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
            "NOOP_SETTINGS": "default",
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


async def jobarchive_catch_up(
    workdir: pathlib.Path, url: str, pods: int, server: int | None
) -> Run:
    async def body(cluster: Cluster, objects: int) -> Run:
        result = Run(objects)
        await db.open_database(url, encryption=DbTls())
        database_before = cpu_seconds(server)
        started = time.perf_counter()
        process = await launch(cluster, workdir, {"JOBARCHIVE_DB_URL": url}, None)
        while (count := await total()) < objects:
            # COUNT(*) scans: polled coarsely it would steal the database's CPU from the
            # operator being measured; finely only near the end, where timing matters.
            await asyncio.sleep(0.1 if count > 0.97 * objects else 1.0)
        result.rate = objects / (time.perf_counter() - started)
        result.cpu = cpu_seconds(process.process.pid if process.process else None)
        result.database_cpu = cpu_seconds(server) - database_before
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


async def caught_up(process: OperatorProcess, within: float = 1800.0) -> None:
    """Wait until the no-op operator says it has seen every object it expects."""
    deadline = time.monotonic() + within
    while "caught up" not in process.log():
        if time.monotonic() > deadline:
            raise AssertionError(f"the no-op operator did not catch up in {within} s")
        await asyncio.sleep(0.05)


async def total() -> int:
    return await Job.all().count() + await Pod.all().count() + await Event.all().count()


async def launch(
    cluster: Cluster,
    workdir: pathlib.Path,
    env: dict[str, str | None],
    script: pathlib.Path | None,
    *args: str,
) -> OperatorProcess:
    """The operator (or ``script``) started in ``workdir`` against ``cluster``, with ``args``."""
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    process = (
        OperatorProcess(workdir, kubeconfig, env, script)
        if script
        else OperatorProcess(workdir, kubeconfig, env)
    )
    await process.start(*args)
    return process


def spread(values: list[float], fmt: str) -> str:
    """The median and the range of a figure over the runs: ``m (lo-hi)``."""
    if len(values) == 1:
        return format(values[0], fmt)
    low, high = min(values), max(values)
    return f"{format(statistics.median(values), fmt)} ({format(low, fmt)}-{format(high, fmt)})"


async def catch_up_runs(
    databases: Databases, workdir: pathlib.Path, pods: int, runs: int, server: int | None
) -> dict[str, list[Run]]:
    """``runs`` catch-ups of each operator, interleaved so that load elsewhere on the
    machine falls on all of them alike."""
    results: dict[str, list[Run]] = {"noop-default": [], "noop-tuned": [], "jobarchive": []}
    for turn in range(runs):
        for name in results:
            directory = workdir / f"{name}-{pods}-{turn}"
            directory.mkdir()
            if name == "jobarchive":
                url = databases.create(f"jobarchive_bench_e2e_{pods}_{turn}")
                run = await jobarchive_catch_up(directory, url, pods, server)
            else:
                settings = "default" if name == "noop-default" else "jobarchive"
                run = await noop_catch_up(directory, pods, settings, server)
            results[name].append(run)
    return results


def report(results: dict[str, list[Run]], line: Any, ratio: Any) -> list[bool]:
    """Print one size's figures; returns the targets met."""
    labels = {
        "noop-default": "no-op, defaults",
        "noop-tuned": "no-op, tuned",
        "jobarchive": "jobarchive",
    }
    for name, runs in results.items():
        line(f"{labels[name]}: objects/s", spread([r.rate for r in runs], ",.0f"))
    for name, runs in results.items():
        cpu = [r.per_thousand(r.cpu) for r in runs]
        database = [r.per_thousand(r.database_cpu) for r in runs]
        line(
            f"{labels[name]}: CPU s/1,000", spread(cpu, ".2f"), f"MariaDB {spread(database, '.3f')}"
        )
    for name, runs in results.items():
        line(f"{labels[name]}: peak RSS MB", spread([r.peak_rss / MIB for r in runs], ",.0f"))

    def median(name: str, field: str) -> float:
        return statistics.median(getattr(run, field) for run in results[name])

    ours_rate, ours_cpu = median("jobarchive", "rate"), median("jobarchive", "cpu")
    met = [
        ratio(
            "catch-up jobarchive / default no-op", ours_rate / median("noop-default", "rate"), 0.8
        )
    ]
    line(
        "  (against the no-op with the same settings)",
        f"{ours_rate / median('noop-tuned', 'rate'):.2f}",
    )
    met.append(
        ratio(
            "CPU jobarchive / default no-op", ours_cpu / median("noop-default", "cpu"), 1.2, False
        )
    )
    line(
        "  (against the no-op with the same settings)",
        f"{ours_cpu / median('noop-tuned', 'cpu'):.2f}",
    )
    rss = median("jobarchive", "peak_rss") / median("noop-default", "peak_rss")
    met.append(ratio("peak RSS jobarchive / default no-op", rss, 1.25, False))
    return met


async def run(
    databases: Databases, line: Any, ratio: Any, args: Any, server: int | None = None
) -> list[bool]:
    """All operators, the same clusters and load; prints figures and returns targets met."""
    met: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
        workdir = pathlib.Path(tmp)
        for pods in args.catch_up_sizes:
            print(
                f"End to end: catch up with 1 job, {pods:,} pods, {pods:,} Events, "
                f"{args.runs} runs each: median (range)"
            )
            met += report(
                await catch_up_runs(databases, workdir, pods, args.runs, server), line, ratio
            )
        rate, seconds = args.rate, args.seconds
        print(f"End to end: {rate} pods/s for {seconds} s, lag p50 / p99 in s, {args.runs} runs")
        noop_lags, ours_lags = [], []
        for turn in range(args.runs):
            directory = workdir / f"lag-{turn}"
            (directory / "noop").mkdir(parents=True)
            (directory / "ours").mkdir()
            noop_lags.append(await noop_lag(directory / "noop", rate, seconds))
            url = databases.create(f"jobarchive_bench_lag_{turn}")
            ours_lags.append(await jobarchive_lag(directory / "ours", url, rate, seconds))
    for label, lags in (("no-op, defaults", noop_lags), ("jobarchive", ours_lags)):
        p50s, p99s = [p50 for p50, _ in lags], [p99 for _, p99 in lags]
        line(f"{label}: lag p50 / p99", f"{spread(p50s, '.3f')} / {spread(p99s, '.3f')}")
    met.append(
        ratio(
            "jobarchive lag p99 (median), s", statistics.median(p for _, p in ours_lags), 1.0, False
        )
    )
    return met
