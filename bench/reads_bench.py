"""Reads never hurt writes: the real operator records pods while its own API is flooded
with the most expensive reads it accepts.

- An archive of N jobs with M pods and Events each (``testbed.bulk``) is the database
  of a real operator (``kopf run``) that serves the API in-process
  (``JOBARCHIVE_API_PORT``), reading through a read-only account of its own
  (``JOBARCHIVE_READ_DB_URL``): that account names the API's sessions in
  ``information_schema.PROCESSLIST``, whatever they run, orphans of closed connections
  included.
- Bursts of pods of a job are streamed to the operator's pod watch at once (a
  ``testbed.cluster.Feed``), and the time until all of a burst's rows are committed
  is measured: a few bursts with the API idle, then as many while clients
  (``bench/flood.py``, a process of its own) keep requests in flight without pause:
  Events of a namespace by type, every Event of a kind none has since a date, names
  containing what none contains in a namespace and over every job, statistics over
  every job, and jobs' details. The medians are compared.
- During the flood, PROCESSLIST is sampled every 20 ms for the read account's
  statements not sleeping: the peak is compared with the read pool's size.

Twice, when the benchmark started the database server itself: first with the server
on half the machine's CPUs and the operator (with the emulated API) on the other half,
as when the database runs on a machine of its own; then with every process sharing
every CPU, where the flood's scans compete with the operator for CPU. The target
holds for both: the pool keeps reads off the writer's connections, and the gate
(``reading.gate``) lets one query run at a time while the operator records.
"""

import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Callable
from typing import Any

import aiohttp

from bench import data
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod
from testbed import bulk
from testbed.cluster import PODS, Cluster, Feed, emulated_cluster, resource_of
from testbed.mariadb import Databases, read_only_account
from testbed.operator import REPO, OperatorProcess, write_kubeconfig
from testbed.ports import free_port

PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")
# Every Event in the archive is about a pod: asked for a kind none has, the filter
# reads them all; no name contains "zzz".
EXPENSIVE = (
    "/events?namespace=team-{team}&type=Warning",
    "/events?since=2025-01-01&kind=TFJob",
    "/jobs?namespace=team-{team}&name_contains=zzz",
    "/jobs?created_since=2025-01-01&name_contains=zzz",
    "/stats?by=owner",
    "/stats?by=namespace",
    "/jobs/{uid}",
)


@dataclasses.dataclass
class Placement:
    """Which CPUs the database server (and the flood, its clients) and the operator
    (and the emulated API) run on; None: wherever the kernel puts them."""

    name: str
    database: set[int] | None = None
    operator: set[int] | None = None


@dataclasses.dataclass
class Figures:
    """What one placement measured."""

    idle: list[float] = dataclasses.field(default_factory=list)
    flooded: list[float] = dataclasses.field(default_factory=list)
    peak: int = 0
    answers: dict[str, int] = dataclasses.field(default_factory=dict)


def placements(server_pid: int | None) -> list[Placement]:
    """Apart when the server is ours to place and there are CPUs to split; then shared."""
    cpus = sorted(os.sched_getaffinity(0))
    shared = Placement("sharing every CPU")
    if server_pid is None or len(cpus) < 2:
        return [shared]
    half = len(cpus) // 2
    apart = Placement(
        f"the database on CPU {_cpus(cpus[:half])}, the operator on CPU {_cpus(cpus[half:])}",
        set(cpus[:half]),
        set(cpus[half:]),
    )
    return [apart, shared]


def _cpus(cpus: list[int]) -> str:
    return str(cpus[0]) if len(cpus) == 1 else f"{cpus[0]}-{cpus[-1]}"


def pin(pid: int, cpus: set[int] | None) -> None:
    """Keep every thread of a process on ``cpus`` (threads started later inherit it)."""
    if cpus is None:
        return
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(task.name), cpus)


async def flood_paths(teams: int = 60) -> list[str]:
    """The flood's requests, each of its templates for many namespaces and jobs."""
    uids = [str(uid) for uid in await Job.all().limit(teams).values_list("job_id", flat=True)]
    return [
        template.format(team=index, uid=uids[index % len(uids)])
        for template in EXPENSIVE
        for index in range(teams)
    ]


async def burst(feed: Feed, job: dict[str, Any], pods: int, within: float = 300.0) -> float:
    """Stream ``pods`` pods of a job at once; seconds until all their rows are committed
    (polled every 20 ms)."""
    started = time.perf_counter()
    for index in range(pods):
        feed.add(data.pod_object(job, index))
    while await Pod.filter(job_id=job["metadata"]["uid"]).count() < pods:
        if time.perf_counter() - started > within:
            raise AssertionError(f"{pods} pods were not recorded in {within} s")
        await asyncio.sleep(0.02)
    return time.perf_counter() - started


async def sample(user: str, until: asyncio.Event, figures: Figures) -> None:
    """Note the most statements of ``user`` running at once, every 20 ms."""
    while not until.is_set():
        _, rows = await db.connection().execute_query(
            "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST "
            "WHERE USER = %s AND COMMAND NOT IN ('Sleep', 'Daemon')",
            [user],
        )
        figures.peak = max(figures.peak, int(rows[0]["n"]))
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def flood(base: str, clients: int, workdir: pathlib.Path, figures: Figures) -> Any:
    """``bench/flood.py`` running for the block; its answers counted into ``figures``."""
    listed = workdir / "paths.txt"
    listed.write_text("\n".join(await flood_paths()))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.flood",
        base,
        str(listed),
        str(clients),
        cwd=REPO,
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        yield process
    finally:
        process.terminate()
        out, _ = await process.communicate()
        figures.answers = json.loads(out.decode() or "{}")


