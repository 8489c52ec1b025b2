"""Memory: catching up pods and Events written as a kubelet and the controllers write
them (``testbed.kubelet``: managedFields, the whole status, 6 to 53 kB of JSON a pod),
by jobarchive beside Kopf's no-op operator, on the same emulated cluster in the same run.

Per size (``--memory-sizes``; ``--large`` adds 100,000): one emulated cluster
(``testbed.fast_emulator``) holds that many pods over ``NAMESPACES_FILLED`` namespaces, a
PyTorchJob per ``PODS_PER_JOB`` of them and an Event about each pod. It is caught up from
scratch by, in turn: Kopf's no-op with its defaults (one LIST per kind, unpaged; left
out above ``UNPAGED_UP_TO`` pods), the no-op with ``settings.watching.chunk_size`` (the
LIST paged, as jobarchive does), jobarchive
watching every namespace into a fresh database, and jobarchive as a shard given half of
the namespaces. Per run: the time until every object is seen (no-op) or committed
(jobarchive), the operator's CPU seconds, its peak RSS (VmHWM) and its RSS ``SETTLE``
seconds after the catch-up (steady), each also per 1,000 objects in its scope; for
jobarchive, the peak its start-up predicted (its log line) beside the one measured. With
two sizes or more, the growth between the smallest and the largest, per 1,000 objects:
the slope of the memory model (ARCHITECTURE.md, decision 38).
"""

import asyncio
import dataclasses
import pathlib
import re
import tempfile
import time
from typing import Any

from bench import data
from bench.e2e_bench import MIB, NOOP, cpu_seconds, launch, total
from jobarchive.bindings import LIST_CHUNK_SIZE
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from testbed.cluster import EVENTS, NAMESPACES, PODS, Cluster, resource_of
from testbed.fast_emulator import fast_cluster
from testbed.kubelet import size_note
from testbed.mariadb import Databases
from testbed.operator import OperatorProcess

NAMESPACES_FILLED = 10
PODS_PER_JOB = 100
# Seconds after the catch-up before the steady RSS is read: Kopf's workers have exited
# (0.05 s idle for jobarchive, 5 s at Kopf's default) and the writer is idle.
SETTLE = 10.0
WITHIN = 3600.0
CHUNK_SIZE = LIST_CHUNK_SIZE
# Above this many pods the unpaged no-op is left out: it holds every listed body at once
# (about 49 MiB per 1,000 objects at 20,000), more than this shared machine should give.
UNPAGED_UP_TO = 20_000
# How far a start-up prediction may be from the peak measured: a tenth under, half over.
CLOSE = (0.9, 1.5)
UNPAGED = "no-op, Kopf's defaults"
PREDICTED = re.compile(r"catch-up peak predicted at ([\d,]+) MiB")
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")


@dataclasses.dataclass
class Run:
    """One operator's catch-up of its scope."""

    label: str
    objects: int
    seconds: float = 0.0
    cpu: float = 0.0
    peak: int = 0
    steady: int = 0
    predicted: int | None = None

    def per_thousand(self, value: float) -> float:
        return 1000 * value / self.objects


@dataclasses.dataclass
class Plan:
    """What the cluster holds, per namespace (its jobs, pods and Events), and the
    bodies' sizes."""

    objects: dict[str, int] = dataclasses.field(default_factory=dict)
    sizes: str = ""

    def share(self, namespaces: list[str]) -> int:
        return sum(self.objects[ns] for ns in namespaces)


