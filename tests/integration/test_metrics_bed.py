"""The test bed's Prometheus and endpoints hold what the efficiency tests rely on: what a
test sets is what Prometheus stores, a counter's rise is its rate, a series that
vanishes is gone as it is from a real exporter, and a Prometheus stopped and started
again keeps what it stored."""

import time
import uuid

import pytest

from testbed.exporter import DCGM, Exporter, Gpu, Pod
from tests.support.metrics_bed import DCGM_JOB, KUBELET_JOB, MetricsBed

GPU = Gpu(1, "GPU-c4873a68-bfd2-8a3e-7776-061ea4b074bc")


def a_pod() -> Pod:
    return Pod("team-b", f"bed-{uuid.uuid4().hex[:8]}", str(uuid.uuid4()))


def values(bed: MetricsBed, promql: str) -> list[float]:
    return sorted(float(sample["value"][1]) for sample in bed.prometheus.query(promql))


def test_a_counters_steady_rise_is_its_rate(cluster_metrics: MetricsBed) -> None:
    pod = a_pod()
    # 250 W is 250,000 mJ a second; 1.5 cores are 1.5 CPU-seconds a second.
    cluster_metrics.dcgm.set(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", GPU.labels(pod), 9e9, per_second=250_000
    )
    labels = pod.container_labels("trainer")
    cluster_metrics.cadvisor.set("container_cpu_usage_seconds_total", labels, 100, per_second=1.5)
    for _ in range(4):
        cluster_metrics.scraped()
    energy = f'rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{pod="{pod.name}"}}[3s])'
    # The exporter's value is read when it answers, stamped when Prometheus asked: a
    # few milliseconds apart.
    assert values(cluster_metrics, energy) == [pytest.approx(250_000, rel=0.02)]
    # The kubelet's samples carry the time they were read at: the rate is exact.
    cpu = f'rate(container_cpu_usage_seconds_total{{pod="{pod.name}"}}[3s])'
    assert values(cluster_metrics, cpu) == [pytest.approx(1.5, rel=1e-6)]


def test_a_series_that_vanishes_is_gone_unless_it_was_timestamped(
    cluster_metrics: MetricsBed,
) -> None:
    pod = a_pod()
    cluster_metrics.dcgm.set("DCGM_FI_DEV_GPU_UTIL", GPU.labels(pod), 100)
    memory = pod.container_labels("trainer")
    cluster_metrics.cadvisor.set("container_memory_working_set_bytes", memory, 2**30)
    cluster_metrics.scraped()
    assert values(cluster_metrics, f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod.name}"}}') == [100]
    cluster_metrics.dcgm.remove("DCGM_FI_DEV_GPU_UTIL", dict(reversed(GPU.labels(pod).items())))
    cluster_metrics.cadvisor.remove("container_memory_working_set_bytes", memory)
    cluster_metrics.scraped()
    # A staleness marker ends the exporter's series at once...
    assert values(cluster_metrics, f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod.name}"}}') == []
    # ...but a timestamped one (the kubelet's) is answered for the lookback's 5 minutes.
    working_set = f'container_memory_working_set_bytes{{pod="{pod.name}"}}'
    assert values(cluster_metrics, working_set) == [2**30]


def test_a_restarted_prometheus_keeps_what_it_stored(cluster_metrics: MetricsBed) -> None:
    pod = a_pod()
    cluster_metrics.dcgm.set("DCGM_FI_DEV_FB_USED", GPU.labels(pod), 30_000)
    cluster_metrics.scraped()
    stored_at = time.time()
    cluster_metrics.prometheus.stop()
    cluster_metrics.dcgm.set("DCGM_FI_DEV_FB_USED", GPU.labels(pod), 70_000)
    cluster_metrics.prometheus.start()
    cluster_metrics.scraped()
    used = f'DCGM_FI_DEV_FB_USED{{pod="{pod.name}"}}'
    assert [float(s["value"][1]) for s in cluster_metrics.prometheus.query(used, stored_at)] == [
        30_000
    ]
    assert values(cluster_metrics, used) == [70_000]


def test_the_endpoints_write_the_exporters_text_format() -> None:
    exporter = Exporter(DCGM)
    pod = Pod("ns", "p", "0b0e5d0c-0000-4000-8000-000000000001")
    mig = Gpu(0, "GPU-a", mig_profile="1g.10gb", mig_instance=7)
    exporter.set("DCGM_FI_DEV_GPU_UTIL", mig.labels(pod, container="main"), float("nan"))
    exporter.set("DCGM_FI_DEV_FB_FREE", {**mig.labels(), "Hostname": 'odd "host"\\'}, 5)
    text = exporter.render(0.0)
    assert text.startswith(
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",pci_bus_id="00000000:10:00.0",'
        'device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="1g.10gb",'
        'GPU_I_ID="7",Hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="550.54.15",'
        'container="main",namespace="ns",pod="p"} NaN\n'
    )
    assert 'Hostname="odd \\"host\\"\\\\"' in text
    assert "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" in text
    with pytest.raises(KeyError):
        exporter.set("container_cpu_usage_seconds_total", {}, 1)


def test_the_jobs_scrape_the_endpoints_they_name(cluster_metrics: MetricsBed) -> None:
    up = cluster_metrics.prometheus.query("up")
    instances = {sample["metric"]["job"]: sample["metric"]["instance"] for sample in up}
    assert instances[DCGM_JOB] == cluster_metrics.dcgm.address
    assert instances[KUBELET_JOB] == cluster_metrics.cadvisor.address
