"""Group commit: many handlers' rows written in few transactions.

A handler hands its rows to ``Writer.write`` and waits until they are committed
(durable before acknowledged). Rows queue up while a transaction runs, so under
load one commit carries hundreds of rows from as many handlers: throughput comes
from many handlers waiting on the same flush, not from any handler returning
early. The queue is bounded: when the database is slow, ``write`` waits for room,
so a burst costs time, not memory, and nothing is dropped.

While the database is unreachable, flushers hold their batch and retry with capped
exponential backoff, logging when the outage starts and ends; handlers wait, the
queue fills, and Kopf's watch streams wait behind them: nothing is dropped, and the
backlog is written when the database returns.

A flusher takes the first row waiting, gives others ``max_delay`` to join when
the batch is not full yet, and commits up to ``batch_size`` rows in one
transaction. Several flushers overlap one batch's commit with the next one's
collection. Two versions of one object are never in flight at once, because Kopf
handles one object's events in order and each handler waits for its commit; the
same uid twice in one batch (two objects' handlers releasing the same waiting
pod) keeps the newest, and the store's guard settles the rest.
"""

import asyncio
import dataclasses
import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive import metrics
from jobarchive.config import DEFAULTS
from jobarchive.rows import Row
from jobarchive.storage.errors import is_retryable, is_unavailable
from jobarchive.storage.models import TABLES, Job, Stamped
from jobarchive.storage.store import Store, is_older

logger = logging.getLogger(__name__)
DEADLOCK_RETRIES = 5
# While the database is away, flushers retry at 0.1 s, doubling up to 5 s: quick to
# notice its return, cheap while it stays away.
BACKOFF_FIRST = 0.1
BACKOFF_CAP = 5.0


@dataclasses.dataclass
class _Pending:
    model: type[Stamped]
    row: Row
    done: asyncio.Future[None]
    # When the object last changed (epoch seconds), for the lag metric; None: unknown.
    changed: float | None = None

    @property
    def kind(self) -> str:
        """The Kubernetes kind the row records: a job's own kind, else Pod or Event."""
        return str(self.fields["kind"]) if self.model is Job else self.model.__name__

    @property
    def fields(self) -> Mapping[str, Any]:
        """The row by column name, for what reads any table's rows alike."""
        return self.row


Group = tuple[type[Stamped], str]


class Outage:
    """Whether the database is away, since when, and how long to wait before retrying.

    Several flushers may meet the same outage: it starts and ends once, and they
    share one backoff.
    """

    def __init__(self) -> None:
        self.since: float | None = None
        self._backoff = BACKOFF_FIRST

    async def wait(self, error: Exception) -> None:
        """Back off while the database is away; say so once, not once per row."""
        if self.since is None:
            self.since = time.monotonic()
            self._backoff = BACKOFF_FIRST
            logger.error("The database is unavailable, holding writes and retrying: %s", error)
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, BACKOFF_CAP)

    def over(self, waiting: int) -> None:
        """A commit succeeded: end the outage, if there was one; ``waiting`` rows queue."""
        if self.since is not None:
            logger.warning(
                "The database is back after %.1f s; %d rows wait to be written",
                time.monotonic() - self.since,
                waiting,
            )
            self.since = None

    def lasted(self) -> float:
        """Seconds since the outage started; 0 when there is none."""
        return 0.0 if self.since is None else time.monotonic() - self.since


