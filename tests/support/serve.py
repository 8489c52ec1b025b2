"""A real ``jobarchive serve`` as a process, and what the tests read of it over HTTP."""

import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.reading.api import PREFIX
from jobarchive.reading.queries import MAX_PAGE
from testbed.ports import free_port
from tests.support.commands import DATABASE_VARIABLES, JOBARCHIVE
from tests.support.waiting import answering


@dataclasses.dataclass(frozen=True)
class Running:
    """A ``jobarchive serve`` process and the port it was told to listen on."""

    process: asyncio.subprocess.Process
    port: int


@contextlib.asynccontextmanager
async def serve_process(
    db_url: str, log_path: pathlib.Path, *args: str, **env: str
) -> AsyncIterator[Running]:
    """A real ``jobarchive serve`` on ``db_url`` on a free port, ``args`` added to its
    command line and ``env`` to the environment it inherits (without the database
    variables of this one), its output appended to ``log_path``; stopped by SIGTERM at
    the end, its log's tail printed for a failing test's report."""
    port = free_port()
    inherited = {k: v for k, v in os.environ.items() if k not in DATABASE_VARIABLES}
    with log_path.open("ab") as log:
        process = await asyncio.create_subprocess_exec(
            str(JOBARCHIVE),
            *("serve", "--port", str(port), *args),
            # The archives the tests fill are the default store's cluster's (decision 36).
            env={
                **inherited,
                "JOBARCHIVE_DB_URL": db_url,
                "JOBARCHIVE_CLUSTER": DEFAULT_CLUSTER,
                **env,
            },
            stdout=log,
            stderr=log,
        )
    try:
        yield Running(process, port)
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
        print(log_path.read_text()[-5000:])


@contextlib.asynccontextmanager
async def jobarchive_serve(
    db_url: str, log_path: pathlib.Path, concurrency: int, **env: str
) -> AsyncIterator[tuple[str, int]]:
    """A real ``jobarchive serve --auth none`` on the archive, ``concurrency`` queries at
    once, ``env`` added to its settings: its API's base URL and pid, once it answers."""
    serving = serve_process(
        db_url, log_path, "--auth", "none", JOBARCHIVE_API_CONCURRENCY=str(concurrency), **env
    )
    async with serving as running:
        base = f"http://127.0.0.1:{running.port}{PREFIX}"
        await answering(f"{base}/openapi.json")
        yield base, running.process.pid


async def get(
    session: aiohttp.ClientSession, url: str, params: dict[str, Any] | None = None
) -> tuple[int, bytes]:
    async with session.get(url, params=params) as response:
        return response.status, await response.read()


def memory(pid: int) -> tuple[int, int]:
    """A process's resident memory now and at its peak (VmRSS, VmHWM), in bytes."""
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines())
    return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024


class Walk:
    """Every row of a paged list, read page by page from the cursors it gives out."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.cursors: list[str] = []
        self.largest = 0

    async def read(
        self,
        session: aiohttp.ClientSession,
        url: str,
        items: str,
        cursor: str,
        next_cursor: str,
        **params: str,
    ) -> "Walk":
        following: str | None = None
        while True:
            asked = {"limit": str(MAX_PAGE), **params}
            if following is not None:
                asked[cursor] = following
            status, body = await get(session, url, asked)
            assert status == 200, body[:500]
            self.largest = max(self.largest, len(body))
            page = json.loads(body)
            self.rows += page[items]
            following = page[next_cursor]
            if following is None:
                return self
            self.cursors.append(following)
