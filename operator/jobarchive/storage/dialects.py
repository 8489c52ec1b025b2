"""Every difference between MySQL (MariaDB) and SQLite, in one place.

The rest of the package picks a ``Dialect`` for its connection (``of``) and never
asks which database it talks to. A dialect knows how its engine is configured, how
it quotes names and marks parameters, how it upserts and counts the rows the
stale-write guard kept, how a write transaction is run, how its schema is
introspected, how it computes a duration, and how a SELECT carries the time limit
the server stops it at.

The upserts are hand-written because Tortoise's ``bulk_create(update_fields=...)``
emits MySQL 8 syntax that MariaDB rejects, and because the stale-write guard must
be evaluated by the database, row by row, against what is stored: a row whose
stored resourceVersion is newer keeps every column. resourceVersions are compared
as integers when both are decimal digit strings (shorter is smaller, then lexical,
so no cast can overflow); otherwise the incoming write wins, as Kubernetes calls
them opaque. ``gmt_created`` is written on insert only.
"""

import abc
import contextlib
import dataclasses
import datetime
import functools
import importlib.util
import math
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiomysql.cursors import DictCursor
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from jobarchive.config import DbTls
from jobarchive.storage.models import Table
from jobarchive.storage.tls import ssl_context


@dataclasses.dataclass(frozen=True)
class Column:
    """A column as the database declares it: ``varchar`` of 128, nullable, say."""

    data_type: str
    length: int | None
    nullable: bool
    # The type as declared, e.g. ``varchar(128)`` or ``bigint(20) unsigned``.
    declared: str


# One statement: affected rows and fetched rows.
Execute = Callable[[str, list[Any]], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]]
_INSERT_ONLY = frozenset({"gmt_created"})


def _quoted(identifier: str, mark: str, refused: str) -> str:
    """``identifier`` between two ``mark``s, each ``mark`` in it doubled: how both engines
    read a quote character inside a quoted name. A character of ``refused`` raises."""
    if any(character in identifier for character in refused):
        raise ValueError(f"{identifier[:80]!r} holds one of {refused!r}, refused in a name")
    return mark + identifier.replace(mark, mark * 2) + mark