def fill(cluster: Cluster, pods: int) -> Plan:
    """Namespaces, a job per ``PODS_PER_JOB`` pods, kubelet-written pods and an Event
    each, straight into the store, round-robin over the namespaces."""
    plan = Plan()
    store = cluster.emulator.objects
    names = [f"memory-{index:02d}" for index in range(NAMESPACES_FILLED)]
    for name in names:
        meta = {"name": name, "uid": f"ns-{name}", "resourceVersion": "1"}
        store[NAMESPACES.key, None, name] = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": meta,
        }
        plan.objects[name] = 0
    sample: list[Any] = []
    job: dict[str, Any] = {}
    for index in range(pods):
        namespace = names[(index // PODS_PER_JOB) % len(names)]
        if index % PODS_PER_JOB == 0:
            job = data.job_object(index // PODS_PER_JOB, namespace)
            store[PYTORCHJOBS.key, namespace, job["metadata"]["name"]] = job
            plan.objects[namespace] += 1
        pod = data.kubelet_pod(job, index)
        store[PODS.key, namespace, pod["metadata"]["name"]] = pod
        event = data.kubelet_event(pod, index)
        store[EVENTS.key, namespace, event["metadata"]["name"]] = event
        plan.objects[namespace] += 2
        if index < 1000:
            sample += [pod, event]
    if sample:
        plan.sizes = f"pods {size_note(sample[::2])}, Events {size_note(sample[1::2])}"
    return plan


async def finish(run: Run, process: OperatorProcess, started: float) -> Run:
    """The figures once caught up: time, CPU, peak; then the steady RSS; then stop."""
    run.seconds = time.perf_counter() - started
    run.cpu = cpu_seconds(process.process.pid if process.process else None)
    await asyncio.sleep(SETTLE)
    run.peak, run.steady = process.peak_rss(), process.rss()
    found = PREDICTED.search(process.log())
    run.predicted = int(found[1].replace(",", "")) * MIB if found else None
    await process.stop()
    return run


async def noop(
    cluster: Cluster, workdir: pathlib.Path, label: str, objects: int, chunk: int | None
) -> Run:
    env: dict[str, str | None] = {
        "NOOP_EXPECT": str(objects),
        "NOOP_SETTINGS": "default",
        "NOOP_CHUNK_SIZE": str(chunk) if chunk else None,
        "JOBARCHIVE_DB_URL": None,
    }
    started = time.perf_counter()
    workdir.mkdir(parents=True)
    process = await launch(cluster, workdir, env, NOOP)
    deadline = time.monotonic() + WITHIN
    while "caught up" not in process.log():
        if not process.running or time.monotonic() > deadline:
            raise AssertionError(f"the no-op did not catch up:\n{process.log()[-3000:]}")
        await asyncio.sleep(0.05)
    return await finish(Run(label, objects), process, started)


async def jobarchive(
    cluster: Cluster,
    workdir: pathlib.Path,
    url: str,
    label: str,
    objects: int,
    namespaces: list[str] | None,
) -> Run:
    await db.open_database(url, encryption=DbTls())
    try:
        started = time.perf_counter()
        args = [f"--namespace={ns}" for ns in namespaces or ()]
        workdir.mkdir(parents=True)
        process = await launch(cluster, workdir, {"JOBARCHIVE_DB_URL": url}, None, *args)
        while (count := await total()) < objects:
            if not process.running or time.perf_counter() - started > WITHIN:
                raise AssertionError(f"{count:,} of {objects:,} rows:\n{process.log()[-3000:]}")
            # COUNT(*) scans: coarsely, lest it take the CPU of the operator measured.
            await asyncio.sleep(0.1 if count > 0.97 * objects else 1.0)
        return await finish(Run(label, objects), process, started)
    finally:
        await db.close_database()


async def size(databases: Databases, workdir: pathlib.Path, pods: int) -> tuple[Plan, list[Run]]:
    """Every operator's catch-up of one cluster of ``pods`` pods and as many Events."""
    async with fast_cluster() as cluster:
        plan = fill(cluster, pods)
        names = sorted(plan.objects)
        half = names[: len(names) // 2]
        every = plan.share(names)
        runs = [
            await noop(cluster, workdir / "noop", "no-op, Kopf's defaults", every, None),
            await noop(
                cluster,
                workdir / "noop-chunked",
                f"no-op, chunk_size={CHUNK_SIZE}",
                every,
                CHUNK_SIZE,
            ),
        ]
        url = databases.create(f"jobarchive_bench_memory_{pods}")
        runs.append(await jobarchive(cluster, workdir / "one", url, "jobarchive", every, None))
        url = databases.create(f"jobarchive_bench_memory_{pods}_shard")
        label = f"jobarchive, a shard of {len(half)} namespaces"
        runs.append(
            await jobarchive(cluster, workdir / "shard", url, label, plan.share(half), half)
        )
    return plan, runs


def report(pods: int, plan: Plan, runs: list[Run], line: Any) -> None:
    print(f"Memory: catch up {pods:,} kubelet-written pods and {pods:,} Events ({plan.sizes})")
    for run in runs:
        line(
            f"{run.label}: s / CPU s",
            f"{run.seconds:.1f} / {run.cpu:.1f}",
            f"{run.objects:,} objects, CPU {run.per_thousand(run.cpu):.2f} s/1,000",
        )
        line(
            "  peak / steady RSS MiB",
            f"{run.peak / MIB:,.0f} / {run.steady / MIB:,.0f}",
            f"per 1,000 objects {run.per_thousand(run.peak / MIB):.1f} / "
            f"{run.per_thousand(run.steady / MIB):.1f}",
        )
        if run.predicted is not None:
            line(
                "  predicted at start / measured peak",
                f"{run.predicted / MIB:,.0f} / {run.peak / MIB:,.0f}",
                f"{run.predicted / run.peak:.2f}x",
            )
    by = {run.label: run for run in runs}
    ours, paged = by["jobarchive"], by[f"no-op, chunk_size={CHUNK_SIZE}"]
    line("peak jobarchive / paged no-op", f"{ours.peak / paged.peak:.2f}")
    if UNPAGED in by:
        line("peak jobarchive / Kopf's default no-op", f"{ours.peak / by[UNPAGED].peak:.2f}")
        line("peak paged no-op / Kopf's default no-op", f"{paged.peak / by[UNPAGED].peak:.2f}")
    else:
        line(UNPAGED, "left out", f"above {UNPAGED_UP_TO:,} pods (UNPAGED_UP_TO)")


def slopes(results: list[tuple[int, list[Run]]], line: Any) -> None:
    """Growth per 1,000 objects between the smallest and the largest size."""
    (_, small), (_, large) = results[0], results[-1]
    print(
        f"Memory: growth from {results[0][0]:,} to {results[-1][0]:,} pods, MiB per 1,000 objects"
    )
    before_by = {run.label: run for run in small}
    for after in large:
        before = before_by.get(after.label)
        if before is None:
            continue
        objects = after.objects - before.objects
        line(
            f"{after.label}: peak / steady",
            f"{1000 * (after.peak - before.peak) / MIB / objects:.1f} / "
            f"{1000 * (after.steady - before.steady) / MIB / objects:.1f}",
        )


async def run(databases: Databases, line: Any, args: Any) -> bool:
    """Every size; prints the figures; whether every prediction was within ``CLOSE``
    of its peak (below it by at most a tenth: the warning must not come too late)."""
    results: list[tuple[int, list[Run]]] = []
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-memory-") as tmp:
        for pods in args.memory_sizes:
            plan, runs = await size(databases, pathlib.Path(tmp) / str(pods), pods)
            report(pods, plan, runs, line)
            results.append((pods, runs))
    if len(results) > 1:
        slopes(results, line)
    predicted = [r for _, runs in results for r in runs if r.predicted is not None]
    return all(CLOSE[0] <= r.predicted / r.peak <= CLOSE[1] for r in predicted if r.predicted)
