"""``jobarchive serve`` stops on SIGTERM as a container's first process must: a signal
with no handler is ignored by PID 1, and the kubelet kills it mid-answer after the
grace period."""

import os
import pathlib
import signal

from jobarchive.config import DbTls
from jobarchive.storage import database as db
from tests.support.serve import jobarchive_serve
from tests.support.waiting import eventually


async def test_serve_stops_on_sigterm_at_once_and_says_so(tmp_path: pathlib.Path) -> None:
    url = f"sqlite://{tmp_path / 'archive.sqlite3'}"
    await db.open_database(url, encryption=DbTls())
    await db.close_database()
    log = tmp_path / "serve.log"
    async with jobarchive_serve(url, log, 4) as (_, pid):
        os.kill(pid, signal.SIGTERM)

        # asyncio's child watcher reaps the process as soon as it exits.
        async def gone() -> bool:
            return not pathlib.Path(f"/proc/{pid}").exists()

        await eventually(gone, within=10)
    assert "Stopping: answering no more requests" in log.read_text()
