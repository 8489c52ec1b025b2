"""``make demo``: the real operator against an emulated cluster, on the SQLite default.

It plays six jobs' lives (``demo.stories``), with owners, queues, GPUs and training
logs, then prints what ``jobarchive`` reads back. Nothing but the operator's own
dependencies and kmock (the ``demo`` extra) is needed: the cluster is kmock's emulator
on a local port, the database a SQLite file in a temporary directory, whose path it
prints; it is deleted at the end.

It prints at the terminal's width (80 columns when its output is no terminal), and
every command it prints runs as printed from the repository's root. Each port it opens
is a free one unless chosen: the emulated cluster's (``--emulator-port``,
``DEMO_EMULATOR_PORT``), the operator's metrics' (``--metrics-port``,
``DEMO_METRICS_PORT``) and, with ``--keep`` (``make demo KEEP=1``), which keeps the
archive and serves the console on it (``jobarchive serve --auth none`` on loopback)
until interrupted, the console's (``--port``, ``DEMO_PORT``).
"""

import argparse
import asyncio
import contextlib
import errno
import os
import pathlib
import shlex
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator

from aiohttp import web

from demo import standin
from demo.stories import ATTEMPTS, CLASSES, FAILED_CONTAINERS, RECORDED, WAITS, play
from jobarchive.core.kinds import BUILTIN_KINDS
from testbed.cluster import (
    CLUSTER_QUEUES,
    EVENTS,
    PODS,
    WORKLOADS,
    Cluster,
    emulated_cluster,
    job_resource,
)
from testbed.logs import Logs
from testbed.operator import OperatorProcess, write_kubeconfig
from testbed.ports import free_port

JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")
# The width it prints at: the terminal's, else 80 (``COLUMNS`` when set).
WIDTH = shutil.get_terminal_size((80, 24)).columns
ARCHIVE = "jobarchive.sqlite3"
# What the demo shows, in order: the jobs, the failed TFJob, why the LLM job failed,
# what each queue's jobs cost and waited, how much of its quota each Kueue ClusterQueue
# used.
COMMANDS = (
    ("jobs",),
    ("job", "nlp/bert-finetune"),
    ("logs", "nlp/llama-sft", "--pod", "llama-sft-worker-0"),
    ("usage", "--by", "queue"),
    ("usage", "--by", "clusterqueue"),
    ("eff", "nlp/llama-sft"),
)
# How often the emulator forgets the requests it served, and how many it keeps.
FORGET_EVERY, REQUESTS_KEPT = 0.05, 16
# Kueue's resources, served as where Kueue is installed.
KUEUE = (WORKLOADS, CLUSTER_QUEUES)
# The reads that say whether the archive holds the stories' ends.
ENDS = {
    "statuses": "SELECT name, status FROM job_info",
    "attempts": "SELECT j.name, a.end_reason FROM job_attempt a JOIN job_info j "
    "ON j.job_id = a.job_id ORDER BY a.quota_reserved_at",
    "waits": "SELECT j.name, COUNT(*) FROM job_wait w JOIN job_info j ON j.job_id = w.job_id "
    "GROUP BY j.name",
    "classes": "SELECT j.name, f.failure_class FROM job_failure f JOIN job_info j "
    "ON j.job_id = f.job_id",
    "summaries": "SELECT j.name, COUNT(*) FROM pod_efficiency e JOIN job_info j "
    "ON j.job_id = e.job_id WHERE e.outcome = 'measured' GROUP BY j.name",
}
# The pods Prometheus (the demo's stand-in) has figures of, by job (``demo.standin``).
MEASURED = {"mnist-ddp": 2, "llama-sft": 2}


def database_url(workdir: pathlib.Path) -> str:
    return f"sqlite://{workdir / ARCHIVE}"


def program() -> str:
    """The console script as it runs from here, the repository's root (where ``make``
    runs): ``.venv/bin/jobarchive``, else its whole path."""
    relative = os.path.relpath(JOBARCHIVE)
    return str(JOBARCHIVE) if relative.startswith("..") else relative


