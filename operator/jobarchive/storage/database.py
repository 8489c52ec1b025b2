"""Opening and closing the database through Tortoise, and creating the schema.

Two facts of Tortoise 1.x shape this module (PITFALLS.md): its state lives in a
context variable, so the context opened in Kopf's startup handler must be the
global fallback to be seen by the handler tasks; and only the first pooled MySQL
connection would get the session time zone, so every connection sets it through
``init_command``. The MySQL driver is logged because Tortoise picks asyncmy over
aiomysql silently whenever asyncmy is importable.
"""

import importlib.util
import logging
import warnings
from typing import Any

from tortoise import Tortoise, connections
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.backends.base.config_generator import expand_db_url

from jobarchive.config import redact_url
from jobarchive.storage.models import Event, Job, Pod, Stamped

logger = logging.getLogger(__name__)

MODELS_MODULE = "jobarchive.storage.models"
_ENGINE_NAMES = {"tortoise.backends.mysql": "mysql", "tortoise.backends.sqlite": "sqlite"}


def tortoise_config(db_url: str, pool_size: int = 5) -> dict[str, Any]:
    """The Tortoise configuration for a database URL (UTC everywhere, utf8mb4 on MySQL)."""
    connection = expand_db_url(db_url)
    # The connection is named after its engine: Tortoise caches compiled queries per
    # connection name, so one process that opens MySQL and then SQLite (the tests)
    # must not find MySQL's placeholders in SQLite's statements.
    name = _ENGINE_NAMES[connection["engine"]]
    if connection["engine"] == "tortoise.backends.mysql":
        credentials = connection["credentials"]
        credentials.setdefault("charset", "utf8mb4")
        credentials["init_command"] = "SET time_zone='+00:00'"
        credentials.setdefault("maxsize", pool_size)
    return {
        "connections": {name: connection},
        "apps": {"jobarchive": {"models": [MODELS_MODULE], "default_connection": name}},
        "use_tz": True,
        "timezone": "UTC",
    }


def mysql_driver() -> str:
    """The MySQL driver Tortoise uses in this environment."""
    return "asyncmy" if importlib.util.find_spec("asyncmy") else "aiomysql"


async def open_database(db_url: str, pool_size: int = 5, create: bool = True) -> None:
    """Connect, and unless ``create`` is false (readers, which may lack the privilege),
    create the tables and indexes that do not exist yet.

    ``pool_size`` bounds MySQL connections; it must exceed the number of concurrent
    transactions, since Tortoise waits forever for a free connection.
    """
    config = tortoise_config(db_url, pool_size)
    await Tortoise.init(config=config, _enable_global_fallback=True)
    dialect = next(iter(config["connections"]))
    driver = mysql_driver() if dialect == "mysql" else "aiosqlite"
    logger.info("Database %s (%s via %s)", redact_url(db_url), dialect, driver)
    if not create:
        return
    with warnings.catch_warnings():
        # MySQL answers CREATE TABLE IF NOT EXISTS on an existing table with a warning
        # that aiomysql raises as a Python warning at every start; it is the normal case.
        warnings.filterwarnings("ignore", message=r"Table '.*' already exists")
        await Tortoise.generate_schemas(safe=True)
    await ensure_columns(connection())
    await ensure_indexes(connection())


async def _existing_columns(conn: BaseDBAsyncClient, table: str) -> set[str]:
    if conn.capabilities.dialect == "mysql":
        _, rows = await conn.execute_query(
            "SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            [table],
        )
    else:
        rows = await conn.execute_query_dict(f'PRAGMA table_info("{table}")')
    return {str(row["name"]) for row in rows}


async def ensure_columns(conn: BaseDBAsyncClient) -> list[str]:
    """Add the models' columns that an existing table lacks; returns ``table.column``s.

    Columns added after a table was created are nullable, so rows written before
    read as NULL there.
    """
    added = []
    dialect = conn.capabilities.dialect
    models: tuple[type[Stamped], ...] = (Job, Pod, Event)
    for model in models:
        table = model._meta.db_table
        existing = await _existing_columns(conn, table)
        for name, field in model._meta.fields_map.items():
            column = field.source_field or name
            if column in existing:
                continue
            if not field.null:
                raise RuntimeError(f"{table}.{column} is missing and cannot be added NOT NULL")
            sql_type = field.get_for_dialect(dialect, "SQL_TYPE")
            await conn.execute_script(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type} NULL")
            logger.info("Added column %s.%s (%s)", table, column, sql_type)
            added.append(f"{table}.{column}")
    return added


async def _existing_indexes(conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
    """The column lists of a table's indexes."""
    if conn.capabilities.dialect == "mysql":
        _, rows = await conn.execute_query(
            "SELECT INDEX_NAME AS name, COLUMN_NAME AS col FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            [table],
        )
        columns: dict[str, tuple[str, ...]] = {}
        for row in rows:
            columns[row["name"]] = (*columns.get(row["name"], ()), row["col"])
        return set(columns.values())
    found = set()
    for index in await conn.execute_query_dict(f'PRAGMA index_list("{table}")'):
        info = await conn.execute_query_dict(f'PRAGMA index_info("{index["name"]}")')
        found.add(tuple(str(column["name"]) for column in sorted(info, key=lambda c: c["seqno"])))
    return found


async def ensure_indexes(conn: BaseDBAsyncClient) -> list[str]:
    """Create the models' indexes that an existing table lacks; returns their names.

    ``generate_schemas`` creates indexes only with a new table, so a database made by
    an earlier version would never get the indexes added since.
    """
    created = []
    models: tuple[type[Stamped], ...] = (Job, Pod, Event)
    for model in models:
        table = model._meta.db_table
        existing = await _existing_indexes(conn, table)
        for columns in model._meta.indexes:
            # The models declare plain column tuples, never Index objects.
            if not isinstance(columns, tuple):
                continue
            wanted = tuple(str(column) for column in columns)
            if wanted in existing:
                continue
            name = f"ix_{table}_{'_'.join(wanted)}"[:64]
            quoted = ", ".join(
                f"`{c}`" if conn.capabilities.dialect == "mysql" else f'"{c}"' for c in wanted
            )
            await conn.execute_script(f"CREATE INDEX {name} ON {table} ({quoted})")
            logger.info("Created index %s on %s (%s)", name, table, ", ".join(wanted))
            created.append(name)
    return created


async def close_database() -> None:
    """Close every connection; an open aiosqlite connection would keep the process alive."""
    await Tortoise.close_connections()


def connection() -> BaseDBAsyncClient:
    """The connection (pool) the store writes through."""
    client: BaseDBAsyncClient = connections.get(Job._meta.default_connection or "")
    return client
