"""The command line's start-up (decision 30): the wall time of ``jobarchive --help``, of a
command's ``--help`` and of ``jobarchive jobs`` on an empty SQLite archive, beside
Python starting and doing nothing, in the same run; p50 / p99 of ``REPEAT`` runs each."""

import os
import pathlib
import subprocess
import sys
import tempfile
import time

from bench.e2e_bench import percentiles
from jobarchive.config import DbTls
from jobarchive.storage import database as db

REPEAT = 15
JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """p50 and p99 seconds of ``command`` from start to exit, after one warm-up run."""
    samples = []
    for _ in range(REPEAT + 1):
        started = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, timeout=60)
        samples.append(time.perf_counter() - started)
    return percentiles(samples[1:])


async def run() -> dict[str, tuple[float, float]]:
    """Each command's p50 and p99 seconds, Python's own first."""
    with tempfile.TemporaryDirectory() as workdir:
        url = f"sqlite:///{workdir}/archive.sqlite3"
        await db.open_database(url, encryption=DbTls())
        await db.close_database()
        env = {**os.environ, "JOBARCHIVE_DB_URL": url}
        return {
            "python -c pass (baseline)": timed([sys.executable, "-c", "pass"], env),
            "jobarchive --help": timed([str(JOBARCHIVE), "--help"], env),
            "jobarchive jobs --help": timed([str(JOBARCHIVE), "jobs", "--help"], env),
            "jobarchive jobs (empty SQLite archive)": timed([str(JOBARCHIVE), "jobs"], env),
        }
