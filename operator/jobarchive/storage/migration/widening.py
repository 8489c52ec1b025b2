"""The schema steps: the columns a table lacks, its text converted to utf8mb4, its
columns widened (never narrowed) and made NOT NULL where they should be, the unique
key on its uid. Only a MySQL table has a character set and declared lengths to
change: the DDL that changes them is MySQL's."""

from typing import Any

from tortoise import fields
from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.storage import schema
from jobarchive.storage.dialects import Dialect
from jobarchive.storage.introspection import Column
from jobarchive.storage.migration.steps import Part, Step, left_alone
from jobarchive.storage.models import TABLES, Stamped


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


def modify_sql(dialect: Dialect, table: str, definitions: dict[str, str]) -> str:
    """ALTER TABLE ... MODIFY, all columns in one statement: one rebuild of the table."""
    changes = ", ".join(
        f"MODIFY {dialect.quote(name)} {definition}" for name, definition in definitions.items()
    )
    return f"ALTER TABLE {dialect.quote(table)} {changes}"


def utf8mb4_sql(dialect: Dialect, table: str) -> str:
    """CONVERT TO CHARACTER SET: every text column too, not only the default."""
    return f"ALTER TABLE {dialect.quote(table)} CONVERT TO CHARACTER SET utf8mb4"


class Columns(Part):
    """The schema steps: missing columns (a table's rows given ``cluster``, decision 35),
    text and column types, the unique key."""

    def __init__(self, conn: BaseDBAsyncClient, batch: int, cluster: str = DEFAULT_CLUSTER) -> None:
        super().__init__(conn, batch)
        self.cluster = cluster

    async def unknown(self, model: type[Stamped]) -> Step | None:
        """The table's columns the model does not know, as ``left_alone`` names them;
        None when it has none."""
        table = model._meta.db_table
        known = set(model._meta.fields_db_projection.values())
        unknown = await self.schema.columns(self.conn, table) - known
        return left_alone(table, sorted(unknown)) if unknown else None

    async def columns(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Add the columns the model has and its table lacks."""
        table = model._meta.db_table
        missing = await schema.missing_columns(self.conn, model)
        if missing and not dry_run:
            await schema.ensure_columns(self.conn, (model,), self.cluster)
            await schema.clear_cluster_defaults(self.conn)
        return [Step(table, f"add columns {', '.join(missing)}", len(missing))] if missing else []

    async def types(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Convert the table's text to utf8mb4; widen its columns narrower than the
        model's and make NOT NULL those the model says are."""
        table = model._meta.db_table
        steps = []
        charset = await self.schema.charset(self.conn, table)
        if charset is not None and charset != "utf8mb4":
            steps.append(Step(table, f"convert text from {charset} to utf8mb4", 1))
            if not dry_run:
                await self.conn.execute_script(utf8mb4_sql(self.dialect, table))
        declared = await self.schema.column_types(self.conn, table)
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
                await self.conn.execute_script(modify_sql(self.dialect, table, changes))
        return steps

    async def unique_key(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Add the unique key on the table's uid (after its duplicates are merged)."""
        table = TABLES[model]
        if (table.key,) in await self.schema.unique_keys(self.conn, table.name):
            return []
        if not dry_run:
            quote = self.dialect.quote
            await self.conn.execute_script(
                f"CREATE UNIQUE INDEX {quote(f'uq_{table.name}_{table.key}')} "
                f"ON {quote(table.name)} ({quote(table.key)})"
            )
        return [Step(table.name, f"add the unique key on {table.key}", 1)]
