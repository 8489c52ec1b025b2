"""``jobarchive export``: every job of a window, a row each with its usage, in a folder
of daily Parquet (or CSV) files for BI tools (decision 34), read from the database as the
read side reads it."""

import datetime
import os
import pathlib
import time
from collections.abc import Awaitable

import click

from jobarchive.cli.archive import Where
from jobarchive.exporting import layout
from jobarchive.reading.params import BadQuery, parse_time

FORMATS = click.Choice(layout.FORMATS)
# A window of days: the first, and the day after the last.
Days = tuple[datetime.date, datetime.date]
MISSING = "jobarchive export needs pyarrow: pip install 'jobarchive[export]'"
# The most days one export writes (ten years): each is a folder and a file, empty or
# not, so a --since mistyped centuries back would fill the disk with empty days.
MOST_DAYS = 3660


def _day(_: click.Context, option: click.Parameter, value: str) -> datetime.date:
    """A ``--since``/``--until`` value as a UTC day: a date, or a time at midnight UTC,
    since a day's file holds its whole day."""
    name = option.opts[0]
    try:
        moment = parse_time(value, name).astimezone(datetime.UTC)
    except BadQuery:
        raise click.UsageError(f"{name}: {value!r} is not a day (use 2026-11-29)") from None
    if moment.time() != datetime.time():
        raise click.UsageError(
            f"{name}: {value!r} is not a day: give YYYY-MM-DD (UTC), since each day's file "
            "holds its whole day"
        )
    return moment.date()


def _folder(_: click.Context, __: click.Parameter, value: str) -> pathlib.Path:
    """The folder written, made if missing; refused if it is a file or cannot be written."""
    if not value.strip():
        raise click.UsageError("--to: an empty path: name the folder to write")
    path = pathlib.Path(value)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise click.UsageError(f"--to: {value} is a file, not a folder") from None
    except OSError as exc:
        raise click.UsageError(f"--to: cannot make {value}: {exc.strerror}") from None
    if not path.is_dir():
        raise click.UsageError(f"--to: {value} is a file, not a folder")
    # Tried rather than asked (os.access): root may be refused by the file system.
    try:
        os.close(layout.open_lock(path))
    except layout.Planted as exc:
        raise click.UsageError(f"--to: {exc}") from None
    except OSError as exc:
        raise click.UsageError(f"--to: {value} cannot be written: {exc.strerror}") from None
    return path


@click.command()
@click.option("--since", required=True, callback=_day, help="The first day (YYYY-MM-DD, UTC).")
@click.option("--until", required=True, callback=_day, help="The day after the last (UTC).")
@click.option(
    "--to", "folder", required=True, metavar="DIR", callback=_folder, help="The folder written."
)
@click.option("--format", "format_", type=FORMATS, default="parquet", show_default=True)
@click.option("--resume", is_flag=True, help="Begin at the first day not written yet.")
@click.pass_obj
def export(
    where: Where,
    since: datetime.date,
    until: datetime.date,
    folder: pathlib.Path,
    format_: str,
    resume: bool,
) -> None:
    """Write a row per job created in [--since, --until), with its usage, to
    DIR/date=YYYY-MM-DD/part-0.parquet (Hive-style), each day replacing the one before."""
    db_url = where.database()
    if until <= since:
        raise click.UsageError("--until must be a later day than --since")
    if (until - since).days > MOST_DAYS:
        raise click.UsageError(
            f"--since: {(until - since).days:,} days, more than {MOST_DAYS:,}: export the "
            "window in parts"
        )
    # The days that have begun: today's as it stands, none after it.
    begun = datetime.datetime.now(datetime.UTC).date() + datetime.timedelta(days=1)
    if since >= begun:
        raise click.UsageError(f"--since {since} has not begun: no day of the window to export")
    if until > begun:
        click.echo(
            f"--until {until} is ahead: exported up to today ({begun - datetime.timedelta(days=1)}"
            ", as it stands); run the command again later to write the days still to come",
            err=True,
        )
    _run(db_url, (since, min(until, begun)), folder, format_, resume)


def _run(db_url: str | None, days: Days, folder: pathlib.Path, format_: str, resume: bool) -> None:
    """The export of ``days`` (since, until) on the read side: a line per day written,
    then what it wrote."""
    # Imported here, when it runs: --help imports neither a database nor pyarrow
    # (decision 30), and pyarrow is an extra.
    try:
        from jobarchive.exporting import run
    except ModuleNotFoundError as exc:
        if exc.name != "pyarrow":
            raise
        raise click.ClickException(MISSING) from None
    from jobarchive.cli import session
    from jobarchive.reading.queries.created import created_usage

    def written(day: datetime.date, rows: int) -> None:
        click.echo(f"{folder / f'date={day}'}: {rows:,} jobs", err=True)

    def work(_: object) -> "Awaitable[run.Exported]":
        return run.export(
            created_usage, folder, run.Window(*days), format_, resume, written=written
        )

    started = time.perf_counter()
    try:
        done = session.reading(db_url, work)
    except layout.Busy as exc:
        raise click.ClickException(str(exc)) from None
    except layout.Planted as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {folder}: {exc}") from None
    took = time.perf_counter() - started
    kept = f"; {_days(len(done.kept))} kept as written (--resume)" if done.kept else ""
    click.echo(
        f"Exported {done.rows:,} jobs in {_days(len(done.written))} to {folder} ({format_}) "
        f"in {took:.1f} s{kept}"
    )


def _days(count: int) -> str:
    return f"{count:,} day" if count == 1 else f"{count:,} days"
