"""Creating the schema, and bringing a database made by an earlier version up to it.

``generate_schemas`` creates missing tables only: a table that exists keeps the
columns and indexes it was created with. So after it, every column and index the
models declare is looked for and the missing ones are added. The schema only
grows: nothing here drops or alters what exists.

A table from before ``cluster`` (decision 35) gets it with every row's value at once,
the cluster of the operator that adds it: a column added with that DEFAULT (instant
on MariaDB and SQLite), whose default MySQL then sets back to NULL.

A table without the unique key on its uid was not made by jobarchive (KubeDL makes
them so): every upsert would add a row to it. Opening such a database fails with
``NotAdopted``, which names ``jobarchive migrate`` (``storage.migration``).
"""

import logging
import re
import warnings

from tortoise import Tortoise
from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.rows import CLUSTER_PATTERN, DEFAULT_CLUSTER
from jobarchive.storage import dialects, introspection
from jobarchive.storage.failed import FailedJob, FailedPod
from jobarchive.storage.kueue import Attempt, QueueJob, QueueSpan, Quota, Wait
from jobarchive.storage.models import TABLES, Event, Job, LogTail, Pod, Stamped, UsageDay
from jobarchive.storage.summaries import Summary

logger = logging.getLogger(__name__)
MODELS: tuple[type[Stamped], ...] = (
    Job,
    Pod,
    Event,
    LogTail,
    UsageDay,
    Attempt,
    Wait,
    Quota,
    QueueSpan,
    QueueJob,
    FailedJob,
    FailedPod,
    Summary,
)


class NotAdopted(Exception):
    """The database has tables jobarchive cannot write to before ``jobarchive migrate``."""


class ClusterClash(NotAdopted):
    """The archive holds another cluster whose name the database cannot tell apart."""


async def ensure_schema(conn: BaseDBAsyncClient, cluster: str = DEFAULT_CLUSTER) -> list[str]:
    """Create the tables that do not exist, then the columns and indexes they lack (the
    rows from before ``cluster`` existed given ``cluster``); returns the columns added
    (``table.column``). Raises NotAdopted, changing nothing, on tables without their
    unique keys."""
    await require_adopted(conn)
    # Columns first: Tortoise creates SQLite's indexes of an existing table too, and
    # SQLite takes a double-quoted name it does not know for a string, so an index over
    # a column not yet added would index that text and answer it as the column's value.
    added = await ensure_columns(conn, cluster=cluster)
    await create_tables()
    await clear_cluster_defaults(conn)
    await ensure_indexes(conn)
    await require_distinct_cluster(conn, cluster)
    return added


async def require_distinct_cluster(conn: BaseDBAsyncClient, cluster: str) -> None:
    """Raise ClusterClash if this cluster has no jobs in the archive yet and another's
    name differs from ``cluster`` only in case, which MariaDB's text comparison ignores:
    the cluster filters, and so the grants of decision 36, could not keep the two apart.
    A cluster recording already is not stopped by a newcomer: it is warned of one.
    Both ends of the (cluster, gmt_created) range the name covers, then (on a clash)
    this cluster's first job; a no-op on SQLite, which compares bytes."""
    dialect = dialects.of(conn)
    name, mark = dialect.exact("cluster"), dialect.placeholder
    jobs = f"SELECT {name} AS name FROM {dialect.quote(Job._meta.db_table)} WHERE cluster = {mark}"
    names: set[str] = set()
    for order in ("", " DESC"):
        sql = f"{jobs} ORDER BY gmt_created{order} LIMIT 1"
        names |= {str(row["name"]) for row in await conn.execute_query_dict(sql, [cluster])}
    others = sorted(names - {cluster})
    if not others:
        return
    clash = (
        f"the archive holds jobs of the cluster {others[0]!r}, which the database does not "
        f"tell apart from this one, {cluster!r} (it compares text without regard to case)"
    )
    own = f"{jobs} AND {name} = {mark} LIMIT 1"
    if not await conn.execute_query_dict(own, [cluster, cluster]):
        raise ClusterClash(f"{clash}: name this cluster otherwise (JOBARCHIVE_CLUSTER)")
    logger.warning("%s; reads cannot tell their rows apart", clash)


async def require_adopted(conn: BaseDBAsyncClient) -> None:
    """Raise NotAdopted, naming the tables, if any lacks the unique key on its uid."""
    unadopted = await tables_without_unique_keys(conn)
    if unadopted:
        raise NotAdopted(
            f"{', '.join(unadopted)} has no unique key, as in the tables KubeDL creates: "
            "run `jobarchive migrate` once (docs/schema.md: Coming from KubeDL)"
        )


async def require_readable(conn: BaseDBAsyncClient) -> None:
    """Raise NotAdopted if a table lacks the unique keys or the columns the reader reads."""
    await require_adopted(conn)
    for model in MODELS:
        if not await introspection.of(conn).columns(conn, model._meta.db_table):
            continue
        missing = await missing_columns(conn, model)
        if missing:
            raise NotAdopted(
                f"{model._meta.db_table} lacks {', '.join(missing)}: start the operator "
                "once, or run `jobarchive migrate`, to bring the schema up to date"
            )


