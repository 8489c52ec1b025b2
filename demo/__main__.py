"""``make demo``: the real operator against an emulated cluster, on the SQLite default.

It plays three jobs' lives (``demo.stories``: a PyTorchJob that succeeds, a TFJob whose
worker is OOM-killed, a PyTorchJob deleted mid-run), then prints what ``jobarchive``
reads back. Nothing but Python and this project's virtualenv is needed: the cluster is
kmock's emulator on a local port, the database a SQLite file in a temporary directory.

With ``--keep`` (``make demo KEEP=1``) it then serves the console on the demo's data
(``jobarchive serve --auth none`` on loopback), prints its URL and runs until
interrupted.
"""

import argparse
import asyncio
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from demo.stories import RECORDED, play
from jobarchive.kinds import BUILTIN_KINDS
from testbed.cluster import EVENTS, PODS, emulated_cluster, job_resource
from testbed.operator import OperatorProcess, write_kubeconfig

JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")
CONSOLE_PORT = 8080


def environment(workdir: pathlib.Path) -> dict[str, str]:
    env = {
        **os.environ,
        "JOBARCHIVE_DB_URL": f"sqlite://{workdir / 'jobarchive.sqlite3'}",
        "COLUMNS": "200",
    }
    env.pop("MYSQL_HOST", None)
    return env


def jobarchive(workdir: pathlib.Path, *args: str) -> str:
    result = subprocess.run(
        [str(JOBARCHIVE), *args],
        env=environment(workdir),
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def stored(workdir: pathlib.Path) -> bool:
    try:
        out = jobarchive(workdir, "jobs", "-o", "json")
    except subprocess.CalledProcessError:
        return False
    statuses = {job["name"]: job["status"] for job in json.loads(out)["items"]}
    return statuses == RECORDED


def serve_console(workdir: pathlib.Path, port: int) -> int:
    """``jobarchive serve`` on the demo's database until interrupted."""
    args = [str(JOBARCHIVE), "serve", "--auth", "none", "--port", str(port)]
    with (workdir / "serve.log").open("ab") as log:
        process = subprocess.Popen(args, env=environment(workdir), stdout=log, stderr=log)
    print(f"\nThe console on the demo's data: http://127.0.0.1:{port}/  (Ctrl-C ends the demo)")
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait()
        return 0


async def record(workdir: pathlib.Path) -> int:
    """Play the stories against the operator until the archive holds them; 0 when it does."""
    async with emulated_cluster() as cluster:
        write_kubeconfig(workdir / "kubeconfig", cluster.url)
        env: dict[str, str | None] = {
            "JOBARCHIVE_DB_URL": None,
            "MYSQL_HOST": None,
            "REGION": None,
        }
        operator = OperatorProcess(workdir, workdir / "kubeconfig", env)
        print(
            "$ kopf run --all-namespaces operator/main.py   "
            "# against an emulated cluster, recording into SQLite",
            flush=True,
        )
        await operator.start()
        try:
            await cluster.wait_watching([PODS, EVENTS, *map(job_resource, BUILTIN_KINDS)])
            await play(cluster)
            for _ in range(300):
                if stored(workdir):
                    return 0
                await asyncio.sleep(0.1)
            print(operator.log()[-5000:], file=sys.stderr)
            print("demo: the jobs were not recorded in 30 s", file=sys.stderr)
            return 1
        finally:
            await operator.stop()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="make demo")
    parser.add_argument("--keep", action="store_true", help="then serve the console")
    parser.add_argument("--port", type=int, default=CONSOLE_PORT, help="the console's port")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="jobarchive-demo-") as tmp:
        workdir = pathlib.Path(tmp)
        if asyncio.run(record(workdir)):
            return 1
        for command in (("jobs",), ("job", "nlp/bert-finetune")):
            print(f"\n$ jobarchive {' '.join(command)}")
            print(jobarchive(workdir, *command), end="")
        print(f"\n(demo done in {time.monotonic() - started:.1f} s)", flush=True)
        if args.keep:
            return serve_console(workdir, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
