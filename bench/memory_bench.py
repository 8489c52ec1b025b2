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
jobarchive, the peak its start-up predicted (its log line) beside the one measured. A run
that ends before catching up (its process exited, a watch Kopf ended, say by a page
answered 410 after the emulator's ``HISTORY``, or ``WITHIN`` passed) is a figure too:
how and when it ended, the objects seen (the no-op's progress lines) or committed by then,
its CPU seconds and peak RSS read at that moment; the ratios say which side ended early. With
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
PAGED = f"no-op, chunk_size={CHUNK_SIZE}"
# Seconds between readings of a running operator's CPU and peak RSS.
SAMPLE = 1.0
# Seconds a stopped operator is given to exit before it is killed: Kopf's stop after a
# watch it ended can hang for minutes (ARCHITECTURE.md, decision 38).
STOP_GRACE = 30.0
# jobarchive's line for a watch Kopf ended (``bindings.EndedWatches``; the no-op logs it too).
ENDED = re.compile(r"Kopf's watch of (?P<watch>.+?) ended \((?P<cause>.*?)\): ")
SEEN = re.compile(r"seen: (\d+) objects")
PREDICTED = re.compile(r"catch-up peak predicted at ([\d,]+) MiB")
PYTORCHJOBS = resource_of("kubeflow.org", "PyTorchJob")


@dataclasses.dataclass
class Run:
    """One operator's catch-up of its scope, or how far it got when it ended early."""

    label: str
    objects: int
    seconds: float = 0.0
    cpu: float = 0.0
    peak: int = 0
    steady: int | None = None
    predicted: int | None = None
    # How the run ended before catching up (None: it caught up), and how many of its
    # objects were seen (no-op, by its last progress line) or committed (jobarchive).
    ended: str | None = None
    reached: int = 0
    counted: str = "seen"

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


class Watch:
    """An operator's run as it goes: its log read on from where it was last read, its
    CPU seconds and peak RSS read every ``SAMPLE`` seconds, so that a process that exits
    by itself leaves the figures last read."""

    def __init__(self, process: OperatorProcess, run: Run, started: float) -> None:
        self.process, self.run, self.started = process, run, started
        self.offset = 0
        self.caught_up = False
        self.read_at = 0.0

    def read(self) -> None:
        """The process's CPU seconds and peak RSS now, if it still runs."""
        if self.process.process is None:
            return
        try:
            cpu, peak = cpu_seconds(self.process.process.pid), self.process.peak_rss()
        except (OSError, StopIteration):
            # Gone (or a zombie, with no memory) since it was last read: those figures stand.
            return
        self.run.cpu, self.run.peak = cpu, peak
        self.read_at = time.perf_counter()

    def poll(self) -> str | None:
        """How the run ended before catching up; None while it goes on or once caught up."""
        exited = not self.process.running
        text = self._news()
        for count in SEEN.findall(text):
            self.run.reached = int(count)
        self.caught_up = self.caught_up or "caught up" in text
        if time.perf_counter() - self.read_at >= SAMPLE:
            self.read()
        if self.caught_up:
            return None
        found = ENDED.search(text)
        if found:
            return f"watch of {found['watch']} ended ({found['cause']})"
        if exited:
            code = self.process.process.returncode if self.process.process else None
            return f"its process exited (code {code})"
        if time.perf_counter() - self.started > WITHIN:
            return f"not caught up within {WITHIN:,.0f} s"
        return None

    def _news(self) -> str:
        """The log's whole lines written since the last call."""
        try:
            with self.process.log_path.open("rb") as log:
                log.seek(self.offset)
                chunk = log.read()
        except FileNotFoundError:
            return ""
        whole = chunk[: chunk.rfind(b"\n") + 1]
        self.offset += len(whole)
        return whole.decode(errors="replace")


async def finish(watch: Watch, ended: str | None) -> Run:
    """The figures at the end of a run: time, CPU and peak; once caught up, the steady
    RSS ``SETTLE`` seconds later. Then the process stopped, killed if its stop hangs."""
    run, process = watch.run, watch.process
    run.seconds = time.perf_counter() - watch.started
    watch.read()
    run.ended = ended
    if ended is None:
        run.reached = run.objects
        await asyncio.sleep(SETTLE)
        run.peak, run.steady = process.peak_rss(), process.rss()
    found = PREDICTED.search(process.log())
    run.predicted = int(found[1].replace(",", "")) * MIB if found else None
    await process.stop(STOP_GRACE)
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
    watch = Watch(process, Run(label, objects), started)
    while (ended := watch.poll()) is None and not watch.caught_up:
        await asyncio.sleep(0.05)
    return await finish(watch, ended)


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
        watch = Watch(process, Run(label, objects, counted="committed"), started)
        while (count := await total()) < objects:
            if (ended := watch.poll()) is not None:
                watch.run.reached = count
                return await finish(watch, ended)
            # COUNT(*) scans: coarsely, lest it take the CPU of the operator measured.
            await asyncio.sleep(0.1 if count > 0.97 * objects else 1.0)
        return await finish(watch, None)
    finally:
        await db.close_database()


async def size(databases: Databases, workdir: pathlib.Path, pods: int) -> tuple[Plan, list[Run]]:
    """Every operator's catch-up of one cluster of ``pods`` pods and as many Events."""
    async with fast_cluster() as cluster:
        plan = fill(cluster, pods)
        names = sorted(plan.objects)
        half = names[: len(names) // 2]
        every = plan.share(names)
        runs = []
        if pods <= UNPAGED_UP_TO:
            runs.append(await noop(cluster, workdir / "noop", UNPAGED, every, None))
        runs.append(await noop(cluster, workdir / "noop-chunked", PAGED, every, CHUNK_SIZE))
        url = databases.create(f"jobarchive_bench_memory_{pods}")
        runs.append(await jobarchive(cluster, workdir / "one", url, "jobarchive", every, None))
        url = databases.create(f"jobarchive_bench_memory_{pods}_shard")
        label = f"jobarchive, a shard of {len(half)} namespaces"
        runs.append(
            await jobarchive(cluster, workdir / "shard", url, label, plan.share(half), half)
        )
    return plan, runs


def figures(run: Run, line: Any) -> None:
    """One run's lines: as measured once caught up, or at its end when it ended early."""
    if run.ended is not None:
        line(
            f"{run.label}: s / CPU s",
            f"{run.seconds:.1f} / {run.cpu:.1f}",
            f"ENDED EARLY after {run.seconds:.0f} s: {run.ended}",
        )
        whole = f"of {run.objects:,}"
        # The no-op says its count every 10,000 objects (bench/noop_operator.py, PROGRESS).
        note = f"{whole}, by its last progress line" if run.counted == "seen" else whole
        line(f"  objects {run.counted} by its end", f"{run.reached:,}", note)
        line("  peak RSS MiB at its end", f"{run.peak / MIB:,.0f}", "no steady RSS")
    else:
        steady = run.steady or 0
        line(
            f"{run.label}: s / CPU s",
            f"{run.seconds:.1f} / {run.cpu:.1f}",
            f"{run.objects:,} objects, CPU {run.per_thousand(run.cpu):.2f} s/1,000",
        )
        line(
            "  peak / steady RSS MiB",
            f"{run.peak / MIB:,.0f} / {steady / MIB:,.0f}",
            f"per 1,000 objects {run.per_thousand(run.peak / MIB):.1f} / "
            f"{run.per_thousand(steady / MIB):.1f}",
        )
    if run.predicted is not None and run.peak:
        ratio = f"{run.predicted / run.peak:.2f}x"
        line(
            "  predicted at start / measured peak",
            f"{run.predicted / MIB:,.0f} / {run.peak / MIB:,.0f}",
            f"{ratio} (ended early: not checked)" if run.ended else ratio,
        )


def compare(label: str, ours: Run, theirs: Run, line: Any) -> None:
    """The ratio of two runs' peaks, saying which of them ended early (their peak is the
    one at the end of their run), or why there is none."""
    if not ours.peak or not theirs.peak:
        unread = ours if not ours.peak else theirs
        line(label, "none", f"{unread.label} ended before its peak was read")
        return
    early = [
        f"{r.label} ended early: peak at the end of its run" for r in (ours, theirs) if r.ended
    ]
    line(label, f"{ours.peak / theirs.peak:.2f}", "; ".join(early))


def report(pods: int, plan: Plan, runs: list[Run], line: Any) -> None:
    """One size's figures: each run's, then the ratios of their peaks."""
    print(f"Memory: catch up {pods:,} kubelet-written pods and {pods:,} Events ({plan.sizes})")
    for run in runs:
        figures(run, line)
    by = {run.label: run for run in runs}
    ours, paged = by["jobarchive"], by[PAGED]
    compare("peak jobarchive / paged no-op", ours, paged, line)
    if UNPAGED in by:
        compare("peak jobarchive / Kopf's default no-op", ours, by[UNPAGED], line)
        compare("peak paged no-op / Kopf's default no-op", paged, by[UNPAGED], line)
    else:
        line(UNPAGED, "left out", f"above {UNPAGED_UP_TO:,} pods (UNPAGED_UP_TO)")


def slopes(results: list[tuple[int, list[Run]]], line: Any) -> None:
    """Growth per 1,000 objects between the smallest and the largest size, for the
    operators that caught up at both."""
    (_, small), (_, large) = results[0], results[-1]
    print(
        f"Memory: growth from {results[0][0]:,} to {results[-1][0]:,} pods, MiB per 1,000 objects"
    )
    before_by = {run.label: run for run in small}
    for after in large:
        before = before_by.get(after.label)
        if before is None:
            continue
        label = f"{after.label}: peak / steady"
        if before.steady is None or after.steady is None:
            line(label, "none", "ended early at one of the sizes")
            continue
        objects = after.objects - before.objects
        line(
            label,
            f"{1000 * (after.peak - before.peak) / MIB / objects:.1f} / "
            f"{1000 * (after.steady - before.steady) / MIB / objects:.1f}",
        )


def predictions_close(runs: list[Run]) -> bool:
    """Whether every prediction of a run that caught up was within ``CLOSE`` of its peak
    (below it by at most a tenth: the warning must not come too late). A run that ended
    early is a figure, not a failure: its peak is not the catch-up's."""
    checked = [(r.predicted, r.peak) for r in runs if r.ended is None and r.predicted]
    return all(CLOSE[0] <= predicted / peak <= CLOSE[1] for predicted, peak in checked if peak)


async def run(databases: Databases, line: Any, args: Any) -> bool:
    """Every size; prints the figures; whether the predictions were close
    (``predictions_close``)."""
    results: list[tuple[int, list[Run]]] = []
    with tempfile.TemporaryDirectory(prefix="jobarchive-bench-memory-") as tmp:
        for pods in args.memory_sizes:
            plan, runs = await size(databases, pathlib.Path(tmp) / str(pods), pods)
            report(pods, plan, runs, line)
            results.append((pods, runs))
    if len(results) > 1:
        slopes(results, line)
    return predictions_close([r for _, runs in results for r in runs])
