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
"""

import logging
import pathlib
import urllib.parse
from typing import Any

from tortoise import Tortoise, connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive import logs
from jobarchive.config import DbTls, redact_url, url_secrets
from jobarchive.storage import dialects, failures, migration, schema, tls
from jobarchive.storage.models import Job

logger = logging.getLogger(__name__)

MODELS_MODULE = "jobarchive.storage.models"


def tortoise_config(db_url: str, pool_size: int, encryption: DbTls) -> dict[str, Any]:
    """The Tortoise configuration for a database URL (UTC everywhere, utf8mb4 on MySQL)."""
    connection = expand_db_url(db_url)
    dialect = dialects.for_engine(connection["engine"])
    # The connection is named after its engine: one process that opens MySQL and then
    # SQLite (the tests) must not find MySQL's placeholders in SQLite's statements.
    dialect.configure(connection["credentials"], pool_size, encryption)
    return {
        "connections": {dialect.name: connection},
        "apps": {"jobarchive": {"models": [MODELS_MODULE], "default_connection": dialect.name}},
        "use_tz": True,
        "timezone": "UTC",
    }


async def open_database(
    db_url: str, pool_size: int = 5, create: bool = True, *, encryption: DbTls
) -> None:
    """Connect, and unless ``create`` is false (readers, which may lack the privilege),
    create the tables, columns and indexes that do not exist yet.

    ``pool_size`` bounds MySQL connections; it must exceed the number of concurrent
    transactions, since Tortoise waits forever for a free connection. ``encryption``
    has no default, so that no caller can drop the TLS the settings ask for; with TLS
    on, the database connects here and raises ``tls.NotEncrypted`` in clear text.
    """
    logs.redact(url_secrets(db_url))
    config = tortoise_config(db_url, pool_size, encryption)
    await Tortoise.init(config=config, _enable_global_fallback=True)
    dialect = dialects.of(connection())
    how = f"{dialect.name} via {dialect.driver()}"
    if encryption.on:
        cipher = await tls.require_encrypted(connection(), encryption)
        how += f", TLS {encryption.mode}: {cipher}"
    logger.info("Database %s (%s)", redact_url(db_url), how)
    if create:
        added = await schema.ensure_schema(connection())
        for step in await migration.upgrade(connection(), added):
            logger.info("Upgraded %s", step.describe(dry_run=False))


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
