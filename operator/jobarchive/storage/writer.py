"""Group commit: many handlers' rows written in few transactions.

A handler hands its rows to ``Writer.write`` and waits until they are committed
(durable before acknowledged). Rows queue up while a transaction runs, so under
load one commit carries hundreds of rows from as many handlers: throughput comes
from many handlers waiting on the same flush, not from any handler returning
early. The queue is bounded: when the database is slow, ``write`` waits for room,
so a burst costs time, not memory, and nothing is dropped.

While the database is unreachable, flushers hold their batch and retry, each with
a capped exponential backoff of its own, jittered so that they do not retry in step;
the outage they meet is one, logged when it starts and ends. Handlers wait, the queue
fills, and Kopf's watch streams wait behind them: nothing is dropped, and the backlog
is written when the database returns. A batch the database refuses is bisected: the
halves are committed apart, a half that fails is halved again, so one bad row costs
about 2 log2(n) transactions and takes only its own row with it.

Stopping waits ``stop_timeout`` seconds for the queue to be written. What is still
waiting then (the database is away, or too slow) is given up: counted in one line,
its writers released with ``WriterStopped``. Kopf lists every object again at the
next start, so the rows are written then.

A flusher takes the first row waiting, gives others ``max_delay`` to join when
the batch is not full yet, and commits up to ``batch_size`` rows in one
transaction. Several flushers overlap one batch's commit with the next one's
collection. Two versions of one object are never in flight at once, because Kopf
handles one object's events in order and each handler waits for its commit; the
same uid twice in one batch (two objects' handlers releasing the same waiting
pod) keeps the newest, and the store's guard settles the rest.
"""

import asyncio
import contextlib
import dataclasses
import logging
import math
import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from jobarchive import metrics
from jobarchive.config import DEFAULTS
from jobarchive.logs import shown
from jobarchive.rows import Row
from jobarchive.storage.failures import is_retryable, is_unavailable
from jobarchive.storage.models import TABLES, Job, Stamped
from jobarchive.storage.store import Store, is_older

logger = logging.getLogger(__name__)
DEADLOCK_RETRIES = 5
# While the database is away, each flusher retries after 0.1 s, its waits doubling up
# to 5 s: quick to notice its return, cheap while it stays away.
BACKOFF_FIRST = 0.1
BACKOFF_CAP = 5.0
# After stop's deadline, how long cancelled flushers get to let go of their connections.
STOP_GRACE = 1.0


class WriterStopped(Exception):
    """The writer stopped before the row was written; Kopf lists it again at the next start."""

    def __init__(self) -> None:
        super().__init__("the operator stopped before the row was written")


@dataclasses.dataclass
class _Pending:
    model: type[Stamped]
    row: Row
    done: asyncio.Future[None]
    # When the object last changed (epoch seconds), for the lag metric; None: unknown.
    changed: float | None = None
    # Committed, refused or given up: whether its writer (if still waiting) was told.
    settled: bool = False

    @property
    def kind(self) -> str:
        """The Kubernetes kind the row records: a job's own kind, else Pod or Event."""
        return str(self.fields["kind"]) if self.model is Job else self.model.__name__

    @property
    def fields(self) -> Mapping[str, Any]:
        """The row by column name, for what reads any table's rows alike."""
        return self.row


Group = tuple[type[Stamped], str]


class Backoff:
    """One flusher's waits between retries: a ceiling doubling from ``first`` to ``cap``,
    and each wait a random point between half the ceiling and all of it ("equal
    jitter"), so that flushers that failed together do not retry together, and none
    retries sooner than half its ceiling."""

    def __init__(
        self,
        first: float = BACKOFF_FIRST,
        cap: float = BACKOFF_CAP,
        random: Callable[[], float] | None = None,
    ) -> None:
        self.first = first
        self.cap = cap
        self.ceiling = first
        self._random = random or _random_source()

    def next(self) -> float:
        """Seconds to wait before the next attempt; the ceiling doubles, up to the cap."""
        ceiling = self.ceiling
        self.ceiling = min(ceiling * 2, self.cap)
        return ceiling / 2 + self._random() * ceiling / 2

    def reset(self) -> None:
        """An attempt succeeded: the next outage starts again from the first wait."""
        self.ceiling = self.first


def _random_source() -> Callable[[], float]:
    # A generator of each flusher's own, seeded from the system: flushers started
    # together must not draw the same waits.
    return random.Random().random


class Outage:
    """Whether the database is away, and since when: one state for all flushers, which
    starts with the first failure and ends with the first success, each said once."""

    def __init__(self) -> None:
        self.since: float | None = None

    def failed(self, error: Exception) -> None:
        """A flusher found the database away; say so once, not once per flusher or row."""
        if self.since is None:
            self.since = time.monotonic()
            logger.error(
                "The database is unavailable, holding writes and retrying: %s", shown(error)
            )

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