class Writer:
    """Batches rows from concurrent callers into shared transactions."""

    def __init__(
        self,
        store: Store,
        batch_size: int = DEFAULTS.batch_size,
        max_delay: float = DEFAULTS.batch_delay,
        queue_size: int = DEFAULTS.queue_size,
        flushers: int = DEFAULTS.writers,
    ) -> None:
        self.store = store
        self.batch_size = batch_size
        self.max_delay = max_delay
        self.flushers = flushers
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=queue_size)
        self._tasks: list[asyncio.Task[None]] = []
        self.outage = Outage()
        self._in_flight: dict[int, float] = {}
        self._last_row = -math.inf

    @property
    def depth(self) -> int:
        """Rows waiting for a flusher."""
        return self._queue.qsize()

    def recording(self, within: float = 1.0) -> bool:
        """Whether rows are queued or committing, or one came in the last ``within`` s.

        The read side narrows to one query at a time while this holds: the gaps
        between a handler's rows are too short to count as quiet.
        """
        busy = bool(self._in_flight) or not self._queue.empty()
        return busy or time.monotonic() - self._last_row < within

    def start(self) -> None:
        """Start the flushers; call from within the running event loop."""
        self._tasks = [
            asyncio.create_task(self._flush_forever(), name=f"jobarchive-flusher-{index}")
            for index in range(self.flushers)
        ]

    async def stop(self) -> None:
        """Commit what is queued, then stop the flushers."""
        if not self._tasks:
            return
        await self._queue.join()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def write(
        self,
        model: type[Stamped],
        rows: Sequence[Row],
        changed: Sequence[float | None] | None = None,
    ) -> list[BaseException | None]:
        """Queue rows and return once each is committed or refused: its error, else None.

        ``changed`` gives, per row, when its object last changed (epoch seconds), for
        the lag metric.
        """
        loop = asyncio.get_running_loop()
        self._last_row = time.monotonic()
        futures = []
        for index, row in enumerate(rows):
            future: asyncio.Future[None] = loop.create_future()
            when = changed[index] if changed is not None else None
            await self._queue.put(_Pending(model, row, future, when))
            futures.append(future)
        return await asyncio.gather(*futures, return_exceptions=True)

    async def _flush_forever(self) -> None:
        while True:
            batch = [await self._queue.get()]
            if self._queue.qsize() < self.batch_size - 1:
                await asyncio.sleep(self.max_delay)
            while len(batch) < self.batch_size and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            try:
                await self._commit(batch)
            except Exception as exc:
                # A bug of ours must not kill the flusher and leave writers waiting forever:
                # the rows fail, and each writer logs its row as not stored.
                logger.exception("Writing a batch of %d rows failed", len(batch))
                for pending in batch:
                    _settle(pending, exc)
            finally:
                for _ in batch:
                    self._queue.task_done()

    async def _commit(self, batch: list[_Pending]) -> None:
        groups, superseded = newest_rows(batch)
        rolled_back = 0
        while True:
            started = time.monotonic()
            try:
                # In a task of its own: when BEGIN fails on a dead connection, Tortoise
                # leaves its transaction as the current connection of the task's context,
                # and every later transaction in that context would reuse the dead one.
                attempt = asyncio.create_task(self.store.write_batch(groups))
                self._in_flight[id(attempt)] = started
                try:
                    stale = await attempt
                finally:
                    del self._in_flight[id(attempt)]
            except Exception as exc:
                if is_unavailable(exc):
                    metrics.DATABASE_ERRORS.labels("unavailable").inc()
                    await self.outage.wait(exc)
                    continue
                rolled_back += 1
                if rolled_back < DEADLOCK_RETRIES and is_retryable(exc):
                    metrics.DATABASE_ERRORS.labels("retryable").inc()
                    logger.debug("Batch of %d rows rolled back (%s); again", len(batch), exc)
                    continue
                if len(batch) == 1:
                    metrics.DATABASE_ERRORS.labels("refused").inc()
                    metrics.OBJECTS.labels(batch[0].kind, "refused").inc()
                await self._isolate(batch, exc)
                return
            self.outage.over(self.depth)
            _committed(batch, groups, stale, superseded, started)
            return

    def stuck_for(self) -> float:
        """Seconds the oldest transaction in flight has been running; 0 when none is.

        A transaction that never ends (a pool that lost its connections) fails no
        write, so only this shows it.
        """
        if not self._in_flight:
            return 0.0
        return time.monotonic() - min(self._in_flight.values())

    def failing_for(self) -> float:
        """Seconds since writes started failing for want of a database; 0 when they work."""
        return self.outage.lasted()

    async def _isolate(self, batch: list[_Pending], exc: Exception) -> None:
        """Settle a failed batch: a single row gets its error, a larger batch is split."""
        if len(batch) == 1:
            _settle(batch[0], exc)
            return
        # One row the database refuses must not cost the others theirs: find it by
        # committing each on its own.
        logger.warning(
            "A batch of %d rows failed (%s); committing them one by one", len(batch), exc
        )
        for pending in batch:
            await self._commit([pending])


def _committed(
    batch: list[_Pending],
    groups: Mapping[Group, tuple[type[Stamped], list[Row]]],
    stale: Mapping[Group, int],
    superseded: Mapping[Group, int],
    started: float,
) -> None:
    """Count a batch committed in a transaction begun at ``started`` (monotonic), with
    ``stale`` rows kept by the guard and ``superseded`` ones dropped for a newer one in
    the batch; then release its writers."""
    committed = time.time()
    metrics.COMMIT_SECONDS.observe(time.monotonic() - started)
    metrics.BATCH_SIZE.observe(len(batch))
    for group, (_, rows) in groups.items():
        kind = group[1]
        skipped = stale[group] + superseded.get(group, 0)
        metrics.OBJECTS.labels(kind, "stored").inc(len(rows) - stale[group])
        if skipped:
            metrics.OBJECTS.labels(kind, "skipped_stale").inc(skipped)
    for pending in batch:
        if pending.changed is not None:
            metrics.LAG_SECONDS.observe(max(0.0, committed - pending.changed))
        _settle(pending, None)


def _settle(pending: _Pending, error: Exception | None) -> None:
    if pending.done.done():
        return
    if error is None:
        pending.done.set_result(None)
    else:
        pending.done.set_exception(error)


def newest_rows(
    batch: list[_Pending],
) -> tuple[dict[Group, tuple[type[Stamped], list[Row]]], dict[Group, int]]:
    """Per table and kind, one row per uid (the newest), sorted by uid; and per table
    and kind, how many older versions were dropped for a newer one.

    Groups by kind so that the store's count of stale rows is one per kind. Groups
    come in one order and rows are sorted by uid within them, and a uid's kind never
    changes: concurrent transactions take the unique index's locks in one order.
    """
    by_uid: dict[Group, dict[str, Row]] = {}
    superseded: dict[Group, int] = {}
    for pending in batch:
        group = (pending.model, pending.kind)
        key = TABLES[pending.model].key
        rows = by_uid.setdefault(group, {})
        uid = pending.fields[key]
        old = rows.get(uid)
        if old is not None:
            superseded[group] = superseded.get(group, 0) + 1
        if old is None or not is_older(pending.row["version"], old["version"]):
            rows[uid] = pending.row
    ordered = sorted(by_uid, key=lambda group: (TABLES[group[0]].name, group[1]))
    groups: dict[Group, tuple[type[Stamped], list[Row]]] = {
        group: (group[0], [by_uid[group][uid] for uid in sorted(by_uid[group])])
        for group in ordered
    }
    return groups, superseded
