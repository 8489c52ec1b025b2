"""The command line as a person meets it at a terminal (decision 30): tables that fit
it, uids and names never broken, refusals that name the flag typed and say an unknown
value is unknown, and every cut listing saying there is more and how to see it."""

import asyncio
import fcntl
import json
import os
import pty
import re
import shlex
import struct
import subprocess
import termios

import pytest

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from testbed import objects as o
from tests.support.history import History
from tests.support.small_archive import JOBARCHIVE, fill, run

# A job name as long as they come in practice; with its uid it passes 80 columns.
LONG_NAME = "llama-finetune-lora-rank64-lr3e-4-" + "x" * 20


async def more_history(url: str) -> str:
    """The test_cli archive, plus a job of a long name with three pods and three Events."""
    await fill(url)
    await db.open_database(url, encryption=DbTls())
    try:
        async with History() as history:
            job = await history.job(LONG_NAME, status="Failed", owner="carol")
            for index in range(3):
                failed = o.terminated_status(
                    o.running_status("pytorch", "img", f"10.0.0.{index}", f"172.16.0.{index}"),
                    1,
                    "Error",
                    "2026-11-20T10:20:00Z",
                )
                pod = await history.pod(job, "Worker", index, failed)
                await history.event(pod, "BackOff", f"Back-off restarting {index} " * 8)
        return str(job["metadata"]["uid"])
    finally:
        await db.close_database()


@pytest.fixture
def archive(db_url: str) -> tuple[str, str]:
    return db_url, asyncio.run(more_history(db_url))


def widest(text: str) -> int:
    return max(len(line.rstrip()) for line in text.splitlines())


def test_at_80_columns_a_table_fits_and_keeps_names_and_uids_whole(
    archive: tuple[str, str],
) -> None:
    url, uid = archive
    listed = run(url, "jobs", COLUMNS="80")
    assert listed.returncode == 0, listed.stderr
    assert widest(listed.stdout) <= 80
    assert any(f"team-a/{LONG_NAME}" in line for line in listed.stdout.splitlines())
    assert "left out for want of room:" in listed.stdout
    shown = run(url, "job", uid, COLUMNS="80")
    # A pod's name, its status and remark are never cut or left out (decision 30): past
    # 80 columns only where they alone are wider (the terminal wraps that line).
    for index in range(3):
        pod = f"{LONG_NAME}-worker-{index} "
        [line] = [line for line in shown.stdout.splitlines() if line.startswith(pod)]
        assert "Failed" in line and "Error (exit code 1)" in line, shown.stdout
    assert widest(shown.stdout.split("\npods\n")[0]) <= 80
    cut = run(url, "job", "team-a/mnist", COLUMNS="80").stdout
    assert widest(cut) <= 80 and "Memory cgroup out of" in cut and "…" in cut


def test_wide_shows_every_column_whole(archive: tuple[str, str]) -> None:
    url, uid = archive
    # The uid and the cluster are -o wide's (decision 30), nothing left out for them.
    narrower = run(url, "jobs", COLUMNS="200").stdout
    assert "left out" not in narrower and uid not in narrower
    listed = run(url, "jobs", "-o", "wide", COLUMNS="80")
    assert "left out" not in listed.stdout
    line = next(line for line in listed.stdout.splitlines() if LONG_NAME in line)
    assert uid in line and "carol" in line and "Failed" in line and "default" in line