class _Intake:
    """The bounded queue between writers and flushers, and what stopping must account
    for besides it: the batches flushers hold, the rows of writers waiting for room."""

    def __init__(self, size: int) -> None:
        self._queue: asyncio.Queue[_Pending] = asyncio.Queue(maxsize=size)
        self._held: dict[int, list[_Pending]] = {}
        self._blocked = 0
        self.closed = False

    @property
    def depth(self) -> int:
        """Rows waiting for a flusher."""
        return self._queue.qsize()

    @property
    def busy(self) -> bool:
        """Whether rows are queued, or taken by a flusher and not yet done with."""
        return bool(self._held) or not self._queue.empty()

    async def put(self, pending: _Pending, following: int) -> None:
        """Queue a row, waiting for room; give it up once closed. ``following``: how
        many rows its writer has after it, none of them queued yet."""
        if self.closed:
            _give_up([pending])
        elif self._queue.full():
            self._blocked += 1 + following
            try:
                await self._queue.put(pending)
            finally:
                self._blocked -= 1 + following
        else:
            self._queue.put_nowait(pending)

    async def first(self) -> list[_Pending]:
        """A batch of the first row waiting, held until ``release``."""
        batch = [await self._queue.get()]
        self._held[id(batch)] = batch
        return batch

    def fill(self, batch: list[_Pending], most: int) -> None:
        """Add rows waiting to a batch, up to ``most`` rows in all."""
        while len(batch) < most and not self._queue.empty():
            batch.append(self._queue.get_nowait())

    def release(self, batch: list[_Pending]) -> None:
        """A flusher is done with a batch, written or not."""
        del self._held[id(batch)]
        for _ in batch:
            self._queue.task_done()

    async def join(self) -> None:
        """Return once every row queued so far is done with."""
        await self._queue.join()

    def close(self) -> tuple[list[_Pending], int]:
        """Take no more rows; the held rows not written yet, and how many rows in all
        were not written: held, queued, or of writers waiting for room."""
        self.closed = True
        held = [pending for batch in self._held.values() for pending in batch]
        held = [pending for pending in held if not pending.settled]
        return held, len(held) + self.depth + self._blocked

    async def give_up(self, held: list[_Pending]) -> None:
        """Release the writers of the held rows, of the queued ones, and of those that
        writers waiting for room put in meanwhile: each row taken wakes one of them."""
        _give_up(held)
        while self._blocked or not self._queue.empty():
            while not self._queue.empty():
                _give_up([self._queue.get_nowait()])
                self._queue.task_done()
            await asyncio.sleep(0)


class Writer:
    """Batches rows from concurrent callers into shared transactions."""

    def __init__(
        self,
        store: Store,
        batch_size: int = DEFAULTS.batch_size,
        max_delay: float = DEFAULTS.batch_delay,
        queue_size: int = DEFAULTS.queue_size,
        flushers: int = DEFAULTS.writers,
        stop_timeout: float = DEFAULTS.stop_timeout,
        backoff: Callable[[], Backoff] = Backoff,
    ) -> None:
        """``backoff`` makes each flusher's own (a test's may be seeded)."""
        self.store = store
        self.batch_size = batch_size
        self.max_delay = max_delay
        self.flushers = flushers
        self.stop_timeout = stop_timeout
        self.backoff = backoff
        self._intake = _Intake(queue_size)
        self._tasks: list[asyncio.Task[None]] = []
        self.outage = Outage()
        self._in_flight: dict[int, float] = {}
        self._last_row = -math.inf

    @property
    def depth(self) -> int:
        """Rows waiting for a flusher."""
        return self._intake.depth

    def recording(self, within: float = 1.0) -> bool:
        """Whether rows are queued or committing, or one came in the last ``within`` s.

        The read side narrows to one query at a time while this holds: the gaps
        between a handler's rows are too short to count as quiet.
        """
        busy = bool(self._in_flight) or self._intake.busy
        return busy or time.monotonic() - self._last_row < within

    def start(self) -> None:
        """Start the flushers; call from within the running event loop."""
        self._intake.closed = False
        self._tasks = [
            asyncio.create_task(_Flusher(self).run(), name=f"jobarchive-flusher-{index}")
            for index in range(self.flushers)
        ]

    async def stop(self) -> None:
        """Commit what is queued, for ``stop_timeout`` seconds at most; then give up the
        rest, said in one line, stop the flushers (giving them ``STOP_GRACE`` seconds to
        let go of a connection) and release every writer still waiting."""
        if not self._tasks:
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.stop_timeout):
                await self._intake.join()
        held, unwritten = self._intake.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.wait(self._tasks, timeout=STOP_GRACE)
        self._tasks = []
        if unwritten:
            logger.warning(
                "Stopping with %d rows not written: the database did not take them within "
                "%g s (JOBARCHIVE_STOP_TIMEOUT); Kopf lists their objects again at the next start",
                unwritten,
                self.stop_timeout,
            )
        await self._intake.give_up(held)

    async def write(
        self,
        model: type[Stamped],
        rows: Sequence[Row],
        changed: Sequence[float | None] | None = None,
    ) -> list[BaseException | None]:
        """Queue rows and return once each is committed or refused: its error, else None
        (``WriterStopped`` for a row the writer stopped before writing).

        ``changed`` gives, per row, when its object last changed (epoch seconds), for
        the lag metric.
        """
        loop = asyncio.get_running_loop()
        self._last_row = time.monotonic()
        futures = []
        for index, row in enumerate(rows):
            future: asyncio.Future[None] = loop.create_future()
            futures.append(future)
            when = changed[index] if changed is not None else None
            await self._intake.put(_Pending(model, row, future, when), len(rows) - index - 1)
        return await asyncio.gather(*futures, return_exceptions=True)

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


