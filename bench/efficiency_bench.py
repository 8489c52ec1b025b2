"""Efficiency's cost (decision 45): a job of ``pods`` workers, one GPU each, that all
finished at once, recorded by the real operator on an emulated cluster, its figures in
a private Prometheus (``testbed.prometheus``) scraping an exporter of dcgm-exporter's
and cAdvisor's families (``testbed.exporter``).

Measured in one run, on the same machine: the operator's CPU seconds per object
recorded (each pod whole as its kubelet wrote it, and its Events) without Prometheus
(the baseline) and with it, its summaries included (each pod costs one query); how long
the job's summaries take at the default rate and concurrency, and so summaries a
second; and what the queries cost Prometheus, in its CPU seconds.
"""

import asyncio
import datetime
import os
import pathlib
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from bench import data
from jobarchive.config import DEFAULTS, DbTls
from jobarchive.core.times import rfc3339
from jobarchive.storage import database as db
from jobarchive.storage.models import Event as EventRow
from jobarchive.storage.models import Pod as PodRow
from jobarchive.storage.summaries import Summary
from testbed.cluster import EVENTS, PODS, Feed, emulated_cluster
from testbed.exporter import CADVISOR, DCGM, Exporter, Gpu, Pod
from testbed.mariadb import Databases
from testbed.mass_failure import PYTORCHJOBS, job_named
from testbed.operator import OperatorProcess, write_kubeconfig
from testbed.prometheus import PrometheusServer, Target

