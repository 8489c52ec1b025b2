"""Creating the schema, and bringing a database made by an earlier version up to it.

``generate_schemas`` creates missing tables only: a table that exists keeps the
columns and indexes it was created with. So after it, every column and index the
models declare is looked for and the missing ones are added. The schema only
grows: nothing here drops or alters what exists.
"""

import logging
import warnings

from tortoise import Tortoise
from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.storage import dialects
from jobarchive.storage.models import Event, Job, Pod, Stamped

logger = logging.getLogger(__name__)
MODELS: tuple[type[Stamped], ...] = (Job, Pod, Event)


async def ensure_schema(conn: BaseDBAsyncClient) -> None:
    """Create the tables that do not exist, then the columns and indexes they lack."""
    with warnings.catch_warnings():
        # MySQL answers CREATE TABLE IF NOT EXISTS on an existing table with a warning
        # that aiomysql raises as a Python warning at every start; it is the normal case.
        warnings.filterwarnings("ignore", message=r"Table '.*' already exists")
        await Tortoise.generate_schemas(safe=True)
    await ensure_columns(conn)
    await ensure_indexes(conn)


async def ensure_columns(conn: BaseDBAsyncClient) -> list[str]:
    """Add the models' columns that an existing table lacks; returns ``table.column``s.

    Columns added after a table was created are nullable, so rows written before
    read as NULL there.
    """
    added = []
    dialect = dialects.of(conn)
    for model in MODELS:
        table = model._meta.db_table
        existing = await dialect.columns(conn, table)
        for name, field in model._meta.fields_map.items():
            column = field.source_field or name
            if column in existing:
                continue
            if not field.null:
                raise RuntimeError(f"{table}.{column} is missing and cannot be added NOT NULL")
            sql_type = field.get_for_dialect(dialect.name, "SQL_TYPE")
            await conn.execute_script(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type} NULL")
            logger.info("Added column %s.%s (%s)", table, column, sql_type)
            added.append(f"{table}.{column}")
    return added


async def ensure_indexes(conn: BaseDBAsyncClient) -> list[str]:
    """Create the models' indexes that an existing table lacks; returns their names."""
    created = []
    dialect = dialects.of(conn)
    for model in MODELS:
        table = model._meta.db_table
        existing = await dialect.indexes(conn, table)
        for columns in model._meta.indexes:
            # The models declare plain column tuples, never Index objects.
            if not isinstance(columns, tuple):
                continue
            wanted = tuple(str(column) for column in columns)
            if wanted in existing:
                continue
            name = f"ix_{table}_{'_'.join(wanted)}"[:64]
            quoted = ", ".join(dialect.quote(column) for column in wanted)
            await conn.execute_script(f"CREATE INDEX {name} ON {table} ({quoted})")
            logger.info("Created index %s on %s (%s)", name, table, ", ".join(wanted))
            created.append(name)
    return created
