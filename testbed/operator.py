"""The real operator as a child process: ``kopf run operator/main.py`` against a kubeconfig
that points at the emulated API."""

import asyncio
import os
import pathlib
import signal
import sys

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from testbed.ports import free_port

REPO = pathlib.Path(__file__).resolve().parents[1]
KOPF = pathlib.Path(sys.executable).with_name("kopf")


def write_kubeconfig(path: pathlib.Path, url: str) -> None:
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: emulator\n  cluster:\n    server: {url}\n"
        "users:\n- name: tester\n  user:\n    token: emulator-token\n"
        "contexts:\n- name: emulator\n  context:\n    cluster: emulator\n    user: tester\n"
        "current-context: emulator\n"
    )


class OperatorProcess:
    """Starts, stops and kills one operator process; its output goes to a log file."""

    def __init__(
        self,
        workdir: pathlib.Path,
        kubeconfig: pathlib.Path,
        env: dict[str, str | None],
        script: pathlib.Path = REPO / "operator" / "main.py",
        metrics_port: int | None = None,
    ) -> None:
        self.script = script
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.env = env
        self.log_path = workdir / "operator.log"
        self.process: asyncio.subprocess.Process | None = None
        self.metrics_port = free_port() if metrics_port is None else metrics_port

    async def scrape(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        """The operator's Prometheus metrics: (sample name, labels) to value."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200, response.status
            text = await response.text()
        return {
            (sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

    async def start(self, *extra_args: str) -> None:
        # None removes a variable: the operator must not inherit one from the test runner.
        # Unbuffered, so that a killed operator's last lines are in its log too.
        merged = {
            "JOBARCHIVE_METRICS_PORT": str(self.metrics_port),
            **os.environ,
            **self.env,
            "KUBECONFIG": str(self.kubeconfig),
            "PYTHONUNBUFFERED": "1",
        }
        # Alone unless the test makes it one of several peers; the whole cluster unless it
        # names namespaces (a shard).
        peering = any(arg.startswith("--peering") for arg in extra_args)
        scoped = any(arg.startswith(("--namespace", "-n")) for arg in extra_args)
        env = {key: value for key, value in merged.items() if value is not None}
        log = self.log_path.open("ab")
        self.process = await asyncio.create_subprocess_exec(
            str(KOPF),
            "run",
            *([] if scoped else ["--all-namespaces"]),
            *([] if peering else ["--standalone"]),
            *extra_args,
            str(self.script),
            cwd=self.workdir,
            env=env,
            stdout=log,
            stderr=asyncio.subprocess.STDOUT,
        )
        log.close()

    async def stop(self, grace: float = 20.0) -> int | None:
        """SIGTERM, and wait for the exit code (SIGKILL past the timeout)."""
        if self.process is None or self.process.returncode is not None:
            return self.process.returncode if self.process else None
        self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            return await self.kill()

    async def kill(self) -> int | None:
        """SIGKILL, leaving the process no chance to clean up; returns the exit code."""
        if self.process is None or self.process.returncode is not None:
            return self.process.returncode if self.process else None
        self.process.kill()
        return await self.process.wait()

    async def exited(self, within: float = 30.0) -> int:
        """Wait for the process to end by itself; its exit code."""
        if self.process is None:
            raise RuntimeError("the operator process was never started")
        return await asyncio.wait_for(self.process.wait(), within)

    @property
    def running(self) -> bool:
        """Whether the process was started and has not exited."""
        return self.process is not None and self.process.returncode is None

    def peak_rss(self) -> int:
        """The process's peak resident set size so far, in bytes (VmHWM)."""
        return self._status("VmHWM")

    def rss(self) -> int:
        """The process's resident set size now, in bytes (VmRSS)."""
        return self._status("VmRSS")

    def _status(self, field: str) -> int:
        if self.process is None:
            raise RuntimeError("the operator process was never started")
        status = pathlib.Path(f"/proc/{self.process.pid}/status").read_text()
        line = next(line for line in status.splitlines() if line.startswith(f"{field}:"))
        return int(line.split()[1]) * 1024

    def log(self) -> str:
        """Everything the process wrote so far, stdout and stderr interleaved."""
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
