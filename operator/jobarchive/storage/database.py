"""Opening and closing the database through Tortoise.

Two facts of Tortoise 1.x shape this module: its state lives in a context
variable, so the context opened in Kopf's startup handler must be the global
fallback to be seen by the handler tasks; and it caches compiled queries per
connection name, so each engine's connection has a name of its own. The driver is
logged because Tortoise picks asyncmy over aiomysql silently whenever asyncmy is
importable.

Opening is also where the password is registered for redaction (``logs.redact``),
before Tortoise, which logs its connection settings at DEBUG, ever sees it; and
where a session that should be encrypted is proven to be (``tls``).

The read side has a connection of its own (``storage.readpool``): the operator opens it
beside the writer's when it serves the API, ``jobarchive serve`` and the CLI's reads
open it alone (``open_reader``), and every query of ``reading`` runs on ``reader()``.
"""

import importlib.util
import logging
import pathlib
import urllib.parse
from typing import Any

from tortoise import Tortoise, connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive.config import DbTls, first_host_url, hosts, redact_url, url_secrets
from jobarchive.core.accounting import ACCELERATORS
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.infra import logs
from jobarchive.storage import dialects, failover, failures, migration, readpool, schema, tls
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import ReadPool
from jobarchive.storage.readpool import ReadSideClosed as ReadSideClosed
from jobarchive.storage.readpool import reader as reader

logger = logging.getLogger(__name__)

MODELS_MODULE = "jobarchive.storage.models"
CONNECT_TIMEOUT = 10.0


def tortoise_config(
    db_url: str, pool_size: int, encryption: DbTls, read_pool: ReadPool | None = None
) -> dict[str, Any]:
    """The Tortoise configuration for a database URL (UTC everywhere, utf8mb4 on MySQL),
    with the read side's connection too when ``read_pool`` is given."""
    name, connection = _connection(db_url, pool_size, encryption)
    if connection["engine"] == dialects.MYSQL.engine:
        # The writer's connection: its reads see the last write, and it needs a host that
        # is not read-only (decision 37); the read side's need neither.
        connection["credentials"]["writer"] = True
        connection = {**connection, "engine": failover.__name__}
    connections = {name: connection}
    if read_pool is not None:
        connections.update([_read_connection(read_pool, encryption)])
    return _config(connections, default=name)


def reader_config(read_pool: ReadPool, encryption: DbTls) -> dict[str, Any]:
    """The Tortoise configuration of the read side alone."""
    name, connection = _read_connection(read_pool, encryption)
    return _config({name: connection}, default=name)


def _connection(url: str, pool_size: int, encryption: DbTls) -> tuple[str, dict[str, Any]]:
    """A connection's name and settings."""
    connection = expand_db_url(first_host_url(url))
    dialect = dialects.for_engine(connection["engine"])
    # SQLite needs nothing: Tortoise's defaults suit one file and one connection, and the
    # settings refuse TLS for a SQLite file.
    if dialect is dialects.MYSQL:
        _configure_mysql(connection["credentials"], pool_size, encryption)
        connection["credentials"]["hosts"] = hosts(url)
    # The connection is named after its engine: one process that opens MySQL and then
    # SQLite (the tests) must not find MySQL's placeholders in SQLite's statements.
    return dialect.name, connection


def _configure_mysql(credentials: dict[str, Any], pool_size: int, encryption: DbTls) -> None:
    """utf8mb4, UTC, the pool's size, the user as decoded, and TLS when asked for.

    The time zone goes in ``init_command``: set once on a session, only the first
    pooled connection would have it. aiomysql takes TLS as an ``ssl`` context.
    """
    credentials.setdefault("charset", "utf8mb4")
    credentials["init_command"] = "SET time_zone='+00:00'"
    credentials.setdefault("maxsize", pool_size)
    # A host that drops packets costs this much before the next one is tried (decision 37).
    credentials.setdefault("connect_timeout", CONNECT_TIMEOUT)
    # Tortoise decodes the URL's password but passes its user name percent-encoded.
    if credentials.get("user"):
        credentials["user"] = urllib.parse.unquote(credentials["user"])
    context = tls.ssl_context(encryption)
    if context is not None:
        credentials["ssl"] = context


def driver(dialect: dialects.Dialect) -> str:
    """The Python driver Tortoise uses for the engine here: for MySQL asyncmy whenever it
    is importable (Tortoise prefers it silently over aiomysql); for SQLite its only one."""
    if dialect is dialects.SQLITE:
        return "aiosqlite"
    return "asyncmy" if importlib.util.find_spec("asyncmy") else "aiomysql"


def _read_connection(read_pool: ReadPool, encryption: DbTls) -> tuple[str, dict[str, Any]]:
    name, connection = _connection(read_pool.url, read_pool.size, encryption)
    return name + readpool.SUFFIX, readpool.engine_info(connection, read_pool, encryption)


