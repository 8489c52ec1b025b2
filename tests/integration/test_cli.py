"""The ``jobarchive`` console script, run as a user runs it, on both databases."""

import asyncio
import json
import os
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from testbed.ports import free_port
from tests.support.console import keep_log_tail
from tests.support.kinds import EXTRA_KINDS
from tests.support.small_archive import JOBARCHIVE, fill, run


@pytest.fixture
def filled(db_url: str) -> tuple[str, str]:
    return db_url, asyncio.run(fill(db_url))


def test_jobs_lists_newest_first_as_a_table_and_as_json(filled: tuple[str, str]) -> None:
    url, _ = filled
    table = run(url, "jobs")
    assert table.returncode == 0, table.stderr
    assert table.stdout.index("team-b/bert") < table.stdout.index("team-a/mnist")
    listed = json.loads(run(url, "jobs", "--owner", "alice", "-o", "json").stdout)
    assert [job["name"] for job in listed["items"]] == ["mnist"]
    assert listed["next_cursor"] is None
    first = json.loads(run(url, "jobs", "--limit", "1", "-o", "json").stdout)
    rest = json.loads(run(url, "jobs", "--cursor", first["next_cursor"], "-o", "json").stdout)
    assert [j["name"] for j in first["items"] + rest["items"]] == ["bert", "mnist", "old"]
    gone = json.loads(run(url, "jobs", "--gone", "-o", "json").stdout)
    assert [job["name"] for job in gone["items"]] == ["old"]


def test_job_shows_pods_replicas_and_events(filled: tuple[str, str]) -> None:
    url, uid = filled
    shown = run(url, "job", "team-a/mnist")
    assert shown.returncode == 0, shown.stderr
    for text in ("OOMKilled", "10.0.0.12", "OOMKilling", "worker"):
        assert text in shown.stdout
    detail = json.loads(run(url, "job", uid, "-o", "json").stdout)
    assert detail["replicas"]["worker"]["failed"] == 1
    assert [event["reason"] for event in detail["events"]] == ["OOMKilling"]
    missing = run(url, "job", "team-a/nothing")
    assert missing.returncode == 1 and "no job team-a/nothing" in missing.stderr
    # NAMESPACE/UID names that incarnation, as the aggregated API reads it; in its namespace.
    assert json.loads(run(url, "job", f"team-a/{uid}", "-o", "json").stdout) == detail
    elsewhere = run(url, "job", f"team-b/{uid}")
    assert elsewhere.returncode == 1 and f"no job team-b/{uid}" in elsewhere.stderr


def test_events_and_stats(filled: tuple[str, str]) -> None:
    url, _ = filled
    warnings = json.loads(
        run(url, "events", "--type", "Warning", "--since", "2000-01-01", "-o", "json").stdout
    )
    assert [event["reason"] for event in warnings["items"]] == ["OOMKilling"]
    stats = json.loads(run(url, "stats", "--by", "owner", "-o", "json").stdout)
    assert {row["owner"]: row["jobs"] for row in stats["items"]} == {"alice": 1, "bob": 1, "": 1}
    assert "Failed" in run(url, "stats").stdout


def test_prune_dry_run_then_for_real(filled: tuple[str, str]) -> None:
    url, _ = filled
    dry = run(url, "prune", "--days", "30", "--dry-run")
    assert dry.stdout.startswith("Would delete 1 jobs"), dry.stderr
    assert run(url, "prune", "--days", "30").stdout.startswith("Deleted 1 jobs")
    assert "old" not in run(url, "jobs").stdout
    assert run(url, "prune").returncode == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["jobs", "--status", "Exploded"], "status: 'Exploded' is not one of"),
        (["jobs", "--created-since", "yesterday"], "--created-since: 'yesterday'"),
        (["jobs", "--cursor", "nonsense"], "cursor: not a cursor"),
        (["events", "--limit", "100000"], "limit: 100000 is outside"),
    ],
)
def test_bad_input_exits_2_with_one_clear_line(
    filled: tuple[str, str], args: list[str], message: str
) -> None:
    result = run(filled[0], *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_kind_the_environment_adds_is_a_filter_of_the_commands(
    filled: tuple[str, str],
) -> None:
    url, _ = filled
    refused = run(url, "jobs", "--kind", "LLMJob")
    assert refused.returncode == 2 and "kind: 'LLMJob' is not one of" in refused.stderr
    listed = run(url, "jobs", "--kind", "LLMJob", "-o", "json", **EXTRA_KINDS)
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == {"items": [], "next_cursor": None}


async def store_tails(url: str, job_uid: str, pod: dict[str, str], restarts: int) -> None:
    await db.open_database(url, encryption=DbTls())
    try:
        job = {"metadata": {"uid": job_uid}}
        body = {"metadata": {"namespace": "team-a", "name": pod["name"], "uid": pod["pod_id"]}}
        for restart in range(restarts):
            await keep_log_tail(job, body, f"attempt {restart} failed\n".encode(), 1, restart)
    finally:
        await db.close_database()


def test_logs_pages_a_jobs_tails_and_says_when_there_are_more(filled: tuple[str, str]) -> None:
    url, uid = filled
    [pod] = json.loads(run(url, "job", uid, "-o", "json").stdout)["pods"]
    assert pod["has_log_tail"] is False
    asyncio.run(store_tails(url, uid, pod, 3))
    assert f"Log tails: jobarchive logs {uid}" in run(url, "job", uid).stdout
    first = run(url, "logs", uid, "--limit", "2")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert [line for line in lines if line.startswith("attempt")] == [
        "attempt 2 failed",
        "attempt 1 failed",
    ]
    shown, _, command = lines[-1].partition("; more: ")
    assert shown == "Showing 2 log tails"
    assert shlex.split(command)[:5] == ["jobarchive", "logs", uid, "--limit", "2"]
    rest = json.loads(run(url, *shlex.split(command)[1:], "-o", "json").stdout)
    assert [found["log_tail"] for found in rest["items"]] == ["attempt 0 failed\n"]
    assert rest["next_cursor"] is None


def test_serve_answers_the_api_over_http(filled: tuple[str, str]) -> None:
    url, uid = filled
    port = free_port()
    env = {**os.environ, "JOBARCHIVE_DB_URL": url}
    server = subprocess.Popen(
        [str(JOBARCHIVE), "serve", "--auth", "none", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/api/v1"
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"{base}/jobs/{uid}", timeout=5) as response:
                    detail = json.load(response)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("jobarchive serve never answered")
        assert detail["name"] == "mnist"
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"{base}/jobs?status=Exploded", timeout=5)
        assert refused.value.code == 400
        assert "Exploded" in json.load(refused.value)["error"]["message"]
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_serve_on_a_taken_port_says_so_and_exits(filled: tuple[str, str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(filled[0], "serve", "--auth", "none", "--port", str(port))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
