"""A small archive for the command line's tests, recorded through the real write path:
three jobs (one failed with an OOMKilled pod and its Event, one of another namespace
and owner, one finished long ago and gone), and the console script run on it."""

import os
import pathlib
import subprocess
import sys

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from testbed import objects as o
from tests.support.commands import ON_PATH
from tests.support.history import History

JOBARCHIVE = pathlib.Path(sys.executable).with_name("jobarchive")


async def fill(url: str) -> str:
    """Empties the archive at ``url`` and records the small archive; the failed job's uid."""
    await db.open_database(url, encryption=DbTls())
    try:
        for table in ("job_info", "replica_info", "event_info"):
            await db.connection().execute_script(f"DELETE FROM {table}")
        async with History() as history:
            job = await history.job(
                "mnist", status="Failed", finished="2026-11-20T10:20:00Z", owner="alice"
            )
            running = o.running_status("tensorflow", "img", "10.0.0.12", "172.16.0.12")
            worker = await history.pod(
                job,
                "Worker",
                0,
                o.terminated_status(running, 137, "OOMKilled", "2026-11-20T10:20:00Z"),
            )
            await history.event(
                worker,
                "OOMKilling",
                "Memory cgroup out of memory",
                type="Warning",
                first="2026-11-20T10:19:59Z",
            )
            await history.job(
                "bert",
                kind="PyTorchJob",
                namespace="team-b",
                owner="bob",
                created="2026-11-21T00:00:00Z",
            )
            await history.job(
                "old",
                status="Succeeded",
                created="2025-01-01T00:00:00Z",
                finished="2025-01-01T01:00:00Z",
                gone=True,
            )
        return str(job["metadata"]["uid"])
    finally:
        await db.close_database()


def run(url: str, *args: str, **variables: str) -> subprocess.CompletedProcess[str]:
    """``jobarchive ARGS`` on the archive at ``url``, 200 columns wide unless told."""
    env = {**os.environ, **ON_PATH, "JOBARCHIVE_DB_URL": url, "COLUMNS": "200", **variables}
    return subprocess.run(
        [str(JOBARCHIVE), *args], env=env, capture_output=True, text=True, timeout=60
    )