async def tables_without_unique_keys(conn: BaseDBAsyncClient) -> list[str]:
    """``table.key`` of each existing table whose uid column has no unique key."""
    schema = introspection.of(conn)
    found = []
    for table in TABLES.values():
        exists = bool(await schema.columns(conn, table.name))
        if exists and (table.key,) not in await schema.unique_keys(conn, table.name):
            found.append(f"{table.name}.{table.key}")
    return found


async def create_tables() -> None:
    """Create the tables that do not exist yet."""
    with warnings.catch_warnings():
        # MySQL answers CREATE TABLE IF NOT EXISTS on an existing table with a warning
        # that aiomysql raises as a Python warning at every start; it is the normal case.
        warnings.filterwarnings("ignore", message=r"Table '.*' already exists")
        await Tortoise.generate_schemas(safe=True)


async def missing_columns(conn: BaseDBAsyncClient, model: type[Stamped]) -> list[str]:
    """The model's columns that its table lacks."""
    existing = await introspection.of(conn).columns(conn, model._meta.db_table)
    return [
        field.source_field or name
        for name, field in model._meta.fields_map.items()
        if (field.source_field or name) not in existing
    ]


def cluster_literal(cluster: str) -> str:
    """A cluster's name as an SQL string literal; a name that is not one is refused."""
    if not re.fullmatch(CLUSTER_PATTERN, cluster):
        raise ValueError(f"{cluster[:80]!r} is not a cluster's name")
    return f"'{cluster}'"


async def ensure_columns(
    conn: BaseDBAsyncClient,
    models: tuple[type[Stamped], ...] = MODELS,
    cluster: str = DEFAULT_CLUSTER,
) -> list[str]:
    """Add the models' columns that an existing table lacks; returns ``table.column``s.

    Columns added after a table was created are nullable, so rows written before
    read as NULL there; but ``cluster``, which they get as ``cluster``.
    """
    added = []
    dialect = dialects.of(conn)
    filled = f" DEFAULT {cluster_literal(cluster)}"
    for model in models:
        table = model._meta.db_table
        if not await introspection.of(conn).columns(conn, table):
            continue
        missing = set(await missing_columns(conn, model))
        for name, field in model._meta.fields_map.items():
            column = field.source_field or name
            if column not in missing:
                continue
            if not field.null:
                raise RuntimeError(f"{table}.{column} is missing and cannot be added NOT NULL")
            sql_type = field.get_for_dialect(dialect.name, "SQL_TYPE")
            await conn.execute_script(
                f"ALTER TABLE {dialect.quote(table)} ADD COLUMN {dialect.quote(column)} "
                f"{sql_type} NULL{filled if column == 'cluster' else ''}"
            )
            logger.info("Added column %s.%s (%s)", table, column, sql_type)
            added.append(f"{table}.{column}")
    return added


async def clear_cluster_defaults(conn: BaseDBAsyncClient) -> None:
    """On MySQL, set back to NULL the default that ``ensure_columns`` gave ``cluster``
    (and a stop before this left): a row inserted without a cluster (KubeDL's writer)
    must not be taken for that cluster's. SQLite keeps it: it cannot change a default,
    and only jobarchive writes it, always naming the cluster."""
    dialect = dialects.of(conn)
    if dialect is not dialects.MYSQL:
        return
    # MariaDB writes a string default quoted, NULL as the word NULL.
    tables = [model._meta.db_table for model in MODELS]
    _, rows = await conn.execute_query(
        "SELECT TABLE_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = "
        "DATABASE() AND COLUMN_NAME = 'cluster' AND COLUMN_DEFAULT IS NOT NULL AND "
        f"COLUMN_DEFAULT <> 'NULL' AND TABLE_NAME IN ({', '.join(['%s'] * len(tables))})",
        tables,
    )
    for row in rows:
        table, column = dialect.quote(str(row["name"])), dialect.quote("cluster")
        await conn.execute_script(f"ALTER TABLE {table} ALTER COLUMN {column} SET DEFAULT NULL")


async def ensure_indexes(conn: BaseDBAsyncClient) -> list[str]:
    """Create the models' indexes that an existing table lacks; returns their names."""
    created = []
    dialect = dialects.of(conn)
    for model in MODELS:
        table = model._meta.db_table
        existing = await introspection.of(conn).indexes(conn, table)
        for columns in model._meta.indexes:
            # The models declare plain column tuples, never Index objects.
            if not isinstance(columns, tuple):
                continue
            wanted = tuple(str(column) for column in columns)
            if wanted in existing:
                continue
            name = f"ix_{table}_{'_'.join(wanted)}"[:64]
            quoted = ", ".join(dialect.quote(column) for column in wanted)
            await conn.execute_script(
                f"CREATE INDEX {dialect.quote(name)} ON {dialect.quote(table)} ({quoted})"
            )
            logger.info("Created index %s on %s (%s)", name, table, ", ".join(wanted))
            created.append(name)
    return created