def test_not_a_terminal_nothing_is_cut_or_wrapped(archive: tuple[str, str]) -> None:
    url, _ = archive
    environ = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    events = subprocess.run(
        [str(JOBARCHIVE), "events", "--namespace", "team-a"],
        env={**environ, "JOBARCHIVE_DB_URL": url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert events.returncode == 0, events.stderr
    assert "…" not in events.stdout and "left out" not in events.stdout
    assert ("Back-off restarting 2 " * 8).strip() in events.stdout


def test_in_a_terminal_of_80_columns_a_uid_is_one_piece(archive: tuple[str, str]) -> None:
    url, _ = archive
    [mnist] = json.loads(run(url, "jobs", "--owner", "alice", "-o", "json").stdout)["items"]
    environ = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    process = subprocess.Popen(
        [str(JOBARCHIVE), "jobs", "--owner", "alice", "-o", "wide"],
        env={**environ, "JOBARCHIVE_DB_URL": url, "TERM": "dumb"},
        stdout=follower,
        stderr=subprocess.PIPE,
    )
    os.close(follower)
    written = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower closed: the command is done
            break
        if not chunk:
            break
        written += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0
    text = written.decode()
    # -o wide in a terminal: every column whole, the uid in one piece on its row (wider
    # than the terminal, which wraps it as kubectl's -o wide is wrapped).
    [row] = [line for line in text.splitlines() if "team-a/mnist" in line]
    assert mnist["job_id"] in row and "left out" not in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["jobs", "--name-contains", "llama"],
            "--name-contains: no index serves it; name a --namespace or a --created-since",
        ),
        (["jobs", "--region", "eu-1"], "--region: no index serves it"),
        (["jobs", "--status", "Bogus", "--region", "eu-1"], "--status: 'Bogus' is not one of"),
        (["jobs", "--kind", "Bogus"], "--kind: 'Bogus' is not one of"),
        (["events", "--type", "Bogus"], "--type: 'Bogus' is not one of Normal, Warning"),
        (["events", "--kind", "Bogus"], "--kind: 'Bogus' is not one of"),
        (["jobs", "--limit", "0"], "--limit: 0 is outside 1..500"),
        (["stats", "--by", "color"], "--by: 'color' is not one of"),
        (["logs", "team-a/mnist", "--limit", "500"], "--limit: 500 is outside 1..100"),
        (["job", "team-a/mnist", "--pods-cursor", "x"], "cursor: not a cursor"),
    ],
)
def test_a_refusal_names_the_flag_typed_and_an_unknown_value_comes_first(
    archive: tuple[str, str], args: list[str], message: str
) -> None:
    refused = run(archive[0], *args)
    assert refused.returncode == 2
    assert message in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr


def test_events_sifted_alone_are_the_last_seven_days_said_so(archive: tuple[str, str]) -> None:
    for args in (["--type", "Warning"], ["--object", "x"], ["--kind", "Pod", "--type", "Normal"]):
        answered = run(archive[0], "events", *args)
        assert answered.returncode == 0, answered.stderr
        [note] = answered.stderr.splitlines()
        assert re.fullmatch(
            r"Events of the last 7 days \(--since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\); name an "
            r"earlier --since, or a --namespace, to read further back",
            note,
        ), note
    # Led by an indexed filter, the window is the one asked for, and nothing is said.
    led = run(archive[0], "events", "--type", "Warning", "--namespace", "team-a")
    assert (led.returncode, led.stderr) == (0, "")


def follow(line: str) -> list[str]:
    """The arguments of the command a "more" line offers, without the program's name."""
    shown, _, command = line.partition("; more: ")
    assert shown.startswith("Showing "), line
    words = shlex.split(command)
    assert words[0] == "jobarchive"
    return words[1:]


def test_a_cut_list_says_so_with_the_command_that_goes_on(archive: tuple[str, str]) -> None:
    url, _ = archive
    first = run(url, "jobs", "--namespace", "team-a", "--in-cluster", "--limit", "1").stdout
    assert first.splitlines()[-1].startswith("Showing 1 jobs; more: jobarchive jobs ")
    words = follow(first.splitlines()[-1])
    assert words[:6] == ["jobs", "--namespace", "team-a", "--in-cluster", "--limit", "1"]
    rest = json.loads(run(url, *words, "-o", "json").stdout)
    assert [job["name"] for job in rest["items"]] == ["mnist"] and rest["next_cursor"] is None
    # A URL on the command line may hold a password: the command to copy never shows it.
    named = run(url, "--db-url", url, "jobs", "--limit", "1").stdout.splitlines()[-1]
    assert "--db-url" not in named and url not in named and "--cursor" in named
    since = run(url, "events", "--since", "2000-01-01", "--limit", "2").stdout.splitlines()
    rest = json.loads(run(url, *follow(since[-1]), "-o", "json").stdout)
    assert len(rest["items"]) == 2 and rest["next_cursor"] is None


def test_a_jobs_pods_and_events_say_how_many_and_how_to_see_more(
    archive: tuple[str, str],
) -> None:
    url, _ = archive
    shown = run(url, "job", f"team-a/{LONG_NAME}", "--limit", "2", COLUMNS="200").stdout
    lines = shown.splitlines()
    [pods] = [line for line in lines if line.startswith("Showing 2 of 3 pods; more: ")]
    [events] = [line for line in lines if line.startswith("Showing 2 Events; more: ")]
    rest = json.loads(run(url, *follow(pods), "-o", "json").stdout)
    assert [pod["name"] for pod in rest["pods"]] == [f"{LONG_NAME}-worker-2"]
    assert "--events-cursor" in follow(events)


def test_a_list_that_is_whole_says_nothing_more(archive: tuple[str, str]) -> None:
    url, uid = archive
    for args in (["jobs"], ["job", uid], ["events", "--namespace", "team-a"]):
        assert "more:" not in run(url, *args).stdout
