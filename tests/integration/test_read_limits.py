"""Reads are bounded on the server: a statement past its request's deadline is stopped
by the database itself (answered 504 by the API, in one line by the CLI), and requests
beyond the read pool wait a second, then are answered 503 with Retry-After.

A statement that must take long is one reading a table another session holds locked:
it waits for the lock on the server, as a genuinely slow statement runs there."""

import asyncio
import pathlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from jobarchive.config import DbTls
from jobarchive.reading import api, auth
from jobarchive.storage import database as db
from jobarchive.storage.readpool import QueryTimeout, ReadPool, deadline
from testbed.mariadb import Databases
from tests.support.commands import jobarchive
from tests.support.sessions import locked, running
from tests.support.waiting import eventually

Client = TestClient[web.Request, web.Application]
# Seconds a loaded machine may add to an answer due at a deadline. The deadlines' lower
# bounds are exact; the upper ones only tell an answer at its deadline from one that
# never came, and are generous, so that a busy machine never fails them.
LOADED = 10.0


@pytest.fixture(scope="module")
def limits_url(mysql_databases: Databases) -> str:
    return mysql_databases.create("jobarchive_limits")


@pytest.fixture
async def reading(limits_url: str) -> AsyncIterator[str]:
    """The archive open with a read pool of 2 connections."""
    await db.open_database(limits_url, encryption=DbTls(), read_pool=ReadPool(limits_url, 2))
    yield limits_url
    await db.close_database()


async def ask(client: Client, path: str) -> tuple[int, dict[str, Any], str | None, float]:
    """Status, body, Retry-After and the seconds the answer took."""
    started = time.monotonic()
    response = await client.get(api.PREFIX + path)
    body = await response.json()
    return response.status, body, response.headers.get("Retry-After"), time.monotonic() - started


async def test_a_query_past_the_timeout_is_stopped_by_the_database_and_answered_504(
    reading: str,
) -> None:
    async with TestClient(TestServer(api.Api(auth.NoAuth(), timeout=1.0).app())) as client:
        with locked(reading, "job_info"):
            status, body, _, took = await ask(client, "/jobs?namespace=team-a")

            assert status == 504, body
            assert "took longer than 1 s and was stopped" in body["error"]["message"]
            assert 1.0 <= took < 1.0 + api.BACKSTOP + LOADED

            async def gone() -> bool:
                return running(reading, "job_info") == 0

            # Stopped by the database at the deadline, not abandoned by the API's backstop:
            # still locked, yet nothing of the request's waits for it on the server.
            await eventually(gone, within=LOADED, interval=0.05)


async def test_requests_beyond_the_read_pool_wait_a_second_then_get_503_with_retry_after(
    reading: str,
) -> None:
    app = api.Api(auth.NoAuth(), timeout=3.0, concurrency=2).app()
    peak = 0

    async def sample(until: asyncio.Event) -> None:
        nonlocal peak
        while not until.is_set():
            peak = max(peak, await asyncio.to_thread(running, reading, "job_info"))
            await asyncio.sleep(0.05)

    async with TestClient(TestServer(app)) as client:
        with locked(reading, "job_info"):
            done = asyncio.Event()
            sampler = asyncio.create_task(sample(done))
            answers = await asyncio.gather(*(ask(client, "/jobs") for _ in range(5)))
            done.set()
            await sampler

    by_status = sorted(answers, key=lambda answer: answer[0])
    assert [status for status, *_ in by_status] == [503, 503, 503, 504, 504]
    for _, body, retry_after, took in by_status[:3]:
        assert retry_after == "1"
        assert body["error"]["status"] == 503 and "busy" in body["error"]["message"]
        assert 1.0 <= took < 1.0 + LOADED
    # The two that got a connection ran until their deadline; no more ever ran at once.
    assert all(3.0 <= took < 3.0 + api.BACKSTOP + LOADED for *_, took in by_status[3:])
    assert peak == 2


SLOW = {
    "mysql": "SELECT SLEEP(30) AS slept",
    # Counts for ever: nothing in SQLite stops it but an interruption.
    "sqlite": "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) "
    "SELECT COUNT(*) AS slept FROM n",
}


async def test_a_statement_is_stopped_at_its_deadline_and_its_connection_answers_next(
    db_url: str,
) -> None:
    await db.open_database(db_url, encryption=DbTls(), read_pool=ReadPool(db_url, 1))
    try:
        reader = db.reader()
        started = time.monotonic()
        with deadline(0.5), pytest.raises(QueryTimeout):
            await reader.execute_query(SLOW[reader.capabilities.dialect])
        # At its deadline, not when it would end by itself (in 30 s, or never).
        assert 0.5 <= time.monotonic() - started < 0.5 + LOADED

        # The connection answers next, not after the stopped statement would have run.
        started = time.monotonic()
        _, rows = await reader.execute_query("SELECT 1 AS one")
        assert rows[0]["one"] == 1 and time.monotonic() - started < LOADED
    finally:
        await db.close_database()


async def test_the_cli_says_in_one_line_that_the_database_stopped_its_query(
    reading: str, tmp_path: pathlib.Path
) -> None:
    env = {"JOBARCHIVE_DB_URL": reading, "JOBARCHIVE_API_TIMEOUT": "1"}
    with locked(reading, "event_info"):
        result = await asyncio.to_thread(
            jobarchive, "events", "-n", "team-a", cwd=tmp_path, env=env
        )

    assert result.returncode == 1, result.stderr
    assert result.stderr.strip() == (
        "Error: the query ran longer than 1 s (JOBARCHIVE_API_TIMEOUT) and was stopped: "
        "narrow it, or allow it more time"
    )