class _Flusher:
    """One flusher: takes batches from the writer's queue and commits them, with a
    backoff of its own while the database is away."""

    def __init__(self, writer: Writer) -> None:
        self.writer = writer
        self.backoff = writer.backoff()

    async def run(self) -> None:
        """Take and commit batches until cancelled."""
        intake = self.writer._intake
        while True:
            batch = await intake.first()
            try:
                if intake.depth < self.writer.batch_size - 1:
                    await asyncio.sleep(self.writer.max_delay)
                intake.fill(batch, self.writer.batch_size)
                await self.commit(batch)
            except Exception as exc:
                # A bug of ours must not kill the flusher and leave writers waiting forever:
                # the rows fail, and each writer logs its row as not stored.
                logger.exception("Writing a batch of %d rows failed", len(batch))
                for pending in batch:
                    _settle(pending, exc)
            finally:
                intake.release(batch)

    async def commit(self, batch: list[_Pending], depth: int = 0) -> None:
        """Commit a batch, waiting out outages and retrying deadlocks; one the database
        refuses is bisected (``depth``: how many times it was halved already)."""
        groups, superseded = newest_rows(batch)
        rolled_back = 0
        while True:
            started = time.monotonic()
            try:
                stale = await self._attempt(groups, started)
            except Exception as exc:
                if is_unavailable(exc):
                    metrics.DATABASE_ERRORS.labels("unavailable").inc()
                    self.writer.outage.failed(exc)
                    await asyncio.sleep(self.backoff.next())
                    continue
                rolled_back += 1
                if rolled_back < DEADLOCK_RETRIES and is_retryable(exc):
                    metrics.DATABASE_ERRORS.labels("retryable").inc()
                    logger.debug("Batch of %d rows rolled back (%s); again", len(batch), shown(exc))
                    continue
                if len(batch) == 1:
                    metrics.DATABASE_ERRORS.labels("refused").inc()
                    metrics.OBJECTS.labels(batch[0].kind, "refused").inc()
                    _settle(batch[0], exc)
                    return
                # One row the database refuses must not cost the others theirs, nor a
                # transaction each: halves that commit are done, one that fails is halved.
                say = logger.warning if depth == 0 else logger.debug
                say(
                    "A batch of %d rows failed (%s); committing its halves apart",
                    len(batch),
                    shown(exc),
                )
                middle = len(batch) // 2
                for half in (batch[:middle], batch[middle:]):
                    await self.commit(half, depth + 1)
                return
            self.backoff.reset()
            self.writer.outage.over(self.writer.depth)
            _committed(batch, groups, stale, superseded, started)
            return

    async def _attempt(
        self, groups: Mapping[Group, tuple[type[Stamped], list[Row]]], started: float
    ) -> dict[Group, int]:
        # In a task of its own: when BEGIN fails on a dead connection, Tortoise leaves
        # its transaction as the current connection of the task's context, and every
        # later transaction in that context would reuse the dead one.
        attempt = asyncio.create_task(self.writer.store.write_batch(groups))
        in_flight = self.writer._in_flight
        in_flight[id(attempt)] = started
        try:
            return await attempt
        finally:
            del in_flight[id(attempt)]


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
    pending.settled = True
    if pending.done.done():
        return
    if error is None:
        pending.done.set_result(None)
    else:
        pending.done.set_exception(error)


def _give_up(batch: Iterable[_Pending]) -> None:
    """Release the writers of rows the writer stopped before writing."""
    for pending in batch:
        _settle(pending, WriterStopped())


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
