"""What a database says of its schema: a table's columns, their types, its indexes and
unique keys, its character set; MySQL (MariaDB) from ``information_schema``, SQLite
from its PRAGMAs. Only reads: what changes the schema is ``schema`` (at start) and
``migration``.
"""

import abc
import dataclasses

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.storage.dialects import MYSQL, SQLITE


@dataclasses.dataclass(frozen=True)
class Column:
    """A column as the database declares it: ``varchar`` of 128, nullable, say."""

    data_type: str
    length: int | None
    nullable: bool
    # The type as declared, e.g. ``varchar(128)`` or ``bigint(20) unsigned``.
    declared: str


class Introspection(abc.ABC):
    """How one engine answers questions about its schema."""

    @abc.abstractmethod
    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """The names of a table's columns (none for a table that does not exist)."""

    @abc.abstractmethod
    async def indexes(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """The column lists of a table's indexes."""

    @abc.abstractmethod
    async def index_names(self, conn: BaseDBAsyncClient, table: str) -> dict[tuple[str, ...], str]:
        """Each index of a table by its column list: its name, for an index hint."""

    @abc.abstractmethod
    async def unique_keys(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """The column lists of a table's unique indexes."""

    @abc.abstractmethod
    async def column_types(self, conn: BaseDBAsyncClient, table: str) -> dict[str, Column]:
        """What each column of a table holds, where the engine enforces it (else empty)."""

    @abc.abstractmethod
    async def charset(self, conn: BaseDBAsyncClient, table: str) -> str | None:
        """The character set of a table's text, where the engine has one per table."""


class MySQLSchema(Introspection):
    """MySQL and MariaDB: from information_schema, of the connection's database."""

    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """From information_schema.COLUMNS."""
        _, rows = await conn.execute_query(
            "SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            [table],
        )
        return {str(row["name"]) for row in rows}

    async def indexes(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """From information_schema, columns in their order in the index."""
        return set((await self._index_columns(conn, table)).values())

    async def index_names(self, conn: BaseDBAsyncClient, table: str) -> dict[tuple[str, ...], str]:
        """From information_schema, columns in their order in the index."""
        return {cols: name for name, cols in (await self._index_columns(conn, table)).items()}

    async def unique_keys(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """From information_schema: indexes with NON_UNIQUE = 0."""
        return set((await self._index_columns(conn, table, unique=True)).values())

    async def _index_columns(
        self, conn: BaseDBAsyncClient, table: str, unique: bool = False
    ) -> dict[str, tuple[str, ...]]:
        """Each index by name, with its columns in their order in it."""
        _, rows = await conn.execute_query(
            "SELECT INDEX_NAME AS name, COLUMN_NAME AS col FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s"
            + (" AND NON_UNIQUE = 0" if unique else "")
            + " ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            [table],
        )
        columns: dict[str, tuple[str, ...]] = {}
        for row in rows:
            columns[row["name"]] = (*columns.get(row["name"], ()), row["col"])
        return columns

    async def column_types(self, conn: BaseDBAsyncClient, table: str) -> dict[str, Column]:
        """From information_schema: the type, its length (characters, or a datetime's
        fractional digits), and whether NULL is allowed."""
        _, rows = await conn.execute_query(
            "SELECT COLUMN_NAME AS name, DATA_TYPE AS type, COLUMN_TYPE AS declared, "
            "COALESCE(CHARACTER_MAXIMUM_LENGTH, DATETIME_PRECISION) AS length, "
            "IS_NULLABLE AS nullable FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            [table],
        )
        return {
            str(row["name"]): Column(
                str(row["type"]).lower(),
                int(row["length"]) if row["length"] is not None else None,
                row["nullable"] == "YES",
                str(row["declared"]),
            )
            for row in rows
        }

    async def charset(self, conn: BaseDBAsyncClient, table: str) -> str | None:
        """The character set of the table's default collation."""
        _, rows = await conn.execute_query(
            "SELECT c.CHARACTER_SET_NAME AS charset FROM information_schema.TABLES t "
            "JOIN information_schema.COLLATION_CHARACTER_SET_APPLICABILITY c "
            "ON c.COLLATION_NAME = t.TABLE_COLLATION "
            "WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME = %s",
            [table],
        )
        return str(rows[0]["charset"]) if rows else None


class SQLiteSchema(Introspection):
    """SQLite: from its PRAGMAs."""

    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """From PRAGMA table_info."""
        rows = await conn.execute_query_dict(f"PRAGMA table_info({SQLITE.quote(table)})")
        return {str(row["name"]) for row in rows}

    async def indexes(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """From PRAGMA index_list and index_info."""
        return await self._index_columns(conn, table)

    async def index_names(self, conn: BaseDBAsyncClient, table: str) -> dict[tuple[str, ...], str]:
        """None: SQLite takes no index hints (Tortoise leaves them out for it)."""
        return {}

    async def unique_keys(self, conn: BaseDBAsyncClient, table: str) -> set[tuple[str, ...]]:
        """From PRAGMA index_list (its ``unique`` flag) and index_info."""
        return await self._index_columns(conn, table, unique=True)

    async def _index_columns(
        self, conn: BaseDBAsyncClient, table: str, unique: bool = False
    ) -> set[tuple[str, ...]]:
        """The column lists of a table's indexes (its unique ones only, if asked)."""
        found = set()
        for index in await conn.execute_query_dict(f"PRAGMA index_list({SQLITE.quote(table)})"):
            if unique and not index["unique"]:
                continue
            info = await conn.execute_query_dict(
                f"PRAGMA index_info({SQLITE.quote(index['name'])})"
            )
            ordered = sorted(info, key=lambda column: column["seqno"])
            found.add(tuple(str(column["name"]) for column in ordered))
        return found

    async def column_types(self, conn: BaseDBAsyncClient, table: str) -> dict[str, Column]:
        """None: SQLite enforces no length, so no column of its ever needs widening."""
        return {}

    async def charset(self, conn: BaseDBAsyncClient, table: str) -> str | None:
        """None: SQLite stores all text as UTF-8."""
        return None


_BY_DIALECT: dict[str, Introspection] = {MYSQL.name: MySQLSchema(), SQLITE.name: SQLiteSchema()}


def of(conn: BaseDBAsyncClient) -> Introspection:
    """How the connection's database answers questions about its schema."""
    return _BY_DIALECT[conn.capabilities.dialect]
