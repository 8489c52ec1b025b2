"""Stored text made to act on whoever reads it (issue 24's probe: terminal escape
sequences, rich markup, a bidi override, NUL, a C1 control) in a job's tenancy, a pod's
termination, an Event and a log tail, read back through the real ``jobarchive``
command (piped, and with rich made to believe it writes to a terminal) and through the
console: every command exits 0, and every such character is shown as its escape."""

import asyncio
import json
import os
import re
import subprocess
import unicodedata
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.config import DbTls
from jobarchive.core.visible import HIDDEN
from jobarchive.reading import api, auth
from jobarchive.storage import database as db
from testbed import objects as o
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.console import keep_log_tail
from tests.support.history import History

PROBES = (
    "\x1b]0;owned\x07",  # the window's title
    "\x1b]52;c;ZXZpbA==\x07",  # a write to the clipboard
    "\x1b[2J",  # the screen cleared
    "\x1b[8m",  # what follows concealed
    "\x1b[10;1H",  # the cursor moved
    "[link=https://evil.example/login]x[/link]",  # rich's markup for an OSC 8 hyperlink
    "x[/]",
    "[/bold]",
    "\u202e",  # right-to-left override
    "\x00",
    "\x9b",  # CSI as one C1 byte
    "<img src=x>",
)
HOSTILE = "".join(PROBES)
# Each probe's control, as it must be shown instead.
ESCAPES = ("\\x1b]0;owned\\x07", "\\x1b]52;", "\\x1b[2J", "\\u202e", "\\x00", "\\x9b")
LOG = f"step 1\tloss 0.5\n{HOSTILE}\n10%\r20%\r\nCUDA out of memory\n".encode()
# What rich writes itself on a terminal: Select Graphic Rendition (bold, italic, reset).
RICH_STYLE = re.compile(rb"\x1b\[[0-9;]*m")
Client = TestClient[web.Request, web.Application]


async def record() -> dict[str, str]:
    """The probe's values where a tenant or a workload can put them, on the open archive;
    the hostile job's uid."""
    async with History() as history:
        job = await history.job(
            "hostile", status="Failed", finished=o.T0, owner=HOSTILE, tenant=HOSTILE
        )
        await history.job("brackets", owner="x[/]", tenant="x[/]")
        running = o.running_status("tensorflow", "img", "10.0.0.12", "172.16.0.12")
        ended = o.terminated_status(running, 137, HOSTILE, o.T0, message=HOSTILE)
        worker = await history.pod(job, "Worker", 0, ended)
        await history.event(worker, "OOMKilling", HOSTILE, type="Warning")
        await history.event(job, "Closing", "[/bold]")
        await history.event(job, "Evil\x1b[2J\u202e", "[link=https://evil.example/login]x[/link]")
    await keep_log_tail(job, worker, LOG)
    return {"uid": job["metadata"]["uid"]}


@pytest.fixture
def stored(db_url: str) -> tuple[str, dict[str, str]]:
    async def fill() -> dict[str, str]:
        await db.open_database(db_url, encryption=DbTls())
        try:
            for table in ("job_info", "replica_info", "event_info", "container_log_tail"):
                await db.connection().execute_script(f"DELETE FROM {table}")
            return await record()
        finally:
            await db.close_database()

    return db_url, asyncio.run(fill())


def run(url: str, *args: str, terminal: bool = False) -> subprocess.CompletedProcess[bytes]:
    """``jobarchive ARGS`` piped, its output as bytes; with ``terminal``, rich told its
    output is a terminal (``TTY_COMPATIBLE``, ``FORCE_COLOR``), as it would see one."""
    env = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    env.update(JOBARCHIVE_DB_URL=url, COLUMNS="1000")  # no cell folded
    env.pop("NO_COLOR", None)
    if terminal:
        env.update(TTY_COMPATIBLE="1", FORCE_COLOR="1", TERM="xterm-256color")
    return subprocess.run([str(JOBARCHIVE), *args], env=env, capture_output=True, timeout=60)


def commands(job: dict[str, str]) -> list[list[str]]:
    return [
        ["events"],
        ["job", job["uid"]],
        ["jobs"],
        ["stats", "--by", "owner"],
        ["stats", "--by", "tenant"],
        ["logs", job["uid"]],
    ]


