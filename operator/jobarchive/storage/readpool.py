"""The read side's own connections, apart from the writer's, and the time a statement
on them may run (decision 16: reads never hurt writes).

Each statement on them carries the time its request has left (``deadline``), or
without one the pool's timeout: a MySQL or MariaDB SELECT as the limit the server
stops it at (``Dialect.bounded``), a SQLite statement interrupted at it
(``sqlite3_interrupt``, through aiosqlite). Either way a statement stopped for time
raises ``QueryTimeout``. With TLS asked for, the read connection proves its
encryption (``tls``) before its first statement rather than when it is opened
(``MySQLReader.encrypted`` proves it at once, for ``jobarchive serve`` and the CLI).

This module is also the Tortoise engine of the read connection (``get_client_class``).
"""

import asyncio
import contextlib
import contextvars
import dataclasses
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from tortoise import connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.sqlite.client import SqliteClient
from tortoise.exceptions import OperationalError

from jobarchive.config import DEFAULTS, DbTls
from jobarchive.storage import dialects, failures, tls
from jobarchive.storage.failover import FailoverClient

# Appended to the dialect's name: the read connection's name in Tortoise's config.
SUFFIX = "_read"

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "jobarchive_read_deadline", default=None
)

_PROVING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "jobarchive_read_proving_tls", default=False
)


@dataclasses.dataclass(frozen=True)
class ReadPool:
    """The read side's connections: where, how many, and how long a statement may run."""

    url: str
    size: int = DEFAULTS.api_concurrency
    # Seconds a statement may run when no ``deadline`` is set.
    timeout: float = DEFAULTS.api_timeout


class QueryTimeout(Exception):
    """A read ran out of time and was stopped, by the server or by interruption."""


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every read statement sent within the block is stopped ``seconds`` from now."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def seconds_left(default: float) -> float:
    """What the current deadline leaves, or ``default`` without one; QueryTimeout when
    nothing is left, so that no statement is sent only to be stopped."""
    until = _DEADLINE.get()
    left = default if until is None else until - time.monotonic()
    if left <= 0:
        raise QueryTimeout("no time left")
    return left


def engine_info(connection: dict[str, Any], pool: ReadPool, encryption: DbTls) -> dict[str, Any]:
    """Tortoise's settings of a connection (``expand_db_url``'s), made a read connection."""
    # Tortoise keeps nothing of a connection's settings but its engine and credentials:
    # the engine's own module goes with the credentials, for ``get_client_class``.
    credentials = {
        **connection["credentials"],
        "statement_timeout": pool.timeout,
        "backend": connection["engine"],
    }
    if connection["engine"] == dialects.MYSQL.engine:
        credentials["encryption"] = encryption
    return {"engine": __name__, "credentials": credentials}


class MySQLReader(FailoverClient):
    """The MySQL client over several hosts, each SELECT bounded by the server."""

    def __init__(
        self, *, statement_timeout: float, backend: str, encryption: DbTls, **kwargs: Any
    ) -> None:
        # ``backend`` chose this class (``get_client_class``), and is no driver option.
        super().__init__(**kwargs)
        self.statement_timeout = statement_timeout
        self.encryption = encryption
        self._cipher: str | None = None

    async def encrypted(self) -> str:
        """The session's TLS cipher, asked once; tls.NotEncrypted in clear text."""
        if self._cipher is None:
            # The question is a statement too, which must not ask first; statements of
            # other tasks meanwhile wait for their own proof.
            token = _PROVING.set(True)
            try:
                self._cipher = await tls.require_encrypted(self, self.encryption)
            finally:
                _PROVING.reset(token)
        return self._cipher

    async def execute_query(
        self, query: str, values: list[Any] | None = None
    ) -> tuple[int, list[dict[Any, Any]]]:
        """The statement with the time it has left; QueryTimeout if the server stopped it."""
        if self.encryption.on and self._cipher is None and not _PROVING.get():
            await self.encrypted()
        bounded = dialects.MYSQL.bounded(query, seconds_left(self.statement_timeout))
        try:
            found: tuple[int, list[dict[Any, Any]]] = await super().execute_query(bounded, values)
        except OperationalError as exc:
            if failures.is_statement_timeout(exc):
                raise QueryTimeout("stopped by the server at its time limit") from None
            raise
        return found


class SQLiteReader(SqliteClient):
    """Tortoise's SQLite client, each statement interrupted at its deadline."""

    def __init__(
        self, file_path: str, *, statement_timeout: float, backend: str, **kwargs: Any
    ) -> None:
        # ``backend`` chose this class (``get_client_class``), and is no PRAGMA.
        super().__init__(file_path, **kwargs)
        self.statement_timeout = statement_timeout

    async def execute_query(
        self, query: str, values: list[Any] | None = None
    ) -> tuple[int, Sequence[dict[Any, Any]]]:
        """The statement, interrupted if it outlives its deadline."""
        async with self._bounded():
            found: tuple[int, Sequence[dict[Any, Any]]] = await super().execute_query(query, values)
            return found

    async def execute_query_dict(
        self, query: str, values: list[Any] | None = None
    ) -> list[dict[Any, Any]]:
        """The statement, interrupted if it outlives its deadline."""
        async with self._bounded():
            found: list[dict[Any, Any]] = await super().execute_query_dict(query, values)
            return found

    @contextlib.asynccontextmanager
    async def _bounded(self) -> AsyncIterator[None]:
        """QueryTimeout at the deadline, the statement interrupted.

        aiosqlite runs the statement in a thread that a cancelled await leaves running,
        and every later statement queues behind it there. The interruption comes
        before this task yields again, so the statement running is still this one:
        the connection's lock, released on the way out, is taken by the next statement
        only at the loop's next turn.
        """
        try:
            async with asyncio.timeout(seconds_left(self.statement_timeout)):
                yield
        except TimeoutError:
            await self._interrupt()
            raise QueryTimeout("interrupted") from None
        except asyncio.CancelledError:
            await self._interrupt()
            raise

    async def _interrupt(self) -> None:
        if self._connection is not None:
            await self._connection.interrupt()


def get_client_class(db_info: dict[str, Any]) -> type[BaseDBAsyncClient]:
    """Tortoise's hook for an engine module: the reader for the URL's own engine."""
    readers: dict[str, type[BaseDBAsyncClient]] = {
        dialects.MYSQL.engine: MySQLReader,
        dialects.SQLITE.engine: SQLiteReader,
    }
    return readers[db_info["credentials"]["backend"]]


class ReadSideClosed(Exception):
    """A read was asked for, but the read side was not opened (``read_pool``)."""


def reader() -> BaseDBAsyncClient:
    """The read side's connection (pool): every query of ``reading`` runs on it. Here,
    not in ``database``, so that the read side needs nothing that opens or upgrades."""
    for name in connections.db_config:
        if name.endswith(SUFFIX):
            client: BaseDBAsyncClient = connections.get(name)
            return client
    raise ReadSideClosed("the read side's connection was not opened")
