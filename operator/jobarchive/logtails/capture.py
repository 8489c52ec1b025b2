"""The capture of failed containers' log tails: bounded, polite, fair, each read once.

The recorder hands over facts and never waits (``intake``: what is queued, what is
set aside and why). One dispatcher takes the queue a batch at a time, the namespaces
in turn, a batch about a second of reads (``JOBARCHIVE_LOG_RATE``, at most
``LOOKUP_BATCH``) so that a namespace's first failure waits no longer than that behind
another's backlog. It asks the database which of the batch have a row already (a
restart lists every failed pod again), then starts each read once a token of the rate
limit (a token bucket: ``JOBARCHIVE_LOG_RATE`` reads a second, bursts of
``JOBARCHIVE_LOG_CONCURRENCY``) and a slot of the concurrency limit are free; the rows
of failures set aside need no read and go to the writer between batches.

The rows go through the one writer (``storage.writer``), in the queue and transactions
of the recorder's rows (``Handover``); a read holds its slot until its row is queued.
The tails hold at most ``ROWS_HELD`` rows of that queue, and at most a quarter of it,
until they are committed: while the database is away, reads stop, the queue fills
and further failures are set aside, so memory stays bounded; and however many
containers fail, the rest of the queue is the recorder's, so a burst of tails never
holds back the rows of jobs, pods and Events.

Every failure read ends as one row, captured or "not captured: <reason>"; every one
set aside is one row or counted in the note of one, so nothing is read twice or
retried in a loop, and nothing is dropped unsaid.
"""

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes_asyncio import client

from jobarchive.config import Settings
from jobarchive.core.rows import LogTailRow
from jobarchive.infra import metrics
from jobarchive.infra.cluster import api_client
from jobarchive.infra.logs import shown
from jobarchive.logtails import inserts as tails
from jobarchive.logtails import text
from jobarchive.logtails.fetcher import Fetcher, Read
from jobarchive.logtails.intake import Intake, Key, Pending, count
from jobarchive.storage.batches import WriterStopped
from jobarchive.storage.failures import describe
from jobarchive.storage.models import LogTail
from jobarchive.storage.writer import Writer

logger = logging.getLogger(__name__)
LOOKUP_BATCH = 100
# The tails' rows in the writer's queue or its transactions at once: at most this
# many, and at most this share of its queue (one at least).
ROWS_HELD = 64
QUEUE_SHARE = 1 / 4


class TokenBucket:
    """At most ``rate`` takes a second on average, ``burst`` at once after a pause."""

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self.tokens = float(self.burst)
        self._clock = clock
        self._last = clock()

    def delay(self) -> float:
        """Take a token and return 0, or return how long until one is there (none taken)."""
        now = self._clock()
        self.tokens = min(self.burst, self.tokens + (now - self._last) * self.rate)
        self._last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate

    async def take(self) -> None:
        """Wait for a token and take it."""
        wait = self.delay()
        while wait > 0:
            await asyncio.sleep(wait)
            wait = self.delay()


class Handover:
    """The tails' rows handed to the one writer, at most ``held`` of them in it at once;
    each the database refuses counted and named in the log."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.held = max(1, min(ROWS_HELD, int(writer.queue_size * QUEUE_SHARE)))
        self._room = asyncio.Semaphore(self.held)
        # Rows handed over and not queued: waiting for room, or cut short by stopping.
        self.unqueued = 0

    async def put(self, row: LogTailRow) -> None:
        """Hand a row over: return once it is in the writer's queue, having waited for
        room (the tails' share, then the queue's)."""
        self.unqueued += 1
        await self._room.acquire()
        try:
            [done] = await self.writer.put(LogTail, [row])
        except BaseException:
            self._room.release()
            raise
        self.unqueued -= 1
        done.add_done_callback(functools.partial(self._written, row))

    def _written(self, row: LogTailRow, done: asyncio.Future[None]) -> None:
        """A row committed, refused by the database, or given up by the writer's stop."""
        self._room.release()
        error = done.exception()
        if isinstance(error, WriterStopped):
            count("skipped", "stopped")
        elif error is not None:
            count("failed", "refused")
            logger.error(
                "Could not store the log tail of %s/%s container %s (restart %d): %s",
                shown(row["namespace"]),
                shown(row["pod_name"]),
                shown(row["container"]),
                row["restart_count"],
                shown(describe(error)),
            )