def hidden(text: str) -> list[str]:
    """The characters of HIDDEN categories in ``text``, but line breaks and tabs."""
    return [c for c in text if unicodedata.category(c) in HIDDEN and c not in "\n\t"]


def shown(result: subprocess.CompletedProcess[bytes]) -> str:
    """A command's output, once it is known to have exited 0 with no ESC byte in it and
    valid UTF-8 only."""
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert result.stderr == b"" and b"\x1b" not in result.stdout
    return result.stdout.decode("utf-8")


def test_every_command_exits_0_and_shows_each_control_as_its_escape(
    stored: tuple[str, dict[str, str]],
) -> None:
    url, job = stored
    for args in commands(job):
        text = shown(run(url, *args))
        assert hidden(text) == [] and all(escape in text for escape in ESCAPES), args
    events = shown(run(url, "events"))
    assert "[link=https://evil.example/login]x[/link]" in events and "[/bold]" in events
    assert "x[/]" in shown(run(url, "stats", "--by", "owner"))
    logs = shown(run(url, "logs", job["uid"])).splitlines()
    assert "step 1\tloss 0.5" in logs and "20%" in logs  # a progress bar as a terminal left it


def test_on_a_terminal_no_sequence_reaches_it_but_richs_own_styles(
    stored: tuple[str, dict[str, str]],
) -> None:
    url, job = stored
    for args in commands(job):
        result = run(url, *args, terminal=True)
        assert result.returncode == 0, result.stderr.decode(errors="replace")
        output = result.stdout
        if args[0] != "logs":  # plain lines: rich has no part in them
            assert RICH_STYLE.search(output), args  # rich did write for a terminal
        assert b"\x1b]" not in output, args  # no title, clipboard write or OSC 8 link
        assert b"\x1b[8m" not in output and b"\x1b[2J" not in output, args
        unstyled = RICH_STYLE.sub(b"", output).decode("utf-8")
        assert "\x1b" not in unstyled and hidden(unstyled) == [], args
        assert all(escape in unstyled for escape in ESCAPES), args


def test_json_output_is_ascii_and_holds_the_values_exactly(
    stored: tuple[str, dict[str, str]],
) -> None:
    url, job = stored
    answers: dict[str, Any] = {}
    for args in [*commands(job), ["jobs", "--owner", "x[/]"]]:
        result = run(url, *args, "-o", "json")
        assert result.returncode == 0 and result.stdout.isascii(), args
        answers[" ".join(args)] = json.loads(result.stdout)
    assert {event["message"] for event in answers["events"]["items"]} >= {HOSTILE, "[/bold]"}
    assert (
        answers[f"job {job['uid']}"]["pods"][0]["remark"] == f"{HOSTILE} (exit code 137): {HOSTILE}"
    )
    assert [row["owner"] for row in answers["stats --by owner"]["items"]].count(HOSTILE) == 1
    assert [tail["log_tail"] for tail in answers[f"logs {job['uid']}"]["items"]] == [LOG.decode()]
    assert [found["name"] for found in answers["jobs --owner x[/]"]["items"]] == ["brackets"]


@pytest.fixture
async def client(database: str) -> AsyncIterator[tuple[Client, dict[str, str]]]:
    job = await record()
    async with TestClient(TestServer(api.Api(auth.NoAuth()).site())) as test_client:
        yield test_client, job


async def test_the_console_shows_each_control_as_its_escape_and_html_as_text(
    client: tuple[Client, dict[str, str]],
) -> None:
    browser, job = client
    stats = "/stats?since=2026-11-01&until=2026-12-01"
    for path in ("/", f"/job?uid={job['uid']}", f"/logs?uid={job['uid']}", stats):
        response = await browser.get(path)
        html = await response.text()
        assert response.status == 200, html
        assert hidden(html.replace("\r\n", "\n")) == [], path
        assert all(escape in html for escape in ESCAPES), path
        assert "&lt;img src=x&gt;" in html and "<img src=x>" not in html, path
    logs = await (await browser.get(f"/logs?uid={job['uid']}")).text()
    assert "step 1\tloss 0.5\n" in logs and "10%\\r20%\r\n" in logs
