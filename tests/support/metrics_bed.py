"""The metrics a cluster's Prometheus holds, for the efficiency tests: a private
Prometheus (``testbed.prometheus``) scraping three endpoints of the test bed
(``testbed.exporter``) every second, as a cluster's Prometheus scrapes theirs:

- ``dcgm``: a dcgm-exporter scraped with its own labels (job ``dcgm-exporter``):
  a series' ``namespace`` and ``pod`` are the pod that holds the GPU;
- ``dcgm_monitored``: a dcgm-exporter scraped through a ServiceMonitor, without
  ``honorLabels`` (job ``nvidia-dcgm-exporter``): ``namespace``, ``pod`` and
  ``container`` are the exporter's own pod's, the GPU's pod is in
  ``exported_namespace``, ``exported_pod`` and ``exported_container``;
- ``cadvisor``: a kubelet's ``/metrics/cadvisor`` (job ``kubelet``, with
  ``honorLabels`` as the kubelet's ServiceMonitors have it), its samples timestamped.

The configuration is fixed at start: Prometheus hands new targets to its scrapers at
most every five seconds, so changing them while it runs costs that much, and so does
its first scrape after a start (a test that stopped it waits for it again). Each test
starts from endpoints that serve no series (``MetricsBed.reset``); its pods' names
should be its own, since what earlier tests stored stays in Prometheus.
"""

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager

from testbed.exporter import CADVISOR, DCGM, Exporter
from testbed.prometheus import PrometheusServer, Target

DCGM_JOB = "dcgm-exporter"
MONITORED_JOB = "nvidia-dcgm-exporter"
KUBELET_JOB = "kubelet"
# The exporter's own pod, as the ServiceMonitor's target labels name it.
EXPORTER_POD = {
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-7xk2q",
    "container": "nvidia-dcgm-exporter",
}


@dataclasses.dataclass
class MetricsBed:
    """The Prometheus and its three endpoints, each scraped by its job."""

    prometheus: PrometheusServer
    dcgm: Exporter
    dcgm_monitored: Exporter
    cadvisor: Exporter

    @property
    def jobs(self) -> dict[str, Exporter]:
        """Each endpoint by the job that scrapes it."""
        return {DCGM_JOB: self.dcgm, MONITORED_JOB: self.dcgm_monitored, KUBELET_JOB: self.cadvisor}

    def reset(self) -> None:
        """No endpoint serves a series, Prometheus running and every job scraped since."""
        for exporter in self.jobs.values():
            exporter.clear()
            exporter.start()
        self.prometheus.start()
        self.scraped()

    def scraped(self, after: float | None = None) -> None:
        """Wait until every job was scraped after unix time ``after`` (now): what the
        endpoints serve now is in Prometheus."""
        after = time.time() if after is None else after
        for job in self.jobs:
            self.prometheus.wait_scraped(job, after)


@contextmanager
def metrics_bed() -> Iterator[MetricsBed]:
    """The bed, started; everything stopped and removed at the end."""
    bed = MetricsBed(PrometheusServer(), Exporter(DCGM), Exporter(DCGM), Exporter(CADVISOR))
    bed.prometheus.targets.update(
        (target.job, target)
        for target in (
            Target(DCGM_JOB, bed.dcgm.address),
            Target(MONITORED_JOB, bed.dcgm_monitored.address, EXPORTER_POD),
            Target(KUBELET_JOB, bed.cadvisor.address, honor_labels=True),
        )
    )
    try:
        bed.reset()
        yield bed
    finally:
        bed.prometheus.remove()
        for exporter in bed.jobs.values():
            exporter.stop()
