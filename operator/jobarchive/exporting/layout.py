"""The export's folder (decision 34): ``DIR/date=YYYY-MM-DD/part-0.<format>``, one file a
day, written beside its final name under a hidden one and moved over it in one rename;
one export at a time per folder."""

import contextlib
import datetime
import fcntl
import os
import pathlib
import secrets
from collections.abc import Iterator

FORMATS = ("parquet", "csv")
# Hidden (a leading dot) and not ending in the format, so that no reader of the folder
# (pyarrow.dataset, Spark, DuckDB's globs, BigQuery's) takes a half-written file.
TEMPORARY = ".part-0.{format}.{token}.tmp"
LOCK = ".jobarchive-export.lock"


class Busy(Exception):
    """Another export is writing the folder."""


def day_folder(root: pathlib.Path, day: datetime.date) -> pathlib.Path:
    """The Hive-style folder of one day."""
    return root / f"date={day.isoformat()}"


def part(root: pathlib.Path, day: datetime.date, format: str) -> pathlib.Path:
    """The file a day's rows are in."""
    return day_folder(root, day) / f"part-0.{format}"


def done(root: pathlib.Path, day: datetime.date, format: str) -> bool:
    """Whether a day was written whole in ``format`` (a day of the other format is
    written again, which replaces it: a folder is never left of both)."""
    return part(root, day, format).is_file()


def temporary(root: pathlib.Path, day: datetime.date, format: str) -> pathlib.Path:
    """A new hidden name for a day's file while it is written."""
    folder = day_folder(root, day)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / TEMPORARY.format(format=format, token=secrets.token_hex(8))


def swap(written: pathlib.Path, day: datetime.date, format: str) -> None:
    """Make a written file the day's, in one rename (a reader sees the old file or the
    new, never a part), durably; then remove what the day held before in the other
    format and what a stopped run left half-written."""
    final = written.parent / f"part-0.{format}"
    with open(written, "rb") as file:
        os.fsync(file.fileno())
    os.replace(written, final)
    _sync_folder(written.parent)
    for other in FORMATS:
        if other != format:
            (written.parent / f"part-0.{other}").unlink(missing_ok=True)
    for stale in written.parent.glob(".part-0.*.tmp"):
        stale.unlink(missing_ok=True)


def _sync_folder(folder: pathlib.Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def locked(root: pathlib.Path) -> Iterator[None]:
    """The folder held for one export (``Busy`` if another holds it), so that neither
    removes the other's half-written file; released when the process ends, however."""
    with open(root / LOCK, "a") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another export is writing {root}") from None
        yield
