"""One export: the usage rows of a window streamed in batches, each job's row in its
creation day's file, a day replaced as a whole once the stream has passed it (decision
34). The stream is given (``Stream``): the read side's ``created_usage``, or a test's."""

import contextlib
import dataclasses
import datetime
import pathlib
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from typing import Any

from jobarchive.exporting import columns, layout
from jobarchive.exporting.files import DayFile
from jobarchive.reading.queries.facts import JobUsage

# Rows per Parquet row group (and per CSV write): the rows an export holds at once,
# beside one batch of the stream.
ROW_GROUP = 10_000
DAY = datetime.timedelta(days=1)
# (since, until, now): the jobs created in [since, until), their hours counted to now.
Stream = Callable[
    [datetime.datetime, datetime.datetime, datetime.datetime], AsyncIterator[Sequence[JobUsage]]
]


class OutOfOrder(Exception):
    """The stream gave a job created before one it gave earlier."""


@dataclasses.dataclass(frozen=True)
class Window:
    """The days exported: ``since`` to ``until``, excluded, UTC days."""

    since: datetime.date
    until: datetime.date

    def days(self) -> list[datetime.date]:
        """Every day of the window, in order."""
        count = (self.until - self.since).days
        return [self.since + datetime.timedelta(days=n) for n in range(count)]


@dataclasses.dataclass
class Exported:
    """What an export wrote: days written and kept (``--resume``), rows written."""

    written: list[datetime.date] = dataclasses.field(default_factory=list)
    kept: list[datetime.date] = dataclasses.field(default_factory=list)
    rows: int = 0


def midnight(day: datetime.date) -> datetime.datetime:
    """A day's start, in UTC."""
    return datetime.datetime.combine(day, datetime.time(), datetime.UTC)


async def export(
    stream: Stream,
    root: pathlib.Path,
    window: Window,
    format: str = "parquet",
    resume: bool = False,
    now: datetime.datetime | None = None,
    written: Callable[[datetime.date, int], None] = lambda day, rows: None,
    row_group: int = ROW_GROUP,
) -> Exported:
    """Write every day of ``window`` under ``root``, each day's file replacing the one
    before (a day without jobs is an empty file); with ``resume``, from the first day
    that has no file yet. ``written`` is told of each day as it is replaced."""
    days = window.days()
    result = Exported()
    if resume:
        while days and layout.done(root, days[0], format):
            result.kept.append(days.pop(0))
    if not days:
        return result
    exported_at = now or datetime.datetime.now(datetime.UTC)
    with layout.locked(root):
        partitions = _Days(root, format, days, result, written, row_group)
        rows = stream(midnight(days[0]), midnight(window.until), exported_at)
        try:
            try:
                await partitions.take(rows, exported_at)
            finally:
                if isinstance(rows, AsyncGenerator):
                    await rows.aclose()
            partitions.finish()
        except BaseException:
            partitions.abandon()
            raise
    return result


class _Days:
    """The days being written, in order: one file open at a time."""

    def __init__(
        self,
        root: pathlib.Path,
        format: str,
        days: list[datetime.date],
        result: Exported,
        written: Callable[[datetime.date, int], None],
        row_group: int,
    ) -> None:
        self.root, self.format, self.result, self.written = root, format, result, written
        self.row_group = row_group
        self.days = list(days)
        self.start = days[0]
        self.end = days[-1] + DAY
        self.file: DayFile | None = None
        self.pending: list[dict[str, Any]] = []

    async def take(
        self, rows: AsyncIterator[Sequence[JobUsage]], exported_at: datetime.datetime
    ) -> None:
        """Each row of the stream into its day's file (the stream is oldest created
        first), none of a day before or after the window."""
        async for batch in rows:
            for usage in batch:
                day = columns.day_of(usage)
                if day >= self.end:
                    return
                if day >= self.start:
                    self._add(day, columns.record(usage, exported_at))

    def _add(self, day: datetime.date, row: dict[str, Any]) -> None:
        if day < self.days[0]:
            raise OutOfOrder(f"a job of {day} came after one of {self.days[0]}")
        while day > self.days[0]:
            self._close()
        if self.file is None:
            self.file = DayFile(layout.temporary(self.root, day, self.format), self.format)
        self.pending.append(row)
        if len(self.pending) >= self.row_group:
            self._flush()

    def _flush(self) -> None:
        if self.file is not None:
            self.file.write(self.pending)
        self.pending.clear()

    def _close(self) -> None:
        """The first day's file finished and made the day's, even with no rows."""
        day = self.days.pop(0)
        if self.file is None:
            self.file = DayFile(layout.temporary(self.root, day, self.format), self.format)
        self._flush()
        self.file.close()
        layout.swap(self.file.path, day, self.format)
        self.result.written.append(day)
        self.result.rows += self.file.rows
        self.written(day, self.file.rows)
        self.file = None

    def finish(self) -> None:
        """The days the stream has no more rows for, written (empty ones too)."""
        while self.days:
            self._close()

    def abandon(self) -> None:
        """After a failure: the day being written left as it was, its half-written
        file removed (the days before it are written whole)."""
        if self.file is not None:
            with contextlib.suppress(Exception):
                self.file.close()
            self.file.path.unlink(missing_ok=True)
            self.file = None
