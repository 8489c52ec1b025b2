"""Group commit (decision 9): many handlers' rows written in few transactions, each
handler waiting until its rows are committed.

A flusher takes the first row waiting, gives others ``max_delay`` to join when
the batch is not full yet, and commits up to ``batch_size`` rows in one
transaction. Several flushers overlap one batch's commit with the next one's
collection. Two versions of one object are never in flight at once, because Kopf
handles one object's events in order and each handler waits for its commit; the
same uid twice in one batch (two objects' handlers releasing the same waiting
pod) keeps the newest, and the store's guard settles the rest.

The log tails' rows, written once (``models.INSERTED``), ride along in the same
queue and transactions (decision 19): their capture hands them over with ``put``,
which returns once they are queued, and bounds how many it holds in the queue.
"""

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence

from jobarchive.config import DEFAULTS
from jobarchive.core.rows import WrittenRow
from jobarchive.infra import metrics
from jobarchive.infra.logs import shown
from jobarchive.storage.batches import Group, Groups, Intake, Pending, newest_rows, settle
from jobarchive.storage.failures import is_retryable, is_too_large
from jobarchive.storage.models import INSERTED, Stamped
from jobarchive.storage.store import Store
from jobarchive.storage.waiting import Backoff, Outage, ride_out

logger = logging.getLogger(__name__)
DEADLOCK_RETRIES = 5
# Between a rolled-back transaction's attempts: jittered, so that two writers whose
# transactions collided (a deadlock here, a certification conflict on Galera) do not
# collide again at once.
RETRY_FIRST = 0.02
RETRY_CAP = 0.5
# After stop's deadline, how long cancelled flushers get to let go of their connections.
STOP_GRACE = 1.0


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
        self.queue_size = queue_size
        self._intake = Intake(queue_size)
        self._tasks: list[asyncio.Task[None]] = []
        self.outage = Outage(
            "holding writes and retrying",
            then=lambda: f"; {self.depth} rows wait to be written",
            level=logging.ERROR,
            counter=metrics.DATABASE_ERRORS.labels("unavailable"),
        )
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
        rows: Sequence[WrittenRow],
        changed: Sequence[float | None] | None = None,
    ) -> list[BaseException | None]:
        """Queue rows and return once each is committed or refused: its error, else None
        (``WriterStopped`` for a row the writer stopped before writing).

        ``changed`` gives, per row, when its object last changed (epoch seconds), for
        the lag metric.
        """
        futures = await self.put(model, rows, changed)
        return await asyncio.gather(*futures, return_exceptions=True)

    async def put(
        self,
        model: type[Stamped],
        rows: Sequence[WrittenRow],
        changed: Sequence[float | None] | None = None,
    ) -> list[asyncio.Future[None]]:
        """Queue rows, waiting for room, and return once they are queued: per row, a
        future done once it is committed (None) or refused (its error, as ``write``
        gives it). For a caller that must not wait for the commit (the log tails)."""
        loop = asyncio.get_running_loop()
        self._last_row = time.monotonic()
        futures = []
        for index, row in enumerate(rows):
            future: asyncio.Future[None] = loop.create_future()
            futures.append(future)
            when = changed[index] if changed is not None else None
            await self._intake.put(Pending(model, row, future, when), len(rows) - index - 1)
        return futures

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
                    settle(pending, exc)
            finally:
                intake.release(batch)

    async def commit(self, batch: list[Pending], depth: int = 0) -> None:
        """Commit a batch, waiting out outages and retrying deadlocks; one the database
        refuses is bisected (``depth``: how many times it was halved already)."""
        groups, superseded = newest_rows(batch)
        conflicts = Backoff(RETRY_FIRST, RETRY_CAP)
        for attempt in range(1, DEADLOCK_RETRIES + 1):
            try:
                started, stale = await ride_out(
                    lambda: self._attempt(groups), self.writer.outage, self.backoff
                )
            except Exception as exc:
                if attempt < DEADLOCK_RETRIES and is_retryable(exc):
                    metrics.DATABASE_ERRORS.labels("retryable").inc()
                    logger.debug("Batch of %d rows rolled back (%s); again", len(batch), shown(exc))
                    await asyncio.sleep(conflicts.next())
                    continue
                await self._refused(batch, exc, depth)
                return
            _committed(batch, groups, stale, superseded, started)
            return

    async def _refused(self, batch: list[Pending], error: Exception, depth: int) -> None:
        """A batch the database refused: its one row fails, or its halves are committed
        apart, so that one row the database refuses costs the others neither their
        rows nor a transaction each. A refused log tail is counted by its capture."""
        if len(batch) == 1:
            metrics.DATABASE_ERRORS.labels("refused").inc()
            if batch[0].model not in INSERTED:
                metrics.OBJECTS.labels(batch[0].kind, "refused").inc()
            settle(batch[0], error)
            return
        # Galera's write set limit (wsrep_max_ws_rows) refuses a batch for its size alone.
        say = logger.warning if depth == 0 and not is_too_large(error) else logger.debug
        say("A batch of %d rows failed (%s); committing its halves apart", len(batch), shown(error))
        middle = len(batch) // 2
        for half in (batch[:middle], batch[middle:]):
            await self.commit(half, depth + 1)

    async def _attempt(self, groups: Groups) -> tuple[float, dict[Group, int]]:
        """One transaction of the groups: when it began (monotonic), and the stale rows."""
        started = time.monotonic()
        # In a task of its own: when BEGIN fails on a dead connection, Tortoise leaves
        # its transaction as the current connection of the task's context, and every
        # later transaction in that context would reuse the dead one.
        attempt = asyncio.create_task(self.writer.store.write_batch(groups))
        in_flight = self.writer._in_flight
        in_flight[id(attempt)] = started
        try:
            return started, await attempt
        finally:
            del in_flight[id(attempt)]


def _committed(
    batch: list[Pending],
    groups: Groups,
    stale: Mapping[Group, int],
    superseded: Mapping[Group, int],
    started: float,
) -> None:
    """Count a batch committed in a transaction begun at ``started`` (monotonic), with
    ``stale`` rows kept by the guard and ``superseded`` ones dropped for a newer one in
    the batch; then release its writers. Rows of a table written once are not objects:
    their capture counts them."""
    committed = time.time()
    metrics.COMMIT_SECONDS.observe(time.monotonic() - started)
    metrics.BATCH_SIZE.observe(len(batch))
    for group, (model, rows) in groups.items():
        if model in INSERTED:
            continue
        kind = group[1]
        skipped = stale[group] + superseded.get(group, 0)
        metrics.OBJECTS.labels(kind, "stored").inc(len(rows) - stale[group])
        if skipped:
            metrics.OBJECTS.labels(kind, "skipped_stale").inc(skipped)
    for pending in batch:
        if pending.changed is not None:
            metrics.LAG_SECONDS.observe(max(0.0, committed - pending.changed))
        settle(pending, None)
