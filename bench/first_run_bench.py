"""A newcomer's first minutes, timed: what the tests of ``make run`` without a cluster
(``tests/e2e/test_first_hour.py``), of ``make demo`` (``tests/e2e/test_demo.py``) and
of discovery with the database away (``tests/e2e/test_kube_discovery.py``) hold as
behaviour, here as figures with their targets, beside Python starting and doing
nothing and beside discovery with the database up, in the same run.
"""

import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import aiohttp

from bench.cli_bench import timed
from bench.e2e_bench import percentiles
from bench.kubectl_bench import serving
from jobarchive.reading.kube.discovery import AGGREGATED, PREFIX
from testbed.operator import KOPF, REPO, write_kubeconfig
from testbed.ports import free_port

MAKE = ["make", "--no-print-directory", "demo", f"PY={sys.executable}"]
# What discovery is asked, as the aggregator and kubectl ask it.
DISCOVERY = (
    (PREFIX, "application/json"),
    ("/apis", AGGREGATED),
    ("/apis", "application/json"),
)
ASKED = 20


def _refusal(home: pathlib.Path) -> float:
    """Seconds ``make run``'s operator takes to refuse, in an empty working directory
    with ``home`` as its home; it must exit 1."""
    with tempfile.TemporaryDirectory() as workdir:
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "JOBARCHIVE_METRICS_PORT": str(free_port()),
        }
        started = time.perf_counter()
        done = subprocess.run(
            [str(KOPF), "run", "--all-namespaces", str(REPO / "operator" / "main.py")],
            cwd=workdir,
            env=env,
            capture_output=True,
            timeout=300,
        )
        took = time.perf_counter() - started
    if done.returncode != 1:
        raise RuntimeError(f"the operator exited {done.returncode}: {done.stdout[-2000:]!r}")
    return took


def _demo(*args: str, status: int = 0) -> float:
    """Seconds ``make demo`` takes to its end; it must exit with ``status``."""
    started = time.perf_counter()
    done = subprocess.run([*MAKE, *args], cwd=REPO, capture_output=True, timeout=600)
    took = time.perf_counter() - started
    if done.returncode != status:
        raise RuntimeError(f"make demo exited {done.returncode}: {done.stderr[-2000:]!r}")
    return took


def starts() -> dict[str, float]:
    """Python's start, the operator's refusals without a cluster, and ``make demo``
    run to its end and refused a taken port, in seconds."""
    figures = {"python -c pass (baseline), p50": timed([sys.executable, "-c", "pass"], {})[0]}
    with tempfile.TemporaryDirectory() as home:
        figures["make run, no kubeconfig: refused"] = _refusal(pathlib.Path(home))
        kubeconfig = pathlib.Path(home) / ".kube" / "config"
        kubeconfig.parent.mkdir()
        write_kubeconfig(kubeconfig, f"http://127.0.0.1:{free_port()}")
        figures["make run, a closed port: refused"] = _refusal(pathlib.Path(home))
    figures["make demo, to its end"] = _demo()
    port = free_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        figures["make demo KEEP=1, a taken port: refused"] = _demo(
            "KEEP=1", f"DEMO_PORT={port}", status=2
        )
    return figures


async def discovery(url: str) -> tuple[float, float]:
    """p50 and p99 seconds of discovery from ``jobarchive serve`` (``--auth none``) on
    the database at ``url``."""
    samples: list[float] = []
    with tempfile.TemporaryDirectory() as workdir:
        async with serving(url, pathlib.Path(workdir)) as origin, aiohttp.ClientSession() as s:
            for _ in range(ASKED):
                for path, accept in DISCOVERY:
                    started = time.perf_counter()
                    async with s.get(origin + path, headers={"Accept": accept}) as answer:
                        await answer.read()
                    samples.append(time.perf_counter() - started)
                    if answer.status != 200:
                        raise RuntimeError(f"{path} answered {answer.status}")
    return percentiles(samples)


async def run(url: str) -> dict[str, tuple[float, float]]:
    """Every figure, in seconds: (value, target); a target of 0 is a baseline's."""
    targets = {
        "make run, no kubeconfig: refused": 10.0,
        "make run, a closed port: refused": 10.0,
        "make demo, to its end": 60.0,
        "make demo KEEP=1, a taken port: refused": 30.0,
    }
    figures = {name: (took, targets.get(name, 0.0)) for name, took in starts().items()}
    nowhere = f"mysql://root@127.0.0.1:{free_port()}/jobarchive"
    figures["discovery, the database up (baseline), p99"] = ((await discovery(url))[1], 0.0)
    figures["discovery, the database away, p99"] = ((await discovery(nowhere))[1], 1.0)
    return figures
