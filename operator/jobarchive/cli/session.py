"""The archive a command works on: the operator's settings, the database opened for
reading (the read side, as the API's) or for writing (``prune``, ``migrate``: the
operator's own URL), and every failure as one line, never a traceback.

Nothing here ever creates a database: a SQLite file that does not exist is reported
rather than opened, since opening creates it, empty, where the operator would later
find it.
"""

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

import click

from jobarchive import config
from jobarchive.cli.options import BadSetting
from jobarchive.core.visible import visible
from jobarchive.reading import queries
from jobarchive.storage import database as db
from jobarchive.storage import failures, schema
from jobarchive.storage.readpool import QueryTimeout, ReadPool

T = TypeVar("T")


def settings_of(db_url: str | None) -> config.Settings:
    """The operator's settings, ``db_url`` (from the command line) taking the place of
    JOBARCHIVE_DB_URL and JOBARCHIVE_DB_URL_FILE, and of the read side's URL: the
    archive named on the command line is the one read."""
    environ = dict(os.environ)
    if db_url:
        environ["JOBARCHIVE_DB_URL"] = db_url
        for variable in (
            "JOBARCHIVE_DB_URL_FILE",
            "JOBARCHIVE_READ_DB_URL",
            "JOBARCHIVE_READ_DB_URL_FILE",
        ):
            environ.pop(variable, None)
    try:
        return config.load(environ)
    except config.ConfigError as exc:
        raise BadSetting(str(exc)) from None


def read_pool(settings: config.Settings, timeout: float | None = None) -> ReadPool:
    """The read side, as the API's: JOBARCHIVE_READ_DB_URL, its pool size and timeout."""
    return ReadPool(
        archive(settings.read_db_url), settings.api_concurrency, timeout or settings.api_timeout
    )


def archive(url: str) -> str:
    """The URL of an archive; for SQLite, once its file is known to exist."""
    path = db.sqlite_file(url)
    if path is not None and not path.is_file():
        raise click.ClickException(
            f"no archive at {path}: run the operator first or set JOBARCHIVE_DB_URL"
        )
    return url


def unreadable(url: str, error: BaseException) -> click.ClickException:
    """The line that says an archive cannot be used, and why, in the driver's words."""
    # A driver's message may quote a stored value.
    return click.ClickException(
        visible(f"cannot use the archive at {config.redact_url(url)}: {failures.describe(error)}")
    )


def reading(db_url: str | None, work: Callable[[queries.KnownKinds], Awaitable[T]]) -> T:
    """Run ``work`` on the read side, given the kinds its filters may name; a schema the
    reader cannot read yet is refused with a line that says how to bring it up to date."""
    settings = settings_of(db_url)
    pool = read_pool(settings)
    kinds = queries.known_kinds(settings.kinds)

    async def session() -> T:
        await db.open_reader(pool, encryption=settings.db_tls)
        await schema.require_readable(db.reader())
        return await work(kinds)

    return _run(settings, pool.url, session)


def writing(db_url: str | None, work: Callable[[], Awaitable[T]], adopted: bool = True) -> T:
    """Run ``work`` on the database the operator writes; unless ``adopted`` is false
    (``migrate``), a schema not brought up to date is refused as by ``reading``."""
    settings = settings_of(db_url)
    url = archive(settings.db_url)

    async def session() -> T:
        await db.open_database(url, create=False, encryption=settings.db_tls)
        if adopted:
            await schema.require_readable(db.connection())
        return await work()

    return _run(settings, url, session)


def _run(settings: config.Settings, url: str, session: Callable[[], Awaitable[T]]) -> T:
    """The session's result, the database closed after it; one line when it fails (what
    the read side refuses is told by the command's options, ``options.refused``)."""

    async def closing() -> T:
        try:
            return await session()
        finally:
            await db.close_database()

    try:
        return asyncio.run(closing())
    except QueryTimeout:
        raise click.ClickException(
            f"the query ran longer than {settings.api_timeout:g} s (JOBARCHIVE_API_TIMEOUT) "
            "and was stopped: narrow it, or allow it more time"
        ) from None
    except schema.NotAdopted as exc:
        raise click.ClickException(str(exc)) from None
    except failures.ERRORS as exc:
        raise unreadable(url, exc) from None
