"""The tails' writer: rows read (or set aside) written a few per statement, in a task of
its own, waiting out a database outage (``storage.waiting``) as the flushers do.

Its queue is small: a read holds its slot until its row is in it, so while the
database is away reads stop, the queue fills and further failures are set aside
(decision 19). A batch the database refuses is written row by row, and a row it
refuses is counted and named in the log.
"""

import asyncio
import contextlib
import logging

from jobarchive.infra.logs import shown
from jobarchive.logtails import inserts as tails
from jobarchive.logtails.intake import count
from jobarchive.storage.failures import describe
from jobarchive.storage.waiting import Outage, ride_out

logger = logging.getLogger(__name__)
# Rows read and not yet written: a read waits for room, holding its slot.
ROWS_HELD = 64
WRITE_BATCH = 50
WRITE_DELAY = 0.2


class TailWriter:
    """Writes the tails' rows handed to it (``put``) until stopped."""

    def __init__(self, store: tails.TailStore) -> None:
        self.store = store
        self._rows: asyncio.Queue[tails.Row] = asyncio.Queue(ROWS_HELD)
        # Rows handed over, not yet written.
        self.unwritten = 0
        self.outage = Outage(
            "log tails wait to be written", then=lambda: ", writing log tails again"
        )
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start writing; call from within the running event loop."""
        self._task = asyncio.create_task(self._write())

    async def put(self, row: tails.Row) -> None:
        """Hand a row over, waiting for room in the queue."""
        self.unwritten += 1
        await self._rows.put(row)

    async def stop(self, grace: float) -> None:
        """Give what was handed over ``grace`` seconds to be written, then stop."""
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._rows.join(), grace)
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
        self._task = None

    async def _write(self) -> None:
        """Write what was handed over, a few rows per statement."""
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._rows.get()]
            deadline = loop.time() + WRITE_DELAY
            while len(batch) < WRITE_BATCH and (left := deadline - loop.time()) > 0:
                try:
                    batch.append(await asyncio.wait_for(self._rows.get(), left))
                except TimeoutError:
                    break
            await self._commit(batch)
            self.unwritten -= len(batch)
            for _ in batch:
                self._rows.task_done()

    async def _commit(self, batch: list[tails.Row]) -> None:
        """Insert rows, waiting out a database outage; a refused batch row by row."""
        try:
            await ride_out(lambda: self.store.insert(batch), self.outage)
        except Exception as exc:
            if len(batch) > 1:
                for one in batch:
                    await self._commit([one])
                return
            count("failed", "refused")
            row = batch[0]
            logger.error(
                "Could not store the log tail of %s/%s container %s (restart %d): %s",
                shown(row["namespace"]),
                shown(row["pod_name"]),
                shown(row["container"]),
                row["restart_count"],
                shown(describe(exc)),
            )
