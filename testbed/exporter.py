"""A metrics endpoint of the test bed's own, serving what dcgm-exporter and the
kubelet's cAdvisor serve, with values the test sets: every figure the operator reads
from Prometheus is then computable by hand.

The families are the ones the efficiency queries read, with the help, type and label
names their exporters write (dcgm-exporter's default counters and its pod attribution;
the kubelet's ``/metrics/cadvisor``). ``Exporter.set`` gives a series a value, or a
counter a steady rise (``per_second``: its value at each scrape is the value set plus
the rise since), ``remove`` makes a series vanish (Prometheus then marks it stale at
the next scrape), and ``Gpu``/``Pod`` write the label sets. The names a scrape adds
(``instance``, ``job``; ``exported_namespace`` and ``exported_pod`` where its target
carries ``namespace`` and ``pod`` labels) are Prometheus' own doing: see
``testbed.prometheus.Target``.

It serves from a thread of its own (``http.server``), so a test's event loop may
block, or stop, without a scrape going unanswered.
"""

import dataclasses
import http.server
import math
import threading
import time
from collections.abc import Mapping

from testbed.ports import free_port

GAUGE = "gauge"
COUNTER = "counter"

# dcgm-exporter's families the efficiency reads: (type, help), as its counters file has them.
DCGM = {
    "DCGM_FI_DEV_GPU_UTIL": (GAUGE, "GPU utilization (in %)."),
    "DCGM_FI_DEV_FB_FREE": (GAUGE, "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_FB_USED": (GAUGE, "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": (
        COUNTER,
        "Total energy consumption since boot (in mJ).",
    ),
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": (GAUGE, "Ratio of time the graphics engine is active."),
}
# The kubelet's cAdvisor families, which it writes with a timestamp (``stamped``).
CADVISOR = {
    "container_cpu_usage_seconds_total": (COUNTER, "Cumulative cpu time consumed in seconds."),
    "container_memory_working_set_bytes": (GAUGE, "Current working set in bytes."),
}
FAMILIES = {**DCGM, **CADVISOR}
PAUSE_IMAGE = "registry.k8s.io/pause:3.9"

Labels = tuple[tuple[str, str], ...]


@dataclasses.dataclass(frozen=True)
class Gpu:
    """One GPU of a node as dcgm-exporter names it; a MIG instance with ``mig_profile``
    (``1g.10gb``) and ``mig_instance``."""

    index: int
    uuid: str
    hostname: str = "gpu-node-1"
    model: str = "NVIDIA A100-SXM4-80GB"
    driver: str = "550.54.15"
    mig_profile: str | None = None
    mig_instance: int | None = None

    def labels(
        self, pod: "Pod | None" = None, container: str = "", pod_uid: bool = False
    ) -> dict[str, str]:
        """The series' labels, in dcgm-exporter's order; with ``pod``, the attribution
        of its ``container`` (and, with ``pod_uid``, the pod's uid), as dcgm-exporter
        writes it for a GPU a pod holds. A GPU no pod holds has none of them."""
        labels = {
            "gpu": str(self.index),
            "UUID": self.uuid,
            "pci_bus_id": f"00000000:{0x10 + self.index:02X}:00.0",
            "device": f"nvidia{self.index}",
            "modelName": self.model,
        }
        if self.mig_profile is not None:
            labels["GPU_I_PROFILE"] = self.mig_profile
            labels["GPU_I_ID"] = str(self.mig_instance or 0)
        labels["Hostname"] = self.hostname
        labels["DCGM_FI_DRIVER_VERSION"] = self.driver
        if pod is not None:
            labels.update(container=container or pod.containers[0], namespace=pod.namespace)
            labels["pod"] = pod.name
            if pod_uid:
                labels["pod_uid"] = pod.uid
        return labels


@dataclasses.dataclass(frozen=True)
class Pod:
    """A pod as the kubelet's cAdvisor names its cgroups: burstable QoS, systemd's
    cgroup driver, containerd."""

    namespace: str
    name: str
    uid: str
    containers: tuple[str, ...] = ("trainer",)
    image: str = "registry.example/train:1.0"

    @property
    def cgroup(self) -> str:
        """The pod's cgroup, the ``id`` of its pod-level series."""
        slice_uid = self.uid.replace("-", "_")
        return f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{slice_uid}.slice"

    def _runtime_id(self, container: str) -> str:
        # A containerd id: 64 hex digits, the same for the same container in a run.
        return (self.uid.replace("-", "") + container.encode().hex()).ljust(64, "0")[:64]

    def pod_labels(self) -> dict[str, str]:
        """The pod's own series: its cgroup, ``container=""``, no image or name."""
        return self._labels("", self.cgroup, "", "")

    def container_labels(self, container: str) -> dict[str, str]:
        """One container's series."""
        runtime = self._runtime_id(container)
        scope = f"{self.cgroup}/cri-containerd-{runtime}.scope"
        return self._labels(container, scope, self.image, runtime)

    def pause_labels(self, name: str = "POD") -> dict[str, str]:
        """The sandbox's pause container: ``container="POD"`` (dockershim's name;
        containerd's kubelets write ``""`` for it, told apart by its image)."""
        runtime = self._runtime_id("POD")
        scope = f"{self.cgroup}/cri-containerd-{runtime}.scope"
        return self._labels(name, scope, PAUSE_IMAGE, runtime)

    def every_labels(self) -> list[dict[str, str]]:
        """Every series the kubelet writes for the pod: its own, each container's, the
        pause container's."""
        return [
            self.pod_labels(),
            *(self.container_labels(name) for name in self.containers),
            self.pause_labels(),
        ]

    def _labels(self, container: str, cgroup: str, image: str, name: str) -> dict[str, str]:
        return {
            "container": container,
            "id": cgroup,
            "image": image,
            "name": name,
            "namespace": self.namespace,
            "pod": self.name,
        }


@dataclasses.dataclass
class _Series:
    labels: Labels
    value: float
    per_second: float
    since: float

    def at(self, moment: float) -> float:
        return self.value + self.per_second * (moment - self.since)


class Exporter:
    """The endpoint, ``http://127.0.0.1:PORT/metrics``; ``start`` and ``stop`` may
    alternate, ``set`` and ``remove`` change what the next scrape reads."""

    def __init__(
        self,
        families: Mapping[str, tuple[str, str]] = FAMILIES,
        port: int | None = None,
        stamped: bool = True,
    ) -> None:
        """``families``: what it serves (``DCGM``: a dcgm-exporter; ``CADVISOR``: a
        kubelet's cAdvisor endpoint); ``stamped``: cAdvisor's samples carry their time,
        as the kubelet writes them (Prometheus then writes no staleness marker when such
        a series vanishes: it is read for five minutes more)."""
        self.families = dict(families)
        self.port = port or free_port()
        self.stamped = stamped
        self.scrapes = 0
        self._series: dict[str, dict[Labels, _Series]] = {name: {} for name in self.families}
        self._lock = threading.Lock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``, as a scrape's target names it."""
        return f"127.0.0.1:{self.port}"

    def set(
        self, family: str, labels: Mapping[str, str], value: float, per_second: float = 0.0
    ) -> None:
        """Give a series ``value`` now, rising by ``per_second`` each second from now
        (a counter's steady rate); a family it does not serve is a KeyError."""
        with self._lock:
            series = _Series(tuple(labels.items()), value, per_second, time.time())
            self._series[family][_key(labels)] = series

    def remove(self, family: str, labels: Mapping[str, str]) -> None:
        """The series is no longer served (as when its pod or GPU is gone)."""
        with self._lock:
            self._series[family].pop(_key(labels), None)

    def clear(self) -> None:
        """No series at all (the families' help and type lines stay)."""
        with self._lock:
            for series in self._series.values():
                series.clear()

    def render(self, moment: float | None = None) -> str:
        """The text exposition at ``moment`` (now): each family's help and type, then
        its series."""
        moment = time.time() if moment is None else moment
        lines: list[str] = []
        with self._lock:
            for family, (kind, text) in self.families.items():
                lines += [f"# HELP {family} {text}", f"# TYPE {family} {kind}"]
                stamped = self.stamped and family in CADVISOR
                # A stamped value is the one at the millisecond its stamp says.
                at = int(moment * 1000) / 1000 if stamped else moment
                stamp = f" {int(moment * 1000)}" if stamped else ""
                for series in self._series[family].values():
                    pairs = ",".join(f'{k}="{_escaped(v)}"' for k, v in series.labels)
                    lines.append(f"{family}{{{pairs}}} {_number(series.at(at))}{stamp}")
        return "\n".join(lines) + "\n"

    def start(self) -> None:
        """Serve from a thread of its own until ``stop``."""
        if self._server is not None:
            return
        exporter = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                body = exporter.render().encode()
                exporter.scrapes += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                """No line per scrape."""

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving (its series are kept for a later ``start``)."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "Exporter":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _key(labels: Mapping[str, str]) -> Labels:
    """A series' identity: its labels whatever their order."""
    return tuple(sorted(labels.items()))


def _escaped(value: str) -> str:
    """A label value in the text format: backslash, quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value))
