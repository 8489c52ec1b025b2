"""The tables as kubectl's read (decision 30): at 80 columns the columns that tell
most, status, type, reason and message never left out, a remark cut to its reason and
exit code; at 120 more of each; to a pipe every column whole, the wide ones with
``-o wide``, where the cluster's uid is whole too."""

import asyncio
import datetime
import os
import shlex
import subprocess

import pytest

from jobarchive.config import DbTls
from jobarchive.core.rows import FailureRow
from jobarchive.recording.convert import workloads as wl
from jobarchive.storage import database as db
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.kueue import Attempt, Wait
from jobarchive.storage.store import Store
from testbed import objects as o
from tests.support.history import History
from tests.support.small_archive import JOBARCHIVE, fill, run

REMARK = "OOMKilled (exit code 137): the container used more memory than its limit"
SINCE = ("--since", "2000-01-01")


async def oom_history(url: str) -> str:
    """The small archive, plus a job whose pod was OOM-killed with the kubelet's message."""
    await fill(url)
    await db.open_database(url, encryption=DbTls())
    try:
        async with History() as history:
            job = await history.job("oom", namespace="team-c", status="Failed", owner="dora")
            running = o.running_status("pytorch", "img", "10.0.0.9", "172.16.0.9")
            killed = o.terminated_status(
                running, 137, "OOMKilled", "2026-11-20T10:20:00Z", REMARK.partition(": ")[2]
            )
            await history.pod(job, "Worker", 0, killed)
        uid = str(job["metadata"]["uid"])
        await kueue_admitted(uid)
        await Store().upsert(FailedJob, [classed(uid)])
        return uid
    finally:
        await db.close_database()


def classed(uid: str) -> FailureRow:
    """The job's failure class, as the classifying pass writes it (decision 42)."""
    return {
        "job_id": uid,
        "version": "1",
        "namespace": "team-c",
        "failure_class": "OOMKilled",
        "pod_id": "pod-1",
        "pod_name": "oom-worker-0",
        "container": "pytorch",
        "exit_code": 137,
        "signal": 9,
        "detail": "OOMKilled",
        "derived_exit_code": 137,
        "gmt_created": None,
    }


async def kueue_admitted(uid: str) -> None:
    """Kueue's two attempts of the job, the first preempted, and the long reason it
    waited before them."""
    now = datetime.datetime(2026, 11, 21, tzinfo=datetime.UTC)
    for state in ("preempted", "finished"):
        attempt = wl.observe(o.fixture(f"kueue/{state}.yaml"), now).attempt
        assert attempt is not None
        await Store().upsert(Attempt, [{**attempt, "job_id": uid}])
    wait = wl.observe(o.fixture("kueue/pending.yaml"), now).wait
    assert wait is not None
    await Store().upsert(Wait, [{**wait, "job_id": uid}])


@pytest.fixture
def archive(db_url: str) -> tuple[str, str]:
    return db_url, asyncio.run(oom_history(db_url))


def widest(text: str) -> int:
    return max(len(line.rstrip()) for line in text.splitlines())


def header(text: str, title: str) -> list[str]:
    """The column headers of the table under the line ``title``."""
    lines = text.splitlines()
    return [cell.strip() for cell in lines[lines.index(title) + 1].split("┃")]


def test_at_80_columns_each_table_keeps_what_tells_most(archive: tuple[str, str]) -> None:
    url, _ = archive
    jobs = run(url, "jobs", COLUMNS="80").stdout
    assert widest(jobs) <= 80, jobs
    assert header(jobs, "4 jobs") == ["job", "kind", "status", "age", "took", "owner", "failure"]
    [oom] = [line for line in jobs.splitlines() if line.startswith("team-c/oom ")]
    assert oom.rstrip().endswith("OOMKilled")
    assert "left out" not in jobs
    events = run(url, "events", *SINCE, COLUMNS="80").stdout
    assert widest(events) <= 80, events
    assert {"type", "reason", "message"} <= set(header(events, "1 Events"))
    usage = run(url, "usage", *SINCE, "--by", "namespace", COLUMNS="80").stdout
    assert widest(usage) <= 80, usage
    title = next(line for line in usage.splitlines() if line.startswith("usage by"))
    assert {"wait p50", "wait p95", "top failure classes"} <= set(header(usage, title))
    failures = run(url, "usage", *SINCE, "--by", "failure", COLUMNS="80").stdout
    assert widest(failures) <= 80, failures
    title = next(line for line in failures.splitlines() if line.startswith("usage by"))
    assert header(failures, title)[:2] == ["failure", "jobs"]
    job = run(url, "job", "team-c/oom", COLUMNS="80").stdout
    assert widest(job) <= 80, job
    assert "OOMKilled (exit 137)" in job and "the container used" not in job
    assert {"status", "remark"} <= set(header(job, "pods"))
    # Its Kueue attempts and the reason it waited, Kueue's message cut to fit.
    assert "Attempts: 2, 1 preempted" in job
    assert "  #1 2026-11-20 10:05 cq-a100/a100 55m Preempted by job 7d3b1f9a" in job
    assert "Waited: Pending for 0s: couldn't assign flavors" in job


def test_at_120_columns_a_remark_is_whole_and_nothing_is_left_out(
    archive: tuple[str, str],
) -> None:
    url, _ = archive
    for args in (["jobs"], ["events", *SINCE], ["job", "team-c/oom"]):
        shown = run(url, *args, COLUMNS="120").stdout
        assert widest(shown) <= 120, shown
        assert "left out" not in shown
    shown = run(url, "job", "team-c/oom", COLUMNS="120").stdout
    assert "OOMKilled (exit 137): the container used more memory" in shown


def test_to_a_pipe_every_column_is_whole_and_wide_adds_the_uids(
    archive: tuple[str, str],
) -> None:
    url, uid = archive
    environ = {key: value for key, value in os.environ.items() if key != "COLUMNS"}

    def piped(*args: str) -> str:
        done = subprocess.run(
            [str(JOBARCHIVE), *args],
            env={**environ, "JOBARCHIVE_DB_URL": url},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    shown = piped("job", "team-c/oom")
    assert REMARK in shown and "…" not in shown and "left out" not in shown
    assert uid not in piped("jobs")
    wide = piped("jobs", "-o", "wide")
    line = next(line for line in wide.splitlines() if "team-c/oom" in line)
    assert uid in line and "dora" in line and "2026-11-20 10:00:00" in line
    assert header(wide, "4 jobs")[-2:] == ["uid", "cluster"]
    assert header(piped("events", *SINCE, "-o", "wide"), "1 Events")[-1] == "cluster"


def test_a_command_it_prints_runs_as_printed_where_the_path_does_not_find_it(
    archive: tuple[str, str],
) -> None:
    url, _ = archive
    # Run by its path, as `.venv/bin/jobarchive` is from a checkout: so it names itself.
    elsewhere = {"PATH": "/usr/bin:/bin"}
    hint = run(url, "jobs", "--limit", "1", **elsewhere).stdout.splitlines()[-1]
    words = shlex.split(hint.partition("; more: ")[2])
    assert words[0] == str(JOBARCHIVE), hint
    again = subprocess.run(
        words,
        env={**os.environ, **elsewhere, "JOBARCHIVE_DB_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert again.returncode == 0 and "Showing 1 jobs" in again.stdout, again.stderr
