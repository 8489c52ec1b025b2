"""The capture of failed containers' log tails: bounded, polite, fair, each read once.

The recorder hands over facts and never waits (``intake``: what is queued, what is
set aside and why). One dispatcher takes the queue a batch at a time, the namespaces
in turn, a batch about a second of reads (``JOBARCHIVE_LOG_RATE``, at most
``LOOKUP_BATCH``) so that a namespace's first failure waits no longer than that behind
another's backlog. It asks the database which of the batch have a row already (a
restart lists every failed pod again), then starts each read once a token of the rate
limit (a token bucket: ``JOBARCHIVE_LOG_RATE`` reads a second, bursts of
``JOBARCHIVE_LOG_CONCURRENCY``) and a slot of the concurrency limit are free; the rows
of failures set aside need no read and go to the writer between batches. A read holds
its slot until its row is handed to the tails' writer (``writing``), whose queue is
small: while the database is away, reads stop, the queue fills and further failures
are set aside, so memory stays bounded.

Every failure read ends as one row, captured or "not captured: <reason>"; every one
set aside is one row or counted in the note of one, so nothing is read twice or
retried in a loop, and nothing is dropped unsaid.
"""

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes_asyncio import client

from jobarchive.config import Settings
from jobarchive.infra import metrics
from jobarchive.infra.cluster import api_client
from jobarchive.infra.logs import shown
from jobarchive.logtails import inserts as tails
from jobarchive.logtails import text
from jobarchive.logtails.fetcher import Fetcher, Read
from jobarchive.logtails.intake import Intake, Key, Pending, count
from jobarchive.logtails.writing import TailWriter
from jobarchive.storage.failures import describe

logger = logging.getLogger(__name__)
LOOKUP_BATCH = 100
# What stopping gives the tails' writer to write what was read.
STOP_GRACE = 3.0


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


class Capture:
    """Reads the log tails of failed containers of recorded pods, once each, and hands
    their rows to the tails' writer."""

    def __init__(self, settings: Settings, store: tails.TailStore | None = None) -> None:
        self.lines = settings.log_tail_lines
        self.limit = settings.log_tail_bytes
        self.store = store or tails.TailStore()
        self.intake = Intake(settings)
        self._bucket = TokenBucket(settings.log_rate, settings.log_concurrency)
        # About a second of reads: what a namespace's first failure may wait behind.
        self._batch = max(1, min(LOOKUP_BATCH, settings.log_rate))
        self._slots = asyncio.Semaphore(settings.log_concurrency)
        self._writer = TailWriter(self.store)
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
        self._writer.start()

    async def stop(self) -> None:
        """Stop reading; give what was read ``STOP_GRACE`` seconds to be written; say what
        is left, which the next start reads if its pods remain."""
        if self._dispatcher is None:
            return
        for task in (self._dispatcher, *self._reads):
            task.cancel()
        await asyncio.gather(self._dispatcher, *self._reads, return_exceptions=True)
        await self._writer.stop(STOP_GRACE)
        left = self.depth + len(self.intake.notes) + self._writer.unwritten
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
                await self._writer.put(intake.notes.popleft())
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
            await self._writer.put(self._row(pending, read))
        finally:
            self._slots.release()

    def _row(self, pending: Pending, read: Read) -> tails.Row:
        failure = pending.failure
        if read.data is None:
            count("failed", read.reason)
            logger.info("Log tail of %s not captured: %s", failure.describe(), shown(read.note))
            return tails.row(failure, pending.job_uid, None, read.note)
        tail = text.tail(read.data, self.lines, self.limit, read.incomplete)
        count("captured", "truncated" if tail.truncated else "complete")
        return tails.row(failure, pending.job_uid, tail, None)