class Dialect(abc.ABC):
    """What differs between the databases the store supports."""

    # Tortoise's ``capabilities.dialect``, also the name of the connection.
    name: str
    # Tortoise's backend module for the engine.
    engine: str
    placeholder: str

    @abc.abstractmethod
    def configure(self, credentials: dict[str, Any], pool_size: int, tls: DbTls) -> None:
        """Adjust a connection's credentials (options) before Tortoise opens it."""

    @abc.abstractmethod
    def driver(self) -> str:
        """The Python driver Tortoise uses for this engine here."""

    @abc.abstractmethod
    def quote(self, identifier: str) -> str:
        """A table, column or index name as one identifier, whatever characters it holds."""

    @abc.abstractmethod
    def upsert_sql(self, table: Table, rows: int) -> str:
        """The guarded upsert of ``rows`` rows into ``table``, with placeholders."""

    @abc.abstractmethod
    def insert_new_sql(self, table: Table, rows: int) -> str:
        """An insert of ``rows`` rows into ``table`` that leaves alone, without an error,
        each row whose unique key is stored already: rows written once, never updated."""

    @abc.abstractmethod
    def value(self, value: Any) -> Any:
        """A column value as the driver takes it."""

    @abc.abstractmethod
    async def upsert(
        self, execute: Execute, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """Upsert stamped rows in one statement; returns how many the guard kept as they were."""

    @abc.abstractmethod
    def transaction(
        self, conn: BaseDBAsyncClient
    ) -> contextlib.AbstractAsyncContextManager[Execute]:
        """A write transaction: the statements run through what it yields, then commit,
        or roll back when the block raises."""

    @abc.abstractmethod
    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """The names of a table's columns."""

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
    def modify_sql(self, table: str, definitions: dict[str, str]) -> str:
        """One statement giving columns new definitions (``type [NOT] NULL ...``)."""

    @abc.abstractmethod
    async def charset(self, conn: BaseDBAsyncClient, table: str) -> str | None:
        """The character set of a table's text, where the engine has one per table."""

    @abc.abstractmethod
    def utf8mb4_sql(self, table: str) -> str:
        """The statement converting a table's text to utf8mb4."""

    @abc.abstractmethod
    def prefix_range(self, prefix: str) -> tuple[str, str] | None:
        """Bounds that every value starting with ``prefix`` lies in, as the engine
        compares text; None when it cannot say."""

    @abc.abstractmethod
    def seconds_between(self, start: str, end: str) -> str:
        """An SQL expression: the seconds from column ``start`` to column ``end``."""

    @abc.abstractmethod
    def bounded(self, sql: str, seconds: float) -> str:
        """A SELECT carrying a time limit the database stops it at, ``seconds`` after it
        starts (other statements unchanged); unchanged where the engine has no limit."""

    def params(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The rows' values for a multi-row statement, column by column, row by row."""
        return self._params(table, rows)

    def _params(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        return [self.value(row[column]) for row in rows for column in table.columns]


class MySQL(Dialect):
    """MySQL and MariaDB through aiomysql.

    Longer than a sitting because it implements every method of ``Dialect`` for one
    engine; each is short and stands alone.
    """

    name = "mysql"
    engine = "tortoise.backends.mysql"
    placeholder = "%s"

    def configure(self, credentials: dict[str, Any], pool_size: int, tls: DbTls) -> None:
        """utf8mb4, UTC, the pool's size, the user as decoded, and TLS when asked for.

        The time zone goes in ``init_command``: set once on a session, only the first
        pooled connection would have it. aiomysql takes TLS as an ``ssl`` context.
        """
        credentials.setdefault("charset", "utf8mb4")
        credentials["init_command"] = "SET time_zone='+00:00'"
        credentials.setdefault("maxsize", pool_size)
        # Tortoise decodes the URL's password but passes its user name percent-encoded.
        if credentials.get("user"):
            credentials["user"] = urllib.parse.unquote(credentials["user"])
        context = ssl_context(tls)
        if context is not None:
            credentials["ssl"] = context

    def driver(self) -> str:
        """asyncmy whenever it is importable: Tortoise prefers it silently over aiomysql."""
        return "asyncmy" if importlib.util.find_spec("asyncmy") else "aiomysql"

    def quote(self, identifier: str) -> str:
        """Backquoted, a backquote in it doubled; NUL and ``%`` refused (decision 13)."""
        return _quoted(identifier, "`", refused="\0%")

    def upsert_sql(self, table: Table, rows: int) -> str:
        """INSERT ... ON DUPLICATE KEY UPDATE, each column assigned unless the row is stale."""
        q = self.quote
        cols = ", ".join(q(c) for c in table.columns)
        one = "(" + ", ".join([self.placeholder] * len(table.columns)) + ")"
        old, new = q("version"), f"VALUES({q('version')})"
        stale = (
            f"({old} REGEXP '^[0-9]+$' AND {new} REGEXP '^[0-9]+$' AND "
            f"(CHAR_LENGTH({new}) < CHAR_LENGTH({old}) OR "
            f"(CHAR_LENGTH({new}) = CHAR_LENGTH({old}) AND {new} < {old})))"
        )
        # MySQL evaluates these assignments left to right, each seeing what the earlier
        # ones wrote. So the guard is evaluated once per row, by the first assignment,
        # into a session variable the others read (evaluating it per column cost 30% of
        # the throughput); and `version` is assigned last, so the guard reads the stored one.
        updated = [c for c in table.columns if c not in _INSERT_ONLY | {table.key, "version"}]
        updated.append("version")
        first, *rest = updated
        # A stale row also bumps a counter, so the caller learns how many the guard kept.
        counted = f"(@jobarchive_stale := {stale}) AND (@jobarchive_kept := @jobarchive_kept + 1)"
        sets = [f"{q(first)} = IF({counted}, {q(first)}, VALUES({q(first)}))"]
        sets += [f"{q(c)} = IF(@jobarchive_stale, {q(c)}, VALUES({q(c)}))" for c in rest]
        values = ", ".join([one] * rows)
        return (
            f"INSERT INTO {q(table.name)} ({cols}) VALUES {values} "
            f"ON DUPLICATE KEY UPDATE {', '.join(sets)}"
        )

    def insert_new_sql(self, table: Table, rows: int) -> str:
        """ON DUPLICATE KEY UPDATE of the id to itself: a no-op for a stored key. Not
        INSERT IGNORE, which would also turn a value that does not fit into a warning."""
        cols = ", ".join(self.quote(c) for c in table.columns)
        one = "(" + ", ".join([self.placeholder] * len(table.columns)) + ")"
        values = ", ".join([one] * rows)
        key = self.quote("id")
        return (
            f"INSERT INTO {self.quote(table.name)} ({cols}) VALUES {values} "
            f"ON DUPLICATE KEY UPDATE {key} = {key}"
        )

    def value(self, value: Any) -> Any:
        """Booleans as 0/1, datetimes naive in UTC."""
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, datetime.datetime):
            # The session time zone is UTC and PyMySQL drops tzinfo: convert, then drop it.
            return value.astimezone(datetime.UTC).replace(tzinfo=None)
        return value

    async def upsert(
        self, execute: Execute, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """The upsert between resetting and reading the guard's counter.

        MySQL's affected-rows count cannot tell a stale row from an insert plus an
        update, so the guard counts in a session variable instead.
        """
        await execute("SET @jobarchive_kept = 0", [])
        await execute(self.upsert_sql(table, len(rows)), self._params(table, rows))
        _, found = await execute("SELECT @jobarchive_kept AS kept", [])
        return int(found[0]["kept"])

    @contextlib.asynccontextmanager
    async def transaction(self, conn: BaseDBAsyncClient) -> AsyncIterator[Execute]:
        """On a connection taken from the pool directly, not in Tortoise's transaction.

        When BEGIN fails on a dead connection, Tortoise's transaction never gives
        its connection back, and a few database restarts would drain the pool.
        """
        async with conn.acquire_connection() as raw:
            await raw.begin()
            try:
                yield functools.partial(_execute_raw, raw)
                await raw.commit()
            except BaseException:
                with contextlib.suppress(Exception):
                    await raw.rollback()
                raise

    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """From information_schema."""
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

    def modify_sql(self, table: str, definitions: dict[str, str]) -> str:
        """ALTER TABLE ... MODIFY, all columns in one statement: one rebuild of the table."""
        changes = ", ".join(
            f"MODIFY {self.quote(name)} {definition}" for name, definition in definitions.items()
        )
        return f"ALTER TABLE {self.quote(table)} {changes}"

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

    def utf8mb4_sql(self, table: str) -> str:
        """CONVERT TO CHARACTER SET: every text column too, not only the default."""
        return f"ALTER TABLE {self.quote(table)} CONVERT TO CHARACTER SET utf8mb4"

    def prefix_range(self, prefix: str) -> tuple[str, str] | None:
        """From the prefix to the prefix with its last character's successor, for a
        prefix ending in a character of Kubernetes names (letters, digits, ``-``, ``.``).

        The columns' collation is case- and accent-insensitive: for those characters
        the successor also sorts after the character in either case, so the range holds
        every name the LIKE finds. Past them (an accented letter weighs as its base
        letter) a successor could sort level with it: no range is given.
        """
        if not prefix or not (
            prefix[-1].isascii() and (prefix[-1].isalnum() or prefix[-1] in "-.")
        ):
            return None
        return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)

    def seconds_between(self, start: str, end: str) -> str:
        """TIMESTAMPDIFF in whole seconds."""
        return f"TIMESTAMPDIFF(SECOND, {start}, {end})"

    def bounded(self, sql: str, seconds: float) -> str:
        """Both servers' limits, each hidden from the other, so that no server needs
        telling apart: MariaDB's ``SET STATEMENT max_statement_time=<seconds> FOR``
        inside a MariaDB-only executable comment (``/*M!...*/``, a plain comment to
        MySQL), and MySQL's optimizer hint ``MAX_EXECUTION_TIME(<milliseconds>)``,
        which bounds SELECTs only, and which MariaDB before 12 reads as a comment and
        later versions as the same limit."""
        if sql[:6].upper() != "SELECT":
            return sql
        milliseconds = max(1, math.ceil(seconds * 1000))
        return (
            f"/*M!100102 SET STATEMENT max_statement_time={milliseconds / 1000:.3f} FOR*/ "
            f"SELECT /*+ MAX_EXECUTION_TIME({milliseconds}) */{sql[6:]}"
        )


async def _execute_raw(raw: Any, sql: str, params: list[Any]) -> tuple[int, list[dict[str, Any]]]:
    """One statement on an aiomysql connection: affected rows and fetched rows."""
    async with raw.cursor(DictCursor) as cursor:
        await cursor.execute(sql, params or None)
        return cursor.rowcount, list(await cursor.fetchall())


class SQLite(Dialect):
    """SQLite through aiosqlite."""

    name = "sqlite"
    engine = "tortoise.backends.sqlite"
    placeholder = "?"

    def configure(self, credentials: dict[str, Any], pool_size: int, tls: DbTls) -> None:
        """Nothing to adjust: Tortoise's defaults suit one file and one connection, and
        the settings refuse TLS for a SQLite file."""

    def driver(self) -> str:
        """Tortoise's only SQLite driver."""
        return "aiosqlite"

    def quote(self, identifier: str) -> str:
        """Double-quoted, a double quote in it doubled; NUL refused."""
        return _quoted(identifier, '"', refused="\0")

    def upsert_sql(self, table: Table, rows: int) -> str:
        """INSERT ... ON CONFLICT DO UPDATE, whose WHERE skips a stale row entirely."""
        q = self.quote
        cols = ", ".join(q(c) for c in table.columns)
        one = "(" + ", ".join([self.placeholder] * len(table.columns)) + ")"
        old, new = f"{q(table.name)}.{q('version')}", f"excluded.{q('version')}"
        digits = "{0} <> '' AND {0} NOT GLOB '*[^0-9]*'"
        stale = (
            f"({digits.format(old)} AND {digits.format(new)} AND "
            f"(length({new}) < length({old}) OR (length({new}) = length({old}) AND {new} < {old})))"
        )
        updated = [c for c in table.columns if c not in _INSERT_ONLY and c != table.key]
        sets = ", ".join(f"{q(c)} = excluded.{q(c)}" for c in updated)
        values = ", ".join([one] * rows)
        return (
            f"INSERT INTO {q(table.name)} ({cols}) VALUES {values} "
            f"ON CONFLICT({q(table.key)}) DO UPDATE SET {sets} WHERE NOT {stale}"
        )

    def insert_new_sql(self, table: Table, rows: int) -> str:
        """ON CONFLICT DO NOTHING, whatever unique key the row meets."""
        cols = ", ".join(self.quote(c) for c in table.columns)
        one = "(" + ", ".join([self.placeholder] * len(table.columns)) + ")"
        values = ", ".join([one] * rows)
        return (
            f"INSERT INTO {self.quote(table.name)} ({cols}) VALUES {values} ON CONFLICT DO NOTHING"
        )

    def value(self, value: Any) -> Any:
        """Booleans as 0/1; aiosqlite converts the rest."""
        return int(value) if isinstance(value, bool) else value

    async def upsert(
        self, execute: Execute, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """SQLite counts only rows inserted or updated; the guard's WHERE skips the rest."""
        changed, _ = await execute(self.upsert_sql(table, len(rows)), self._params(table, rows))
        return len(rows) - changed

    @contextlib.asynccontextmanager
    async def transaction(self, conn: BaseDBAsyncClient) -> AsyncIterator[Execute]:
        """Tortoise's transaction."""
        async with in_transaction(conn.connection_name) as transaction:
            yield transaction.execute_query

    async def columns(self, conn: BaseDBAsyncClient, table: str) -> set[str]:
        """From PRAGMA table_info."""
        rows = await conn.execute_query_dict(f"PRAGMA table_info({self.quote(table)})")
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
        for index in await conn.execute_query_dict(f"PRAGMA index_list({self.quote(table)})"):
            if unique and not index["unique"]:
                continue
            info = await conn.execute_query_dict(f"PRAGMA index_info({self.quote(index['name'])})")
            ordered = sorted(info, key=lambda column: column["seqno"])
            found.add(tuple(str(column["name"]) for column in ordered))
        return found

    async def column_types(self, conn: BaseDBAsyncClient, table: str) -> dict[str, Column]:
        """None: SQLite enforces no length, so no column of its ever needs widening."""
        return {}

    def modify_sql(self, table: str, definitions: dict[str, str]) -> str:
        """Never needed (see ``column_types``), and SQLite cannot modify a column."""
        raise NotImplementedError("SQLite columns are never modified")

    async def charset(self, conn: BaseDBAsyncClient, table: str) -> str | None:
        """None: SQLite stores all text as UTF-8."""
        return None

    def utf8mb4_sql(self, table: str) -> str:
        """Never needed (see ``charset``)."""
        raise NotImplementedError("SQLite text is always UTF-8")

    def prefix_range(self, prefix: str) -> tuple[str, str] | None:
        """None: SQLite's LIKE ignores ASCII case where its comparisons do not."""
        return None

    def seconds_between(self, start: str, end: str) -> str:
        """The difference of Julian days, in (fractional) seconds."""
        return f"(julianday({end}) - julianday({start})) * 86400.0"

    def bounded(self, sql: str, seconds: float) -> str:
        """Unchanged: SQLite has no limit of its own; ``storage.reads`` interrupts a
        statement at its deadline instead."""
        return sql


MYSQL = MySQL()
SQLITE = SQLite()
DIALECTS: dict[str, Dialect] = {dialect.name: dialect for dialect in (MYSQL, SQLITE)}
_BY_ENGINE = {dialect.engine: dialect for dialect in DIALECTS.values()}


def of(conn: BaseDBAsyncClient) -> Dialect:
    """The dialect of a connection."""
    return DIALECTS[conn.capabilities.dialect]


def for_engine(engine: str) -> Dialect:
    """The dialect of a Tortoise backend module (``tortoise.backends.mysql``, say)."""
    return _BY_ENGINE[engine]
