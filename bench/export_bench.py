"""``jobarchive export`` of a month over a large archive (decision 34): its rate in jobs
and pods a second and its peak RSS, beside ``jobarchive jobs``'s page time and RSS in
the same run on the same data; and a quarter's export, whose RSS shows whether memory
grows with the window. Each command is the console script as a user runs it."""

import datetime
import os
import subprocess
import tempfile
import time

from bench.cli_bench import JOBARCHIVE, timed
from jobarchive.config import DbTls
from jobarchive.storage import database as db
from jobarchive.storage.models import Job, Pod
from testbed import bulk

MONTH = ("2026-05-01", "2026-06-01")
QUARTER = ("2026-05-01", "2026-08-01")


def _peak(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Seconds from start to exit, the process's peak RSS in MB, and what it printed."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert process.stdout is not None
    printed = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    took = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"{command[1]} exited {process.returncode}: {printed}")
    return took, usage.ru_maxrss / 1024, printed.strip()


async def _count(since: str, until: str) -> tuple[int, int]:
    """The jobs created in the window and their pods."""
    start = datetime.datetime.fromisoformat(since)
    end = datetime.datetime.fromisoformat(until)
    jobs = Job.filter(gmt_created__gte=start, gmt_created__lt=end)
    uids = await jobs.values_list("job_id", flat=True)
    pods = 0
    for first in range(0, len(uids), 5000):
        pods += await Pod.filter(job_id__in=uids[first : first + 5000]).count()
    return len(uids), pods


async def run(url: str, jobs: int, pods_per_job: int) -> dict[str, tuple[float, str]]:
    """Fill a database, then time the commands: name -> (figure, note)."""
    await db.open_database(url, encryption=DbTls())
    try:
        started = time.perf_counter()
        await bulk.fill(jobs, pods_per_job)
        await db.connection().execute_script("ANALYZE TABLE job_info, replica_info")
        print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
        month = await _count(*MONTH)
    finally:
        await db.close_database()
    env = {**os.environ, "JOBARCHIVE_DB_URL": url}
    page_p50, page_p99 = timed([str(JOBARCHIVE), "jobs", "--limit", "50"], env)
    _, page_rss, _ = _peak([str(JOBARCHIVE), "jobs", "--limit", "50"], env)
    figures = {"jobarchive jobs, a page of 50: p50 / p99 s": (page_p50, f"p99 {page_p99:.2f}")}
    figures["jobarchive jobs: peak RSS, MB"] = (page_rss, "")
    with tempfile.TemporaryDirectory() as folder:
        for name, (since, until) in (("month", MONTH), ("quarter", QUARTER)):
            command = [str(JOBARCHIVE), "export", "--since", since, "--until", until]
            took, rss, printed = _peak([*command, "--to", f"{folder}/{name}"], env)
            figures[f"export of a {name}: s"] = (took, printed.split(" in ")[0])
            figures[f"export of a {name}: peak RSS, MB"] = (rss, "")
            if name == "month":
                figures["export of a month: jobs/s"] = (month[0] / took, f"{month[0]:,} jobs")
                figures["export of a month: pods/s"] = (month[1] / took, f"{month[1]:,} pods")
    return figures