async def api_serving(base: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    async with aiohttp.ClientSession() as session:
        while True:
            with contextlib.suppress(aiohttp.ClientConnectionError):
                async with session.get(f"{base}/openapi.json") as response:
                    if response.status == 200:
                        return
            if time.monotonic() > deadline:
                raise AssertionError(f"the operator's API did not answer in {within} s")
            await asyncio.sleep(0.2)


async def measure(
    urls: tuple[str, str], server_pid: int | None, place: Placement, namespace: str, args: Any
) -> Figures:
    """The operator on a cluster of jobs (in ``namespace``, new to the archive) whose pods
    come in bursts, idle then flooded."""
    url, read_url = urls
    figures = Figures()
    rounds, pods = args.reads_rounds, args.reads_record
    jobs = [data.job_object(index, namespace=namespace) for index in range(1 + 2 * rounds)]
    env: dict[str, str | None] = {
        "JOBARCHIVE_DB_URL": url,
        "JOBARCHIVE_READ_DB_URL": read_url,
        "JOBARCHIVE_API_AUTH": "none",
        "JOBARCHIVE_API_HOST": "127.0.0.1",
        "JOBARCHIVE_API_CONCURRENCY": str(args.reads_concurrency),
        # The archive's jobs are in no cluster: a reconciliation would mark them all
        # gone, writing while the writer is measured.
        "JOBARCHIVE_RESYNC_INTERVAL": "0",
    }
    everywhere = os.sched_getaffinity(0)
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
        async with emulated_cluster() as cluster:
            for job in jobs:
                meta = job["metadata"]
                cluster.emulator.objects[PYTORCHJOBS.key, namespace, meta["name"]] = job
            feed = Feed(cluster, PODS)
            port = free_port()
            base = f"http://127.0.0.1:{port}/api/v1"
            env["JOBARCHIVE_API_PORT"] = str(port)
            process = await launch(cluster, pathlib.Path(tmp), env)
            assert process.process is not None
            if server_pid is not None:
                pin(server_pid, place.database)
            pin(process.process.pid, place.operator)
            pin(os.getpid(), place.operator)
            try:
                while await Job.filter(namespace=namespace).count() < len(jobs):
                    await asyncio.sleep(0.1)
                await api_serving(base)
                await burst(feed, jobs[0], min(pods, 100))  # the operator's paths warmed up
                for job in jobs[1 : 1 + rounds]:
                    figures.idle.append(await burst(feed, job, pods))
                async with flood(base, args.reads_clients, pathlib.Path(tmp), figures) as clients:
                    pin(clients.pid, place.database)
                    done = asyncio.Event()
                    reader = urllib.parse.urlsplit(read_url).username or ""
                    sampler = asyncio.create_task(sample(reader, done, figures))
                    await asyncio.sleep(2.0)  # every client in flight
                    for job in jobs[1 + rounds :]:
                        figures.flooded.append(await burst(feed, job, pods))
                    done.set()
                    await sampler
            finally:
                await process.stop()
                pin(os.getpid(), everywhere)
                if server_pid is not None:
                    pin(server_pid, everywhere)
    return figures


async def launch(
    cluster: Cluster, workdir: pathlib.Path, env: dict[str, str | None]
) -> OperatorProcess:
    kubeconfig = workdir / "kubeconfig"
    write_kubeconfig(kubeconfig, cluster.url)
    process = OperatorProcess(workdir, kubeconfig, env)
    await process.start()
    return process


async def run(
    databases: Databases,
    server_pid: int | None,
    line: Callable[..., None],
    ratio: Callable[..., bool],
    args: Any,
) -> list[bool]:
    """Fill an archive, then record bursts of pods beside an idle and a flooded API, in
    each placement; prints the figures and returns the targets met."""
    jobs, per_job = args.reads_jobs, args.reads_pods
    print(
        f"Reads: {jobs:,} jobs, {jobs * per_job:,} pods and Events archived; "
        f"{args.reads_rounds} bursts of {args.reads_record} pods with the API idle, as many "
        f"while {args.reads_clients} clients flood it ({args.reads_concurrency} read connections)"
    )
    url = databases.create("jobarchive_bench_reads")
    await db.open_database(url, encryption=DbTls())
    results: list[bool] = []
    try:
        started = time.perf_counter()
        await bulk.fill(jobs, per_job)
        await db.connection().execute_script("ANALYZE TABLE job_info, replica_info, event_info")
        print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
        with read_only_account(url) as read_url:
            for index, place in enumerate(placements(server_pid)):
                urls = (url, read_url)
                figures = await measure(urls, server_pid, place, f"reads-{index}", args)
                results += report(place, figures, args, line, ratio)
    finally:
        await db.close_database()
    return results


def report(
    place: Placement,
    figures: Figures,
    args: Any,
    line: Callable[..., None],
    ratio: Callable[..., bool],
) -> list[bool]:
    """Print one placement's figures; whether recording kept its pace and the API's
    statements kept within the pool."""
    idle, flooded = statistics.median(figures.idle), statistics.median(figures.flooded)
    print(f"  {place.name}:")
    line(f"{args.reads_record} pods recorded, API idle / flooded, s", f"{idle:.2f} / {flooded:.2f}")
    answers = figures.answers
    shown = ("200", "503", "504")
    other = sum(answers.values()) - sum(answers.get(status, 0) for status in shown)
    counts = " / ".join(str(answers.get(status, 0)) for status in shown)
    line("flood answers 200 / 503 / 504 / other", f"{counts} / {other}")
    results = [ratio("flooded/idle", flooded / idle, 1.5, False)]
    pool = args.reads_concurrency
    results.append(ratio("API statements running at once, peak", figures.peak, pool, False))
    return results