def _config(connections: dict[str, Any], default: str) -> dict[str, Any]:
    return {
        "connections": connections,
        "apps": {"jobarchive": {"models": [MODELS_MODULE], "default_connection": default}},
        "use_tz": True,
        "timezone": "UTC",
    }


async def open_database(
    db_url: str,
    pool_size: int = 5,
    create: bool = True,
    *,
    encryption: DbTls,
    read_pool: ReadPool | None = None,
    accelerators: frozenset[str] = ACCELERATORS,
    cluster: str = DEFAULT_CLUSTER,
) -> None:
    """Connect, and unless ``create`` is false (readers, which may lack the privilege),
    create the tables, columns and indexes that do not exist yet, and upgrade the rows
    (``migration.upgrade``: pods' requests counted with ``accelerators`` as GPUs; rows
    from before the ``cluster`` column given ``cluster``, decision 35).

    ``pool_size`` bounds MySQL connections; it must exceed the number of concurrent
    transactions, since Tortoise waits forever for a free connection. ``encryption``
    has no default, so that no caller can drop the TLS the settings ask for; with TLS
    on, the database connects here and raises ``tls.NotEncrypted`` in clear text.
    With ``read_pool``, the read side's own connection is configured too, and proves
    its encryption at its first read (``storage.readpool``).
    """
    logs.redact(url_secrets(db_url))
    if read_pool is not None:
        logs.redact(url_secrets(read_pool.url))
    config = tortoise_config(db_url, pool_size, encryption, read_pool)
    await Tortoise.init(config=config, _enable_global_fallback=True)
    await _announce("Database", connection(), db_url, encryption)
    if read_pool is not None:
        await _announce("Reading from", reader(), read_pool.url, encryption, read_pool, now=False)
    if create:
        added = await schema.ensure_schema(connection(), cluster)
        for step in await migration.upgrade(connection(), added, accelerators):
            logger.info("Upgraded %s", step.describe(dry_run=False))


async def open_reader(read_pool: ReadPool, *, encryption: DbTls) -> None:
    """Open the read side alone (``jobarchive serve``, the CLI's reads): nothing is
    created, and ``connection()`` is the read connection too."""
    logs.redact(url_secrets(read_pool.url))
    await Tortoise.init(config=reader_config(read_pool, encryption), _enable_global_fallback=True)
    await _announce("Reading from", reader(), read_pool.url, encryption, read_pool)


async def _announce(
    what: str,
    conn: BaseDBAsyncClient,
    url: str,
    encryption: DbTls,
    read_pool: ReadPool | None = None,
    now: bool = True,
) -> None:
    """Log the database and how it is reached, once its encryption is proven if asked
    for and ``now``; else it is proven at its first statement."""
    dialect = dialects.of(conn)
    how = f"{dialect.name} via {driver(dialect)}"
    if read_pool is not None:
        how += f", {read_pool.size} connections, statements stopped after {read_pool.timeout:g} s"
    if encryption.on and not now:
        how += f", TLS {encryption.mode}: proven at its first read"
    elif encryption.on:
        if isinstance(conn, readpool.MySQLReader):
            cipher = await conn.encrypted()
        else:
            cipher = await tls.require_encrypted(conn, encryption)
        how += f", TLS {encryption.mode}: {cipher}"
    logger.info("%s %s (%s)", what, redact_url(url), how)


def sqlite_file(db_url: str) -> pathlib.Path | None:
    """Where a ``sqlite://`` URL keeps its file (what follows the scheme, relative or
    absolute, as Tortoise reads it); None for another database."""
    parts = urllib.parse.urlsplit(db_url)
    if parts.scheme != "sqlite":
        return None
    return pathlib.Path(parts.netloc + parts.path).absolute()


async def preflight(db_url: str, encryption: DbTls) -> None:
    """Before the operator starts: raise schema.NotAdopted if the database has tables it
    must not write to yet. A database that does not answer is left to the start, which
    retries; a SQLite file that does not exist yet is a new archive, and is not made here.
    """
    path = sqlite_file(db_url)
    if path is not None and not path.exists():
        return
    # The start logs the database it opens a moment later; a check says nothing.
    with logs.silenced("jobarchive", "tortoise"):
        try:
            await open_database(db_url, create=False, encryption=encryption)
        except failures.ERRORS:
            return
        try:
            await schema.require_adopted(connection())
        except failures.ERRORS:
            # Tortoise connects at the first query: a refused password shows here.
            return
        finally:
            await close_database()


async def close_database() -> None:
    """Close every connection; an open aiosqlite connection would keep the process alive."""
    await Tortoise.close_connections()


def connection() -> BaseDBAsyncClient:
    """The connection (pool) the store writes through."""
    client: BaseDBAsyncClient = connections.get(Job._meta.default_connection or "")
    return client
