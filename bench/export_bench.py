"""``jobarchive export`` over the usage benchmark's month (decision 34): a month's
export, its rate in jobs and pods a second and its peak RSS, and one day's, beside
``jobarchive jobs``'s page time and RSS, in the same run on the same data; a month's RSS
near a day's says memory does not grow with the window. Each command is the console
script as a user runs it."""

import os
import subprocess
import tempfile
import time

from bench.cli_bench import JOBARCHIVE, timed
from bench.usage_bench import MONTH, UNTIL, fill_month
from jobarchive.config import DbTls
from jobarchive.storage import database as db

DAY = (MONTH.date().isoformat(), MONTH.date().replace(day=2).isoformat())
WHOLE = (MONTH.date().isoformat(), UNTIL.date().isoformat())


def _peak(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Seconds from start to exit, the process's peak RSS in MB, and what it printed.
    The peak is its VmHWM, read every 20 ms while it runs: ru_maxrss would start at this
    process's own RSS, which a forked child inherits."""
    with tempfile.TemporaryFile("w+") as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.DEVNULL)
        peak = 0
        while process.poll() is None:
            peak = max(peak, _hwm(process.pid))
            time.sleep(0.02)
        took = time.perf_counter() - started
        out.seek(0)
        printed = out.read().strip()
    if process.returncode != 0:
        raise RuntimeError(f"{command[1]} failed: {printed}")
    return took, peak / 1024, printed


def _hwm(pid: int) -> int:
    """A running process's peak RSS in kB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


async def run(url: str, jobs: int, pods_per_job: int) -> dict[str, tuple[float, str]]:
    """Fill a database, then time the commands: name -> (figure, note)."""
    await db.open_database(url, encryption=DbTls())
    try:
        started = time.perf_counter()
        await fill_month(jobs, pods_per_job)
        await db.connection().execute_script("ANALYZE TABLE job_info, replica_info")
        print(f"  (filled in {time.perf_counter() - started:.0f} s)", flush=True)
    finally:
        await db.close_database()
    env = {**os.environ, "JOBARCHIVE_DB_URL": url}
    page = [str(JOBARCHIVE), "jobs", "--limit", "50"]
    page_p50, page_p99 = timed(page, env)
    figures = {
        "jobarchive jobs, a page of 50 (baseline): s": (page_p50, f"p99 {page_p99:.2f}"),
        "jobarchive jobs: peak RSS, MB": (_peak(page, env)[1], ""),
    }
    with tempfile.TemporaryDirectory() as folder:
        for name, (since, until) in (("a day", DAY), ("the month", WHOLE)):
            command = [str(JOBARCHIVE), "export", "--since", since, "--until", until]
            took, rss, printed = _peak([*command, "--to", f"{folder}/{since}-{until}"], env)
            figures[f"export of {name}: s"] = (took, printed.split(" to ")[0])
            figures[f"export of {name}: peak RSS, MB"] = (rss, "")
    took = figures["export of the month: s"][0]
    figures["export of the month: jobs/s"] = (jobs / took, f"{jobs:,} jobs")
    figures["export of the month: pods/s"] = (jobs * pods_per_job / took, "")
    return figures
