"""Adopting a database that KubeDL (or an earlier jobarchive) created: ``jobarchive migrate``.

KubeDL creates ``job_info`` and ``replica_info`` with no unique keys, narrow columns
(varchar(128) names, varchar(32) status and kind), every column nullable, and, before
v0.4, the finish time in ``gmt_finished`` only, since then in ``gmt_job_finished``
only. jobarchive's upsert finds a row by its uid's unique key: on such a table every
write would add a row. So the operator refuses to start on it (``schema.NotAdopted``)
and this module brings it to jobarchive's schema, in steps:

1. add the columns it lacks;
2. merge the rows of one uid into one (``keeper``): the newest version is kept, its
   NULL columns filled from the older rows, newest first;
3. fill NULLs where jobarchive's schema says NOT NULL (``''``, the flag defaults, the
   row's other timestamp);
4. fill ``gmt_finished`` from ``gmt_job_finished`` and the reverse;
5. convert the text to utf8mb4, and widen the columns narrower than jobarchive's
   (never narrowing one) and make NOT NULL what should be;
6. cut free text and JSON stored past their bounds (``trimming``);
7. add the unique keys, then the indexes.

Every step asks the database what is left to do and does it in batches, each in a
transaction of its own, so a migration killed at any point finishes when run again,
and a second run finds nothing to do. ``plan`` only counts.
"""

import dataclasses
import datetime
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tortoise import fields
from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.storage import dialects, schema
from jobarchive.storage.dialects import Column, Dialect
from jobarchive.storage.models import TABLES, Event, Job, Pod, Stamped, Table, utcnow
from jobarchive.storage.trimming import Trimming

BATCH = 500
# A line names a column it does not know by its repr cut at SHOWN characters, and at
# most NAMED of a table's such columns.
SHOWN = 80
NAMED = 10
# jobarchive's finish columns of a job: the seed's and KubeDL >= 0.4's, kept equal.
FINISH_COLUMNS = ("gmt_finished", "gmt_job_finished")


@dataclasses.dataclass(frozen=True)
class Step:
    """One thing a migration does (or would do), and how many rows or columns it takes."""

    table: str
    what: str
    count: int

    def describe(self, dry_run: bool) -> str:
        """A line for people: ``job_info: merge duplicate rows: 12``."""
        return f"{self.table}: {self.what}: {self.count}" + (" (dry run)" if dry_run else "")


Report = Callable[[Step], None]


def shown(name: str) -> str:
    """A name the database gave, for a line of output: its repr (every control character
    escaped, so it stays one line), cut at SHOWN characters, saying so."""
    text = repr(name)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(name)} characters)"


def left_alone(table: str, unknown: Sequence[str]) -> Step:
    """The step naming a table's columns the model does not know, in one line (the first
    NAMED, ``shown``): reported only, as nothing is done to them."""
    names = ", ".join(shown(name) for name in unknown[:NAMED])
    more = f", and {len(unknown) - NAMED} more" if len(unknown) > NAMED else ""
    return Step(
        table, f"leave alone the columns jobarchive does not know, {names}{more}", len(unknown)
    )