class Capture:
    """Reads the log tails of failed containers of recorded pods, once each, and hands
    their rows to the one writer (whose store also answers which are stored)."""

    def __init__(self, settings: Settings, writer: Writer) -> None:
        self.lines = settings.log_tail_lines
        self.limit = settings.log_tail_bytes
        self.store = tails.TailStore(writer.store)
        self.intake = Intake(settings)
        self._bucket = TokenBucket(settings.log_rate, settings.log_concurrency)
        # About a second of reads: what a namespace's first failure may wait behind.
        self._batch = max(1, min(LOOKUP_BATCH, settings.log_rate))
        self._slots = asyncio.Semaphore(settings.log_concurrency)
        self._rows = Handover(writer)
        self._reads: set[asyncio.Task[None]] = set()
        self._dispatcher: asyncio.Task[None] | None = None
        self._api: client.ApiClient | None = None
        self._fetcher: Fetcher | None = None

    @property
    def enabled(self) -> bool:
        """Whether tails are read at all (``JOBARCHIVE_LOG_TAIL_LINES`` above 0)."""
        return self.lines > 0

    @property
    def depth(self) -> int:
        """Failures queued whose log is not being read yet."""
        return self.intake.depth

    def noted(self, pod: Mapping[str, Any]) -> None:
        """A pod body that may be a tracked job's (``Intake.noted``)."""
        if self.enabled:
            self.intake.noted(pod)

    def recorded(self, pod_uid: str, job_uid: str) -> None:
        """A pod's row was stored under ``job_uid`` (``Intake.recorded``)."""
        if self.enabled:
            self.intake.recorded(pod_uid, job_uid)

    async def start(self, api: client.ApiClient | None = None) -> None:
        """Start reading with ``api`` (else a client of the operator's own cluster)."""
        if not self.enabled or self._dispatcher is not None:
            return
        self._api = api or await api_client()
        self._fetcher = Fetcher(self._api, self.lines, self.limit)
        metrics.LOG_TAIL_QUEUE.set_function(lambda: self.depth)
        self._dispatcher = asyncio.create_task(self._dispatch())

    async def stop(self) -> None:
        """Stop reading; say what is left, which the next start reads if its pods remain.
        The rows queued are the writer's, which commits them as it stops (or gives them
        up, counted as stopped), so stop the capture first."""
        if self._dispatcher is None:
            return
        for task in (self._dispatcher, *self._reads):
            task.cancel()
        await asyncio.gather(self._dispatcher, *self._reads, return_exceptions=True)
        left = self.depth + len(self.intake.notes) + self._rows.unqueued
        if left:
            count("skipped", "stopped", left)
            logger.info(
                "Stopped with %d failed containers' log tails not read or not written; "
                "the next start reads those whose pods remain",
                left,
            )
        self._dispatcher = None
        if self._api is not None:
            await self._api.close()
            self._api = None

    async def _dispatch(self) -> None:
        """Hand the rows set aside to the writer, and start the reads in turn, within the
        rate and the concurrency."""
        intake = self.intake
        while True:
            while intake.notes:
                await self._rows.put(intake.notes.popleft())
            keys = intake.take(self._batch)
            if not keys:
                intake.wake.clear()
                await intake.wake.wait()
                continue
            done = await self._stored(keys)
            for key in keys:
                if key in done:
                    intake.release(key)
                    count("skipped", "already_captured")
                    continue
                await self._bucket.take()
                await self._slots.acquire()
                task = asyncio.create_task(self._capture(intake.release(key)))
                self._reads.add(task)
                task.add_done_callback(self._reads.discard)

    async def _stored(self, keys: list[Key]) -> set[Key]:
        """Which keys have a row; none known while the database cannot say (the read is
        worth more than the chance of reading twice: the insert keeps the first row)."""
        try:
            return await self.store.existing(keys)
        except Exception as exc:
            logger.warning(
                "Cannot tell which log tails are stored, reading them: %s",
                describe(exc),
            )
            return set()

    async def _capture(self, pending: Pending) -> None:
        """Read one failure's log and hand its row to the writer; the slot is freed then."""
        failure = pending.failure
        try:
            assert self._fetcher is not None
            try:
                read = await self._fetcher.read(failure)
            except Exception as exc:
                read = Read(None, "error", f"{type(exc).__name__}: {str(exc)[:300]}")
            await self._rows.put(self._row(pending, read))
        finally:
            self._slots.release()

    def _row(self, pending: Pending, read: Read) -> LogTailRow:
        failure = pending.failure
        if read.data is None:
            count("failed", read.reason)
            logger.info("Log tail of %s not captured: %s", failure.describe(), shown(read.note))
            return tails.row(failure, pending.job_uid, None, read.note)
        tail = text.tail(read.data, self.lines, self.limit, read.incomplete)
        count("captured", "truncated" if tail.truncated else "complete")
        return tails.row(failure, pending.job_uid, tail, None)