TARGET = 1.05
# Each pod's Events, as a pod's life leaves them (scheduled, pulled, created, started,
# killed): the objects recorded per pod, with the pod itself.
EVENTS_PER_POD = 5
# How long the pods ran: whole scrapes of the private Prometheus (one a second).
RUN = datetime.timedelta(seconds=20)
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """A process's CPU seconds so far, user and system."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def finished_pod(job: dict[str, Any], index: int, start: datetime.datetime) -> dict[str, Any]:
    """A worker of one GPU that ran ``RUN`` from ``start``, whole as its kubelet left it
    (``testbed.kubelet``: a few to tens of kB)."""
    pod: dict[str, Any] = data.kubelet_pod(job, index)
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
        "limits": {"memory": "4Gi", "nvidia.com/gpu": "1"},
    }
    status = pod["status"]
    status.update(phase="Succeeded", startTime=rfc3339(start))
    status["containerStatuses"][0].update(
        ready=False,
        started=False,
        state={
            "terminated": {
                "exitCode": 0,
                "reason": "Completed",
                "startedAt": rfc3339(start),
                "finishedAt": rfc3339(start + RUN),
            }
        },
    )
    return pod


def serve(dcgm: Exporter, cadvisor: Exporter, namespace: str, names: list[str]) -> None:
    """Each pod's GPU busy at 60% and its container's CPU and memory."""
    for name in names:
        pod = Pod(namespace, name, str(uuid.uuid4()), containers=("pytorch",))
        labels = Gpu(0, f"GPU-{uuid.uuid4()}").labels(pod, "pytorch")
        dcgm.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, 0.6)
        dcgm.set("DCGM_FI_DEV_FB_USED", labels, 30_000)
        dcgm.set("DCGM_FI_DEV_FB_FREE", labels, 50_000)
        dcgm.set("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, 1e9, per_second=250_000)
        container = pod.container_labels("pytorch")
        cadvisor.set("container_cpu_usage_seconds_total", container, 10, per_second=0.8)
        cadvisor.set("container_memory_working_set_bytes", container, 2**31)


async def _until(count: Callable[[], Any], wanted: int, within: float = 900.0) -> None:
    deadline = time.monotonic() + within
    while await count() < wanted:
        if time.monotonic() > deadline:
            raise AssertionError(f"{wanted} rows were not written in {within:g} s")
        await asyncio.sleep(0.1)


async def record(
    tmp: pathlib.Path, env: dict[str, str | None], name: str, pods: int, summaries: bool
) -> tuple[float, float]:
    """One operator recording a job of ``pods`` finished workers: its CPU seconds until
    every pod and Event (and, with ``summaries``, every summary) is written, and the
    seconds from the first pod fed to that."""
    async with emulated_cluster() as cluster:
        kubeconfig = tmp / f"{name}.kubeconfig"
        write_kubeconfig(kubeconfig, cluster.url)
        workdir = tmp / name
        workdir.mkdir()
        # Before the watches begin: the feeds serve their streams.
        feed, events = Feed(cluster, PODS), Feed(cluster, EVENTS)
        process = OperatorProcess(workdir, kubeconfig, env)
        await process.start()
        try:
            await cluster.wait_watching([PODS, EVENTS, PYTORCHJOBS])
            job = await job_named(cluster, name)
            uid = job["metadata"]["uid"]
            start = datetime.datetime.now(datetime.UTC).replace(microsecond=0) - RUN
            assert process.process is not None
            pid = process.process.pid
            before, fed = cpu_seconds(pid), time.monotonic()
            for index in range(pods):
                pod = feed.add(finished_pod(job, index, start))
                for event in range(EVENTS_PER_POD):
                    events.add(data.kubelet_event(pod, index * EVENTS_PER_POD + event))
            await _until(lambda: PodRow.filter(job_id=uid).count(), pods)
            await _until(lambda: EventRow.filter(job_id=uid).count(), pods * EVENTS_PER_POD)
            recorded = time.monotonic()
            if summaries:
                await _until(lambda: Summary.filter(job_id=uid).count(), pods)
            # From the first pod fed: the summaries begin with the first pods recorded.
            summarised = time.monotonic() - fed if summaries else recorded - fed
            return cpu_seconds(pid) - before, summarised
        finally:
            await process.stop()


async def run(
    databases: Databases, line: Callable[..., None], ratio: Callable[..., bool], args: Any
) -> list[bool]:
    """Both runs; their figures beside each other, and whether the ratio is met."""
    pods = args.efficiency_pods
    print(
        f"Efficiency: a job of {pods:,} one-GPU workers finished at once; Prometheus asked "
        f"{DEFAULTS.prometheus_rate} a second at most, {DEFAULTS.prometheus_concurrency} at once"
    )
    url = databases.create("jobarchive_bench_efficiency")
    await db.open_database(url, encryption=DbTls())
    dcgm, cadvisor = Exporter(DCGM), Exporter(CADVISOR)
    prometheus = PrometheusServer()
    prometheus.targets.update(
        {
            "dcgm-exporter": Target("dcgm-exporter", dcgm.address),
            "kubelet": Target("kubelet", cadvisor.address, honor_labels=True),
        }
    )
    try:
        serve(dcgm, cadvisor, "ml", [f"with-worker-{i}" for i in range(pods)])
        dcgm.start()
        cadvisor.start()
        prometheus.start()
        for job in ("dcgm-exporter", "kubelet"):
            prometheus.wait_scraped(job, time.time() + RUN.total_seconds())
        env: dict[str, str | None] = {"JOBARCHIVE_DB_URL": url}
        with tempfile.TemporaryDirectory(prefix="jobarchive-bench-") as tmp:
            alone, recorded_alone = await record(pathlib.Path(tmp), env, "without", pods, False)
            asked = {
                **env,
                "JOBARCHIVE_PROMETHEUS_URL": prometheus.url,
                "JOBARCHIVE_PROMETHEUS_DELAY": "1",
                "JOBARCHIVE_PROMETHEUS_SCRAPE_INTERVAL": "1",
            }
            prometheus_before = cpu_seconds(prometheus.pid)
            summarising, took = await record(pathlib.Path(tmp), asked, "with", pods, True)
            prometheus_cpu = cpu_seconds(prometheus.pid) - prometheus_before
    finally:
        prometheus.remove()
        dcgm.stop()
        cadvisor.stop()
        await db.close_database()
    objects = pods * (1 + EVENTS_PER_POD)
    line(
        "operator CPU ms per object, alone / summarised",
        f"{alone / objects * 1e3:.2f} / {summarising / objects * 1e3:.2f}",
        f"a pod and its {EVENTS_PER_POD} Events",
    )
    line(
        "the job recorded alone / summarised, s",
        f"{recorded_alone:.1f} / {took:.1f}",
        f"{pods / took:.1f} summaries a second, from its first pod",
    )
    line("Prometheus CPU ms per summary", f"{prometheus_cpu / pods * 1e3:.2f}")
    return [
        ratio("operator CPU per object, summarised / alone", summarising / alone, TARGET, False)
    ]
