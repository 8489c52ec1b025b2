"""The writer's rows in waiting: the bounded queue between writers and flushers, the
batches flushers hold, how a batch is grouped into statements' rows, and what
stopping gives up (decision 9)."""

import asyncio
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from jobarchive.core.rows import Row, WrittenRow
from jobarchive.storage.models import INSERTED, TABLES, WRITTEN, Job, Stamped, earliest
from jobarchive.storage.store import is_older


class WriterStopped(Exception):
    """The writer stopped before the row was written; Kopf lists it again at the next start."""

    def __init__(self) -> None:
        super().__init__("the operator stopped before the row was written")


@dataclasses.dataclass
class Pending:
    """A row its writer waits for, until it is settled: committed, refused or given up."""

    model: type[Stamped]
    row: WrittenRow
    done: asyncio.Future[None]
    # When the object last changed (epoch seconds), for the lag metric; None: unknown.
    changed: float | None = None
    # Committed, refused or given up: whether its writer (if still waiting) was told.
    settled: bool = False

    @property
    def kind(self) -> str:
        """The Kubernetes kind the row records: a job's own kind, else Pod or Event; a
        row of a table written once, its model's name (LogTail)."""
        return str(self.fields["kind"]) if self.model is Job else self.model.__name__

    @property
    def fields(self) -> Mapping[str, Any]:
        """The row by column name, for what reads any table's rows alike."""
        return self.row


Group = tuple[type[Stamped], str]
Groups = dict[Group, tuple[type[Stamped], list[WrittenRow]]]


class Intake:
    """The bounded queue between writers and flushers, and what stopping must account
    for besides it: the batches flushers hold, the rows of writers waiting for room."""

    def __init__(self, size: int) -> None:
        self._queue: asyncio.Queue[Pending] = asyncio.Queue(maxsize=size)
        self._held: dict[int, list[Pending]] = {}
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

    async def put(self, pending: Pending, following: int) -> None:
        """Queue a row, waiting for room; give it up once closed. ``following``: how
        many rows its writer has after it, none of them queued yet."""
        if self.closed:
            give_up([pending])
        elif self._queue.full():
            self._blocked += 1 + following
            try:
                await self._queue.put(pending)
            finally:
                self._blocked -= 1 + following
        else:
            self._queue.put_nowait(pending)

    async def first(self) -> list[Pending]:
        """A batch of the first row waiting, held until ``release``."""
        batch = [await self._queue.get()]
        self._held[id(batch)] = batch
        return batch

    def fill(self, batch: list[Pending], most: int) -> None:
        """Add rows waiting to a batch, up to ``most`` rows in all."""
        while len(batch) < most and not self._queue.empty():
            batch.append(self._queue.get_nowait())

    def release(self, batch: list[Pending]) -> None:
        """A flusher is done with a batch, written or not."""
        del self._held[id(batch)]
        for _ in batch:
            self._queue.task_done()

    async def join(self) -> None:
        """Return once every row queued so far is done with."""
        await self._queue.join()

    def close(self) -> tuple[list[Pending], int]:
        """Take no more rows; the held rows not written yet, and how many rows in all
        were not written: held, queued, or of writers waiting for room."""
        self.closed = True
        held = [pending for batch in self._held.values() for pending in batch]
        held = [pending for pending in held if not pending.settled]
        return held, len(held) + self.depth + self._blocked

    async def give_up(self, held: list[Pending]) -> None:
        """Release the writers of the held rows, of the queued ones, and of those that
        writers waiting for room put in meanwhile: each row taken wakes one of them."""
        give_up(held)
        while self._blocked or not self._queue.empty():
            while not self._queue.empty():
                give_up([self._queue.get_nowait()])
                self._queue.task_done()
            await asyncio.sleep(0)


def settle(pending: Pending, error: Exception | None) -> None:
    """Tell the row's writer, if it still waits: committed (``error`` None) or not."""
    pending.settled = True
    if pending.done.done():
        return
    if error is None:
        pending.done.set_result(None)
    else:
        pending.done.set_exception(error)


def give_up(batch: Iterable[Pending]) -> None:
    """Release the writers of rows the writer stopped before writing."""
    for pending in batch:
        settle(pending, WriterStopped())


def _kept(row: Row, older: Row | None, columns: tuple[str, ...]) -> Row:
    """``row``, with the earliest of its and ``older``'s value in each of ``columns``, as
    the upsert would leave them after writing both."""
    if older is None or not columns:
        return row
    merged: dict[str, Any] = dict(row)
    for column in columns:
        merged[column] = earliest(cast(Any, older).get(column), merged.get(column))
    return cast(Row, merged)


def newest_rows(batch: list[Pending]) -> tuple[Groups, dict[Group, int]]:
    """Per table and kind, one row per uid (the newest, its ``earliest`` columns the
    earliest of the versions it replaced), sorted by uid; and per table and kind, how
    many older versions were dropped for a newer one. Rows of a table written once are
    all kept, sorted by their unique key: the insert keeps the first stored.

    Groups by kind so that the store's count of stale rows is one per kind. Groups
    come in one order and rows are sorted by uid within them, and a uid's kind never
    changes: concurrent transactions take the unique index's locks in one order.
    """
    by_uid: dict[Group, dict[str, Row]] = {}
    once: dict[Group, list[WrittenRow]] = {}
    superseded: dict[Group, int] = {}
    for pending in batch:
        group = (pending.model, pending.kind)
        if pending.model in INSERTED:
            once.setdefault(group, []).append(pending.row)
            continue
        # Not a row written once: one of the recorded objects'.
        row = cast(Row, pending.row)
        rows = by_uid.setdefault(group, {})
        uid = pending.fields[TABLES[pending.model].key]
        old = rows.get(uid)
        if old is not None:
            superseded[group] = superseded.get(group, 0) + 1
        if old is None or not is_older(row["version"], old["version"]):
            rows[uid] = _kept(row, old, TABLES[pending.model].earliest)
    groups: Groups = {
        group: (group[0], [by_uid[group][uid] for uid in sorted(by_uid[group])]) for group in by_uid
    }
    for group, written in once.items():
        groups[group] = (group[0], sorted(written, key=_unique(INSERTED[group[0]].once)))
    ordered = sorted(groups, key=lambda group: (WRITTEN[group[0]].name, group[1]))
    return {group: groups[group] for group in ordered}, superseded


def _unique(columns: tuple[str, ...]) -> Callable[[WrittenRow], tuple[Any, ...]]:
    """A row's unique key, of these columns, to sort rows by."""
    return lambda row: tuple(cast(Mapping[str, Any], row)[column] for column in columns)