def newest_first(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of one uid, newest first: by resourceVersion compared as an integer
    (non-numeric versions cannot be compared and count as oldest), then by the later
    ``gmt_modified``, then by the higher id, the row written last."""

    def key(row: Mapping[str, Any]) -> tuple[int, int, str, datetime.datetime, int]:
        version = str(row.get("version") or "")
        numeric = version.isascii() and version.isdigit()
        modified = row.get("gmt_modified") or datetime.datetime.min
        return (
            int(numeric),
            len(version) if numeric else 0,
            version if numeric else "",
            modified.replace(tzinfo=None),
            int(row["id"]),
        )

    return sorted(rows, key=key, reverse=True)


def merged(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The keeper of a uid's rows: the newest, its NULL columns taken from the older
    rows, newest first (KubeDL's console shows whichever row it meets first)."""
    ordered = newest_first(rows)
    keeper = dict(ordered[0])
    for older in ordered[1:]:
        for column, value in older.items():
            if keeper.get(column) is None and value is not None:
                keeper[column] = value
    return keeper


def definition(field: fields.Field[Any], column: Column, dialect: str) -> str | None:
    """The column's new definition, or None when it already holds what the model
    writes: as wide or wider, and NULL only where the model allows it."""
    wanted = str(field.get_for_dialect(dialect, "SQL_TYPE"))
    kind, _, size = wanted.lower().partition("(")
    length = int(size.rstrip(")")) if size.rstrip(")").isdigit() else None
    if kind == "bool":
        kind = "tinyint"
    fits = {
        "varchar": column.data_type in ("varchar", "text", "mediumtext", "longtext")
        and (column.data_type != "varchar" or (column.length or 0) >= (length or 0)),
        "longtext": column.data_type == "longtext",
        "datetime": column.data_type == "datetime" and (column.length or 0) >= (length or 0),
    }.get(kind, column.data_type == kind)
    if fits and (column.nullable == field.null or not column.nullable):
        return None
    # A column wide enough keeps its type: only its NULL rule changes.
    wanted = column.declared if fits else wanted
    null = "NULL" if field.null else "NOT NULL"
    default = field.default
    if default is None or callable(default):
        return f"{wanted} {null}"
    literal = int(default) if isinstance(default, bool) else repr(default)
    return f"{wanted} {null} DEFAULT {literal}"


def default_sql(name: str, field: fields.Field[Any], dialect: Dialect) -> str:
    """The SQL value that stands for a missing one in a NOT NULL column."""
    quote = dialect.quote
    if isinstance(field, fields.DatetimeField):
        # A row's other timestamp is the best witness of when it was written.
        other = "gmt_created" if name == "gmt_modified" else "gmt_modified"
        now = dialect.value(utcnow())
        return f"COALESCE({quote(other)}, '{now:%Y-%m-%d %H:%M:%S}')"
    if isinstance(field, fields.BooleanField):
        return "1" if field.default else "0"
    if isinstance(field, fields.IntField):
        return "0"
    return "''"


class _Part:
    """A part of the migration, on one connection."""

    def __init__(self, conn: BaseDBAsyncClient, batch: int) -> None:
        self.conn = conn
        self.dialect: Dialect = dialects.of(conn)
        self.batch = batch


class Rows(_Part):
    """The row steps: merging duplicates, filling NULLs and the two finish times."""

    async def duplicates(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        table = TABLES[model]
        quote = self.dialect.quote
        key = quote(table.key)
        count_sql = (
            f"SELECT COUNT(*) AS uids, COALESCE(SUM(n), 0) - COUNT(*) AS extra FROM "
            f"(SELECT COUNT(*) AS n FROM {quote(table.name)} WHERE {key} IS NOT NULL "
            f"GROUP BY {key} HAVING COUNT(*) > 1) AS duplicated"
        )
        counted = (await self.conn.execute_query_dict(count_sql))[0]
        extra = int(counted["extra"] or 0)
        if not extra:
            return []
        step = Step(table.name, f"merge duplicate rows of {counted['uids']} uids", extra)
        if dry_run:
            return [step]
        uids_sql = (
            f"SELECT {key} AS uid FROM {quote(table.name)} WHERE {key} IS NOT NULL "
            f"GROUP BY {key} HAVING COUNT(*) > 1 LIMIT {self.batch}"
        )
        existing = await self.dialect.columns(self.conn, table.name)
        known = [column for column in ("id", *table.columns) if column in existing]
        while uids := [row["uid"] for row in await self.conn.execute_query_dict(uids_sql)]:
            await self._merge(table, known, uids)
        return [step]

    async def _merge(self, table: Table, known: Sequence[str], uids: list[Any]) -> None:
        """Merge the rows of these uids, in one transaction: an interrupted batch leaves
        its duplicates for the next run. Only the ``known`` columns (the model's) are
        read and written: a column another account added is left as it is."""
        quote, mark = self.dialect.quote, self.dialect.placeholder
        marks = ", ".join([mark] * len(uids))
        async with self.dialect.transaction(self.conn) as execute:
            _, found = await execute(
                f"SELECT {', '.join(quote(column) for column in known)} FROM "
                f"{quote(table.name)} WHERE {quote(table.key)} IN ({marks})",
                list(uids),
            )
            by_uid: dict[Any, list[Mapping[str, Any]]] = {}
            for row in found:
                by_uid.setdefault(row[table.key], []).append(row)
            for rows in by_uid.values():
                keeper = merged(rows)
                columns = [column for column in keeper if column != "id"]
                assignments = ", ".join(f"{quote(column)} = {mark}" for column in columns)
                await execute(
                    f"UPDATE {quote(table.name)} SET {assignments} WHERE {quote('id')} = {mark}",
                    [keeper[column] for column in columns] + [keeper["id"]],
                )
                others = [row["id"] for row in rows if row["id"] != keeper["id"]]
                await execute(
                    f"DELETE FROM {quote(table.name)} WHERE {quote('id')} IN "
                    f"({', '.join([mark] * len(others))})",
                    others,
                )

    async def nulls(
        self, model: type[Stamped], dry_run: bool, only: Sequence[str] | None = None
    ) -> list[Step]:
        """Fill NULLs in the columns the model says are NOT NULL (``only`` these)."""
        table = model._meta.db_table
        existing = await self.dialect.columns(self.conn, table)
        steps = []
        for name, field in model._meta.fields_map.items():
            if field.null or name == model._meta.pk_attr or name not in existing:
                continue
            if only is not None and name not in only:
                continue
            step = await self._fill(
                table,
                name,
                f"fill NULL {name}",
                f"{self.dialect.quote(name)} IS NULL",
                default_sql(name, field, self.dialect),
                dry_run,
            )
            steps.extend(step)
        return steps

    async def finish_times(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        existing = await self.dialect.columns(self.conn, model._meta.db_table)
        if model is not Job or not existing.issuperset(FINISH_COLUMNS):
            # A column still to be added is filled on the run that adds it.
            return []
        quote = self.dialect.quote
        steps = []
        for target, source in (FINISH_COLUMNS, tuple(reversed(FINISH_COLUMNS))):
            steps += await self._fill(
                Job._meta.db_table,
                target,
                f"fill {target} from {source}",
                f"{quote(target)} IS NULL AND {quote(source)} IS NOT NULL",
                quote(source),
                dry_run,
            )
        return steps

    async def _fill(
        self, table: str, column: str, what: str, where: str, value: str, dry_run: bool
    ) -> list[Step]:
        """Set ``column`` to the SQL ``value`` where ``where`` holds, a batch at a time."""
        quote = self.dialect.quote
        counted = await self.conn.execute_query_dict(
            f"SELECT COUNT(*) AS n FROM {quote(table)} WHERE {where}"
        )
        count = int(counted[0]["n"])
        if not count:
            return []
        if not dry_run:
            select = (
                f"SELECT {quote('id')} AS id FROM {quote(table)} WHERE {where} LIMIT {self.batch}"
            )
            while ids := [row["id"] for row in await self.conn.execute_query_dict(select)]:
                marks = ", ".join([self.dialect.placeholder] * len(ids))
                async with self.dialect.transaction(self.conn) as execute:
                    await execute(
                        f"UPDATE {quote(table)} SET {quote(column)} = {value} "
                        f"WHERE {quote('id')} IN ({marks})",
                        ids,
                    )
        return [Step(table, what, count)]


class Links(_Part):
    """The links between rows a newer schema keeps: the job of an Event."""

    async def event_jobs(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Give Events recorded before ``event_info.job_id`` existed their job: the job of
        the pod they are about, or the job itself. A job's timeline is read by job_id."""
        table = model._meta.db_table
        if model is not Event or "job_id" not in await self.dialect.columns(self.conn, table):
            return []
        quote, mark = self.dialect.quote, self.dialect.placeholder
        pod_job = (
            f"(SELECT p.{quote('job_id')} FROM {quote(Pod._meta.db_table)} p "
            f"WHERE p.{quote('pod_id')} = {quote(table)}.{quote('obj_uid')})"
        )
        a_job = (
            f"(SELECT j.{quote('job_id')} FROM {quote(Job._meta.db_table)} j "
            f"WHERE j.{quote('job_id')} = {quote(table)}.{quote('obj_uid')})"
        )
        unset = f"{quote('job_id')} IS NULL"
        counted = await self.conn.execute_query_dict(
            f"SELECT COUNT(*) AS n FROM {quote(table)} WHERE {unset} "
            f"AND COALESCE({pod_job}, {a_job}) IS NOT NULL"
        )
        count = int(counted[0]["n"])
        if count and not dry_run:
            # By id, once over: an Event whose subject is unknown stays without a job.
            after = 0
            select = (
                f"SELECT {quote('id')} AS id FROM {quote(table)} WHERE {unset} "
                f"AND {quote('id')} > {mark} ORDER BY {quote('id')} LIMIT {self.batch}"
            )
            while ids := [row["id"] for row in await self.conn.execute_query_dict(select, [after])]:
                after = ids[-1]
                async with self.dialect.transaction(self.conn) as execute:
                    await execute(
                        f"UPDATE {quote(table)} SET {quote('job_id')} = "
                        f"COALESCE({pod_job}, {a_job}) WHERE {quote('id')} IN "
                        f"({', '.join([mark] * len(ids))})",
                        ids,
                    )
        return (
            [Step(table, "fill job_id of Events recorded before it existed", count)]
            if count
            else []
        )


class Columns(_Part):
    """The schema steps: missing columns, text and column types, the unique key."""

    async def unknown(self, model: type[Stamped]) -> Step | None:
        """The table's columns the model does not know, as ``left_alone`` names them;
        None when it has none."""
        table = model._meta.db_table
        known = set(model._meta.fields_db_projection.values())
        unknown = await self.dialect.columns(self.conn, table) - known
        return left_alone(table, sorted(unknown)) if unknown else None

    async def columns(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        table = model._meta.db_table
        missing = await schema.missing_columns(self.conn, model)
        if missing and not dry_run:
            await schema.ensure_columns(self.conn, (model,))
        return [Step(table, f"add columns {', '.join(missing)}", len(missing))] if missing else []

    async def types(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        table = model._meta.db_table
        steps = []
        charset = await self.dialect.charset(self.conn, table)
        if charset is not None and charset != "utf8mb4":
            steps.append(Step(table, f"convert text from {charset} to utf8mb4", 1))
            if not dry_run:
                await self.conn.execute_script(self.dialect.utf8mb4_sql(table))
        declared = await self.dialect.column_types(self.conn, table)
        changes = {
            name: new
            for name, field in model._meta.fields_map.items()
            if name != model._meta.pk_attr
            and name in declared
            and (new := definition(field, declared[name], self.dialect.name)) is not None
        }
        if changes:
            steps.append(
                Step(table, f"widen or tighten {', '.join(sorted(changes))}", len(changes))
            )
            if not dry_run:
                await self.conn.execute_script(self.dialect.modify_sql(table, changes))
        return steps

    async def unique_key(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        table = TABLES[model]
        if (table.key,) in await self.dialect.unique_keys(self.conn, table.name):
            return []
        if not dry_run:
            quote = self.dialect.quote
            await self.conn.execute_script(
                f"CREATE UNIQUE INDEX {quote(f'uq_{table.name}_{table.key}')} "
                f"ON {quote(table.name)} ({quote(table.key)})"
            )
        return [Step(table.name, f"add the unique key on {table.key}", 1)]


async def upgrade(conn: BaseDBAsyncClient, added: Sequence[str]) -> list[Step]:
    """At every start, after the missing columns are added (``added``, as
    ``table.column``): what an earlier jobarchive's rows lack for KubeDL's readers.

    A column still nullable where the schema now says NOT NULL (``owner`` and
    ``tenant`` were) gets its NULLs filled and its rule tightened; a finish column
    just added is filled from the other; Events from before ``event_info.job_id``
    get their job. Only the schema and an index range are read to find out, so a
    start with nothing to do scans no table.
    """
    rows, columns = Rows(conn, BATCH), Columns(conn, BATCH)
    steps: list[Step] = []
    for model in TABLES:
        declared = await rows.dialect.column_types(conn, model._meta.db_table)
        loose = [
            name
            for name, field in model._meta.fields_map.items()
            if not field.null and name in declared and declared[name].nullable
        ]
        if loose:
            steps += await rows.nulls(model, dry_run=False, only=loose)
            steps += await columns.types(model, dry_run=False)
    if any(f"{Job._meta.db_table}.{column}" in added for column in FINISH_COLUMNS):
        steps += await rows.finish_times(Job, dry_run=False)
    # Cheap when there is nothing to do: NULL job_ids are a range of their index.
    steps += await Links(conn, BATCH).event_jobs(Event, dry_run=False)
    return steps


class Migration:
    """The steps that bring one database to jobarchive's schema; see the module docstring."""

    def __init__(self, conn: BaseDBAsyncClient, batch: int = BATCH) -> None:
        self.conn = conn
        self.dialect: Dialect = dialects.of(conn)
        self.rows = Rows(conn, batch)
        self.links = Links(conn, batch)
        self.columns = Columns(conn, batch)
        self.trimming = Trimming(conn, batch)

    async def run(self, dry_run: bool, report: Report) -> list[Step]:
        """Do (or with ``dry_run`` only count) every step; returns what was to do."""
        steps: list[Step] = []
        tables = await self._tables()
        for model, table in TABLES.items():
            if table.name not in tables:
                continue
            if (unknown := await self.columns.unknown(model)) is not None:
                # Reported, not returned: it is not a step to do, and a second run
                # still finds nothing to do.
                report(unknown)
            for step in (
                self.columns.columns,
                self.rows.duplicates,
                self.rows.nulls,
                self.rows.finish_times,
                self.links.event_jobs,
                self.columns.types,
                self._trimmed,
                self.columns.unique_key,
            ):
                found = await step(model, dry_run)
                for one in found:
                    report(one)
                steps.extend(found)
        for table in TABLES.values():
            if table.name not in tables:
                steps.append(Step(table.name, "create the table", 1))
                report(steps[-1])
        if not dry_run:
            await schema.create_tables()
            created = await schema.ensure_indexes(self.conn)
            if created:
                steps.append(Step("*", "create indexes", len(created)))
                report(steps[-1])
        return steps

    async def _trimmed(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Values stored past their bounds before the bounds were kept, cut to them."""
        found = await self.trimming.oversized(model, dry_run)
        table = model._meta.db_table
        return [Step(table, f"cut {column} to its bound", n) for column, n in found.items()]

    async def _tables(self) -> set[str]:
        names = set()
        for table in TABLES.values():
            if await self.dialect.columns(self.conn, table.name):
                names.add(table.name)
        return names
