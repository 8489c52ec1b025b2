"""A Prometheus server of the test bed's own: Debian's ``prometheus`` binary, its data
directory under a temporary folder, a free port on loopback, a configuration written
here that scrapes the targets given every second. Never the packaged service: the
process is the one started here, stopped by signalling it.

``stop`` and ``start`` may alternate on the same data directory (a Prometheus that was
away while a pod ended, and came back with what it had stored). ``scrape`` adds or
replaces targets while it runs (a SIGHUP reloads the configuration), and
``wait_scraped`` waits until a target's scrape after a given moment is stored: the
condition a test waits on, never a guessed time.
"""

import dataclasses
import json
import pathlib
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from testbed.ports import free_port

BINARY = "/usr/bin/prometheus"
STARTUP_SECONDS = 60.0
SCRAPE_INTERVAL = "1s"
PRIVATE_PREFIX = "jobarchive-prometheus-"


class PrometheusUnavailable(RuntimeError):
    """No Prometheus binary, or the server did not come up; the message says why."""


@dataclasses.dataclass(frozen=True)
class Target:
    """One scrape job of one address. ``labels`` are the target's own: ``namespace``
    and ``pod`` there (a ServiceMonitor's, naming the exporter's pod) make Prometheus
    keep the exporter's as ``exported_namespace`` and ``exported_pod``, unless
    ``honor_labels``."""

    job: str
    address: str
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    honor_labels: bool = False

    def config(self) -> dict[str, Any]:
        """The scrape configuration's entry."""
        static: dict[str, Any] = {"targets": [self.address]}
        if self.labels:
            static["labels"] = dict(self.labels)
        return {
            "job_name": self.job,
            "honor_labels": self.honor_labels,
            "static_configs": [static],
        }


class PrometheusServer:
    """One private Prometheus process; ``start`` and ``stop`` may alternate."""

    def __init__(self, base: pathlib.Path | None = None, port: int | None = None) -> None:
        self.base = base or pathlib.Path(tempfile.mkdtemp(prefix=PRIVATE_PREFIX))
        self._owns_base = base is None
        self.port = port or free_port()
        self.datadir = self.base / "data"
        self.config_path = self.base / "prometheus.yml"
        self.log_path = self.base / "prometheus.log"
        self.targets: dict[str, Target] = {}
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the process we started is alive."""
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int:
        """The running server's process id (the bench reads its CPU time)."""
        assert self._process is not None, "the private Prometheus is not running"
        return self._process.pid

    def start(self) -> None:
        """Start the server on its data directory and wait until it is ready (its
        stored data loaded); raises PrometheusUnavailable with its last log lines."""
        if self.running:
            return
        if not pathlib.Path(BINARY).exists():
            raise PrometheusUnavailable(
                f"{BINARY} not found: as root, run tests/install-prometheus.sh (make test does)"
            )
        self._write_config()
        command = [
            BINARY,
            f"--config.file={self.config_path}",
            f"--storage.tsdb.path={self.datadir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1d",
            "--log.level=info",
        ]
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while self._get("/-/ready") is None:
            if not self.running or time.monotonic() > deadline:
                self.stop()
                raise PrometheusUnavailable(
                    f"the private Prometheus on port {self.port} did not start: {self._log_tail()}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server (SIGTERM: its head block is kept for the next start)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=STARTUP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def remove(self) -> None:
        """Stop, then delete the data directory if this object created its folder."""
        self.stop()
        if self._owns_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def scrape(self, *targets: Target) -> None:
        """Scrape these targets too (one of the same job replaces it) from now on; waits
        until Prometheus has taken the new configuration."""
        self.targets.update((target.job, target) for target in targets)
        self._reload()

    def forget(self, *jobs: str) -> None:
        """Scrape these jobs no more."""
        for job in jobs:
            self.targets.pop(job, None)
        self._reload()

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """The result of an instant query (now, or at unix time ``at``); raises
        AssertionError when Prometheus refuses it."""
        parameters = {"query": promql} | ({} if at is None else {"time": str(at)})
        answer = self._get("/api/v1/query?" + urllib.parse.urlencode(parameters))
        if answer is None or answer.get("status") != "success":
            raise AssertionError(f"Prometheus refused {promql!r}: {answer}")
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def wait_scraped(self, job: str, after: float | None = None, within: float = 30.0) -> float:
        """Wait until a scrape of ``job`` that began after unix time ``after`` (now, when
        None) is stored and succeeded; returns its time. Values set before ``after``
        are then in Prometheus."""
        after = time.time() if after is None else after
        deadline = time.monotonic() + within
        found: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            # timestamp() of a selector, not of an expression (whose samples are stamped
            # with the evaluation's time); ``and`` keeps its values.
            up = f'up{{job="{job}"}}'
            found = self.query(f"timestamp({up}) and {up} == 1")
            if found and float(found[0]["value"][1]) > after:
                return float(found[0]["value"][1])
            time.sleep(0.1)
        raise AssertionError(f"no scrape of {job} after {after} within {within} s: {found}")

    def _reload(self) -> None:
        self._write_config()
        if not self.running:
            return
        assert self._process is not None
        self._process.send_signal(signal.SIGHUP)
        wanted = set(self.targets)
        deadline = time.monotonic() + STARTUP_SECONDS
        while self._pools() != wanted:
            if time.monotonic() > deadline:
                raise AssertionError(f"Prometheus did not take {wanted}: {self._log_tail()}")
            time.sleep(0.05)

    def _pools(self) -> set[str] | None:
        answer = self._get("/api/v1/targets?state=active")
        if answer is None:
            return None
        return {entry["scrapePool"] for entry in answer["data"]["activeTargets"]}

    def _write_config(self) -> None:
        # JSON is YAML: no YAML writer needed, and no quoting to get wrong.
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL, "scrape_timeout": SCRAPE_INTERVAL},
            "scrape_configs": [target.config() for target in self.targets.values()],
        }
        self.config_path.write_text(json.dumps(config, indent=2))

    def _get(self, path: str) -> dict[str, Any] | None:
        """The JSON of a GET (an empty object for a plain-text 200), or None when the
        server does not answer 200."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=5) as reply:
                body = reply.read()
        except (urllib.error.URLError, OSError):
            return None
        try:
            answer = json.loads(body)
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}

    def _log_tail(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        return " | ".join(lines[-8:])


@contextmanager
def prometheus_server() -> Iterator[PrometheusServer]:
    """A private Prometheus, started, scraping nothing yet; removed at the end."""
    server = PrometheusServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()
