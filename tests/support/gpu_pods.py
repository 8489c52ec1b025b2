"""Pods of a recorded job whose GPUs and containers the metrics bed's exporters report,
for the efficiency tests end to end: their series served, their run on the emulated
cluster between scrapes, and their summary waited for."""

import asyncio
import datetime
import time
import uuid
from collections.abc import Sequence
from typing import Any

from jobarchive.core.times import rfc3339
from jobarchive.storage.summaries import Summary
from testbed import objects as o
from testbed.cluster import PODS, Cluster
from testbed.exporter import DCGM, Gpu, Pod
from testbed.operator import OperatorProcess
from tests.support.metrics_bed import MetricsBed
from tests.support.waiting import eventually

GIB = 2**30
RESOURCES = {
    "requests": {"cpu": "2", "nvidia.com/gpu": "4"},
    "limits": {"memory": "8Gi", "nvidia.com/gpu": "4"},
}


def prometheus_env(url: str) -> dict[str, str]:
    """An operator's settings to summarise pods from the Prometheus at ``url`` a second
    after they end, its exporters scraped every second."""
    return {
        "JOBARCHIVE_PROMETHEUS_URL": url,
        "JOBARCHIVE_PROMETHEUS_DELAY": "1",
        "JOBARCHIVE_PROMETHEUS_SCRAPE_INTERVAL": "1",
    }


def now() -> datetime.datetime:
    """Now, to the second (a pod's times are whole seconds)."""
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


def status(start: datetime.datetime, end: datetime.datetime | None) -> dict[str, Any]:
    """A pod's status: running since ``start``; with ``end``, succeeded then."""
    running = {"startedAt": rfc3339(start)}
    state = (
        {"running": running}
        if end is None
        else {
            "terminated": {
                **running,
                "exitCode": 0,
                "reason": "Completed",
                "finishedAt": rfc3339(end),
            }
        }
    )
    return {
        "phase": "Running" if end is None else "Succeeded",
        "startTime": rfc3339(start),
        "hostIP": "10.0.0.12",
        "podIP": "172.16.0.12",
        "containerStatuses": [
            {
                "name": "pytorch",
                "image": "img",
                "ready": end is None,
                "restartCount": 0,
                "started": end is None,
                "state": state,
            }
        ],
    }


class Worker:
    """A pod of the job whose four GPUs and container the exporters report."""

    def __init__(self, bed: MetricsBed, job: dict[str, Any], index: int) -> None:
        self.bed = bed
        self.body = o.kubeflow_pod(job, "pytorchReplicaSpecs", "Worker", index)
        self.body["spec"]["containers"][0]["resources"] = RESOURCES
        self.name = self.body["metadata"]["name"]
        self.gpus = [Gpu(i, f"GPU-{uuid.uuid4()}") for i in range(4)]
        self.namespace = self.body["metadata"]["namespace"]
        self.cadvisor = Pod(self.namespace, self.name, str(uuid.uuid4()), containers=("pytorch",))

    def serve(self, active: list[float], cpu: float, energy: float) -> None:
        """Each GPU's activity (0: never used) and memory, its energy and CPU counters at
        their ``cpu`` and ``energy`` values, the container's working set, and the pod's
        own and pause series the figures must leave out."""
        for gpu, activity in zip(self.gpus, active, strict=True):
            labels = gpu.labels(self.cadvisor, "pytorch")
            self.bed.dcgm.set("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels, activity)
            self.bed.dcgm.set("DCGM_FI_DEV_FB_USED", labels, 40_000 * activity)
            self.bed.dcgm.set("DCGM_FI_DEV_FB_FREE", labels, 80_000 - 40_000 * activity)
            joules = energy if activity else energy / 5
            self.bed.dcgm.set("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", labels, joules * 1000)
        container = self.cadvisor.container_labels("pytorch")
        self.bed.cadvisor.set("container_cpu_usage_seconds_total", container, cpu)
        self.bed.cadvisor.set("container_memory_working_set_bytes", container, 2 * GIB)
        for other in (self.cadvisor.pod_labels(), self.cadvisor.pause_labels()):
            self.bed.cadvisor.set("container_memory_working_set_bytes", other, 9 * GIB)
            self.bed.cadvisor.set("container_cpu_usage_seconds_total", other, cpu * 10)

    def vanish(self) -> None:
        """Its GPUs' series served no more, as when dcgm-exporter loses the pod's
        attribution: Prometheus marks them stale at the next scrape."""
        for gpu in self.gpus:
            for family in DCGM:
                self.bed.dcgm.remove(family, gpu.labels(self.cadvisor, "pytorch"))


HALF_IDLE = (0.8, 0.8, 0.0, 0.0)


async def run_worker(
    cluster: Cluster, bed: MetricsBed, worker: Worker, active: Sequence[float] = HALF_IDLE
) -> float:
    """The worker's run, its GPUs at ``active``: its series served before it starts, its
    CPU and energy counters stepped up (by 6 CPU-seconds, 5 kJ a busy GPU and 1 kJ an
    idle one) between scrapes within it, then its end; returns its run time in seconds."""
    worker.serve(list(active), cpu=100, energy=1_000_000)
    await asyncio.to_thread(bed.scraped)
    start = now()
    await cluster.create(PODS, {**worker.body, "status": status(start, None)})
    for _ in range(2):
        await asyncio.to_thread(bed.scraped)
    worker.serve(list(active), cpu=106, energy=1_005_000)
    for _ in range(2):
        await asyncio.to_thread(bed.scraped)
    return await finish(cluster, bed, worker, start)


async def finish(
    cluster: Cluster, bed: MetricsBed, worker: Worker, start: datetime.datetime
) -> float:
    """The worker's end, the next whole second, once a scrape after it is stored;
    returns its run time in seconds."""
    end = now() + datetime.timedelta(seconds=1)
    await asyncio.sleep(max(0.0, end.timestamp() - time.time()))
    await asyncio.to_thread(bed.scraped)
    await cluster.patch(PODS, worker.namespace, worker.name, {"status": status(start, end)})
    return (end - start).total_seconds()


async def summary_of(name: str) -> Summary:
    """The pod's summary once written."""
    return await eventually(lambda: Summary.filter(pod_name=name).first(), within=120)


async def logged(operator: OperatorProcess, text: str) -> bool | None:
    """Whether the operator's log holds ``text`` (None while not: ``eventually``'s)."""
    return text in operator.log() or None