def environment(workdir: pathlib.Path) -> dict[str, str]:
    env = {**os.environ, "JOBARCHIVE_DB_URL": database_url(workdir), "COLUMNS": str(WIDTH)}
    env.pop("MYSQL_HOST", None)
    return env


def jobarchive(workdir: pathlib.Path, *commands: tuple[str, ...]) -> list[str]:
    """What each ``jobarchive`` command prints, the commands run at once (each process
    spends most of its time starting)."""
    processes = [
        subprocess.Popen(
            [program(), *command],
            env=environment(workdir),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    outputs = []
    for command, process in zip(commands, processes, strict=True):
        out, err = process.communicate()
        if process.returncode:
            raise subprocess.CalledProcessError(process.returncode, command, out, err)
        outputs.append(out)
    return outputs


def stored(workdir: pathlib.Path) -> bool:
    """Whether the archive holds every job in its end state, every failed container's
    log tail, each Kueue attempt's end and wait, each failed job's class (read from the
    file, read-only: cheaper than a ``jobarchive`` process)."""
    path = workdir / ARCHIVE
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as archive:
            found = {what: archive.execute(sql).fetchall() for what, sql in ENDS.items()}
            [(tails,)] = archive.execute("SELECT COUNT(*) FROM container_log_tail").fetchall()
    except sqlite3.Error:
        return False
    attempts: dict[str, list[str | None]] = {}
    for name, end in found["attempts"]:
        attempts.setdefault(name, []).append(end)
    return (
        dict(found["statuses"]) == RECORDED
        and tails == FAILED_CONTAINERS
        and attempts == ATTEMPTS
        and dict(found["waits"]) == WAITS
        and dict(found["classes"]) == CLASSES
        and dict(found["summaries"]) == MEASURED
    )


def unusable(port: int) -> str | None:
    """Why the console cannot listen on 127.0.0.1:``port``, or None when it can."""
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return "is taken"
            return f"cannot be listened on ({error.strerror})"
    return None


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def serve_console(workdir: pathlib.Path, port: int) -> int:
    """``jobarchive serve`` on the demo's database until interrupted; its URL once it
    listens, or its log's end if it exits first."""
    args = [program(), "serve", "--auth", "none", "--port", str(port)]
    log_path = workdir / "serve.log"
    with log_path.open("ab") as log:
        process = subprocess.Popen(args, env=environment(workdir), stdout=log, stderr=log)
    try:
        while not listening(port):
            if process.poll() is not None:
                print(log_path.read_text(errors="replace")[-2000:], file=sys.stderr)
                print(
                    f"make demo: jobarchive serve exited with {process.returncode}", file=sys.stderr
                )
                return 1
            time.sleep(0.1)
        print(f"\nThe console on the demo's data: http://127.0.0.1:{port}/", flush=True)
        print("(Ctrl-C ends it)", flush=True)
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        return 0


async def record(workdir: pathlib.Path, ports: argparse.Namespace) -> int:
    """Play the stories against the operator until the archive holds them; 0 when it does."""
    async with (
        emulated_cluster(port=ports.emulator_port) as cluster,
        prometheus_standin() as prometheus,
    ):
        logs = Logs(cluster)
        for resource in KUEUE:
            cluster.serve(resource)
        write_kubeconfig(workdir / "kubeconfig", cluster.url)
        # The operator opens no port but its metrics' (no API unless asked for).
        env: dict[str, str | None] = {
            "JOBARCHIVE_DB_URL": None,
            "JOBARCHIVE_API_PORT": None,
            "MYSQL_HOST": None,
            "REGION": None,
            # The demo's jobs failed minutes ago (its time is compressed): classified at
            # once, in rounds a second apart, not after the 2 minutes a cluster waits.
            "JOBARCHIVE_FAILURE_SETTLE": "2",
            # Efficiency from the stand-in (``demo.standin``), a second after each end.
            "JOBARCHIVE_PROMETHEUS_URL": prometheus,
            "JOBARCHIVE_PROMETHEUS_DELAY": "1",
        }
        operator = OperatorProcess(
            workdir, workdir / "kubeconfig", env, metrics_port=ports.metrics_port
        )
        print("# The operator, against an emulated cluster, recording into SQLite:")
        print("$ kopf run --all-namespaces operator/main.py", flush=True)
        await operator.start()
        forgetting: asyncio.Task[None] | None = None
        try:
            await cluster.wait_watching([PODS, EVENTS, *KUEUE, *map(job_resource, BUILTIN_KINDS)])
            forgetting = asyncio.create_task(forget_requests(cluster))
            await play(cluster, logs)
            for _ in range(300):
                if stored(workdir):
                    return 0
                await asyncio.sleep(0.1)
            print(operator.log()[-5000:], file=sys.stderr)
            print("demo: the jobs were not recorded in 30 s", file=sys.stderr)
            return 1
        finally:
            if forgetting is not None:
                forgetting.cancel()
            await operator.stop()


@contextlib.asynccontextmanager
async def prometheus_standin() -> AsyncIterator[str]:
    """The stand-in for Prometheus on a free loopback port; its URL."""
    runner = web.AppRunner(standin.app(standin.demo_series()))
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def forget_requests(cluster: Cluster) -> None:
    """Keep the emulator's cost per request flat while the stories play: kmock matches
    each request by scanning every one it served (``Cluster.forget_requests``)."""
    while True:
        cluster.forget_requests(REQUESTS_KEPT)
        await asyncio.sleep(FORGET_EVERY)


def tell(workdir: pathlib.Path, started: float, keep: bool) -> None:
    """What ``jobarchive`` reads back, and where the archive is: each command as it runs
    from the repository's root, on the kept archive once its URL is exported."""
    for command, out in zip(COMMANDS, jobarchive(workdir, *COMMANDS), strict=True):
        print(f"\n$ {shlex.join([program(), *command])}")
        print(folded(out), end="")
    print(f"\n(demo done in {time.monotonic() - started:.1f} s)")
    if keep:
        print(f"The archive, kept: {workdir / ARCHIVE}")
        print("Read it from here, the repository's root:")
        print(f"export JOBARCHIVE_DB_URL={shlex.quote(database_url(workdir))}")
        print(f"{shlex.join([program(), 'jobs'])}")
    else:
        print(f"The archive: {workdir / ARCHIVE}, deleted now")
        print("(make demo KEEP=1 keeps it)")
    sys.stdout.flush()


def folded(text: str) -> str:
    """Lines wider than ``WIDTH`` (a log's) folded as a terminal folds them, so that
    what is printed is what the terminal shows; tables fit already."""
    return "".join(
        "".join(line[start : start + WIDTH] + "\n" for start in range(0, len(line), WIDTH))
        if len(line) > WIDTH
        else line + "\n"
        for line in text.splitlines()
    )


def port_number(value: str) -> int:
    port = int(value)
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (1..65535)")
    return port


# Each port the demo may open: its option, its setting, what listens on it.
PORTS = (
    ("--port", "DEMO_PORT", "the console's port, with --keep"),
    ("--emulator-port", "DEMO_EMULATOR_PORT", "the emulated cluster's port"),
    ("--metrics-port", "DEMO_METRICS_PORT", "the operator's metrics' port"),
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make demo")
    parser.add_argument("--keep", action="store_true", help="keep the archive, serve the console")
    for option, setting, what in PORTS:
        parser.add_argument(option, type=port_number, help=f"{what} ({setting}; default: free)")
    args = parser.parse_args(argv)
    for option, setting, _ in PORTS:
        port = getattr(args, option.removeprefix("--").replace("-", "_"))
        problem = unusable(port) if port is not None else None
        if problem and (args.keep or option != "--port"):
            print(
                f"make demo: port {port} {problem}; set another {setting}, or none for a free one",
                file=sys.stderr,
            )
            return 2
    started = time.monotonic()
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="jobarchive-"))
    try:
        if asyncio.run(record(workdir, args)):
            return 1
        tell(workdir, started, args.keep)
        if args.keep:
            return serve_console(workdir, args.port if args.port is not None else free_port())
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
