"""The export's folder (decision 34): ``DIR/date=YYYY-MM-DD/part-0.<format>``, one file a
day, written beside its final name under a hidden one and moved over it in one rename;
one export at a time per folder.

Nothing under ``DIR`` that is a symbolic link is followed: in a folder others may write
to, a planted ``.jobarchive-export.lock`` link would have the export create its
target, and a planted ``date=...`` link would have it replace and delete files in
another folder. The lock and each temporary file are created without following a
link (``O_NOFOLLOW``, the temporary file also ``O_EXCL``), and a day's folder or file
that is a link is refused (``Planted``) with a line naming it. ``DIR`` itself is the
caller's to choose, link or not.
"""

import contextlib
import datetime
import fcntl
import os
import pathlib
import secrets
import stat
from collections.abc import Iterator

FORMATS = ("parquet", "csv")
# Hidden (a leading dot) and not ending in the format, so that no reader of the folder
# (pyarrow.dataset, Spark, DuckDB's globs, BigQuery's) takes a half-written file.
TEMPORARY = ".part-0.{format}.{token}.tmp"
LOCK = ".jobarchive-export.lock"


class Busy(Exception):
    """Another export is writing the folder."""


class Planted(Exception):
    """Something in the folder is not what the export writes there: a symbolic link, or
    a lock that is not a file. The message names it."""


# Opened as the export's own: never through a link, never blocking on a FIFO.
_OWN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _refuse_link(path: pathlib.Path) -> None:
    """Planted when ``path`` is a symbolic link (a missing one is fine)."""
    if path.is_symlink():
        raise Planted(f"{path} is a symbolic link: the export follows none; remove it")


def day_folder(root: pathlib.Path, day: datetime.date) -> pathlib.Path:
    """The Hive-style folder of one day."""
    return root / f"date={day.isoformat()}"


def part(root: pathlib.Path, day: datetime.date, format: str) -> pathlib.Path:
    """The file a day's rows are in."""
    return day_folder(root, day) / f"part-0.{format}"


def done(root: pathlib.Path, day: datetime.date, format: str) -> bool:
    """Whether a day was written whole in ``format``: its file is there, written after
    the day ended (a day exported while it ran, today's, is written again; a day of the
    other format is written again too, which replaces it: a folder is never left of both)."""
    _refuse_link(day_folder(root, day))
    path = part(root, day, format)
    _refuse_link(path)
    if not path.is_file():
        return False
    ended = datetime.datetime.combine(
        day + datetime.timedelta(days=1), datetime.time(), datetime.UTC
    )
    return path.stat().st_mtime >= ended.timestamp()


def temporary(root: pathlib.Path, day: datetime.date, format: str) -> pathlib.Path:
    """A new hidden file for a day's rows while they are written, created empty (never
    through a link) in the day's folder (made if missing; Planted if it is a link)."""
    folder = day_folder(root, day)
    _refuse_link(folder)
    folder.mkdir(parents=True, exist_ok=True)
    _refuse_link(folder)
    for written in FORMATS:
        _refuse_link(folder / f"part-0.{written}")
    path = folder / TEMPORARY.format(format=format, token=secrets.token_hex(8))
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OWN, 0o644))
    return path


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
    descriptor = open_lock(root)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another export is writing {root}") from None
        yield
    finally:
        os.close(descriptor)


def open_lock(root: pathlib.Path) -> int:
    """The folder's lock file, opened (created when missing) without following a link;
    Planted if it is a link or not a regular file."""
    path = root / LOCK
    _refuse_link(path)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | _OWN, 0o644)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise Planted(f"{path} is not a file the export made: remove it")
    return descriptor
