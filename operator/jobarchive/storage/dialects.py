"""The SQL each engine writes differently: MySQL (MariaDB) and SQLite.

The rest of the package picks a ``Dialect`` for its connection (``of``) and never
asks which database it talks to. A dialect quotes names, marks parameters, upserts
(decisions 13 and 32) counting the rows the stale-write guard kept, inserts rows
written once, runs a write transaction, computes durations, bounds a name prefix,
compares text exactly and bounds a SELECT's time. What a database says of its
schema is ``introspection``; how its connections are set up, ``database``.
"""

import abc
import contextlib
import datetime
import functools
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiomysql.cursors import DictCursor
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from jobarchive.storage.models import Table

# One statement: affected rows and fetched rows.
Execute = Callable[[str, list[Any]], Awaitable[tuple[int, Sequence[Mapping[str, Any]]]]]
_INSERT_ONLY = frozenset({"gmt_created"})
# The columns the stale-write guard reads, assigned last on MySQL.
_GUARDED = ["cluster", "version"]


def _foreign(stored: str, written: str) -> str:
    """SQL: the stored row is another cluster's (decision 35). A row without a cluster
    (KubeDL's writer inserted it) is taken by the first cluster that writes it."""
    return f"({stored} IS NOT NULL AND {stored} <> {written})"


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
    def prefix_range(self, prefix: str) -> tuple[str, str] | None:
        """Bounds that every value starting with ``prefix`` lies in, as the engine
        compares text; None when it cannot say."""

    @abc.abstractmethod
    def exact(self, sql: str) -> str:
        """An SQL expression: the text of ``sql``, compared and grouped by case too."""

    @abc.abstractmethod
    def seconds_between(self, start: str, end: str) -> str:
        """An SQL expression: the seconds from column ``start`` to column ``end``."""

    @abc.abstractmethod
    def later(self, first: str, second: str) -> str:
        """An SQL expression: the later of two times (``earlier`` the earlier)."""

    @abc.abstractmethod
    def earlier(self, first: str, second: str) -> str:
        """An SQL expression: the earlier of two times."""

    @abc.abstractmethod
    def bounded(self, sql: str, seconds: float) -> str:
        """A SELECT carrying a time limit the database stops it at, ``seconds`` after it
        starts (other statements unchanged); unchanged where the engine has no limit."""

    # A join that reads its left table first, whatever the planner would choose.
    in_order_join = "JOIN"
    # Whether ``locking`` holds rows (SQLite's writers take turns: nothing to hold).
    locks_rows = False

    def locking(self, sql: str) -> str:
        """A SELECT that reads the newest committed rows and holds them until the
        transaction ends, where the engine has such a read (SQLite's writers are one at
        a time: unchanged)."""
        return sql

    def params(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The rows' values for a multi-row statement, column by column, row by row."""
        return [self.value(row[column]) for row in rows for column in table.columns]

    async def insert_new(
        self, execute: Execute, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> None:
        """Insert rows in one statement, those whose unique key is stored left alone."""
        await execute(self.insert_new_sql(table, len(rows)), self.params(table, rows))

    def insert_sql(self, table: Table, rows: int) -> str:
        """``INSERT INTO table (columns) VALUES`` and ``rows`` rows of placeholders: the
        head both engines' multi-row statements share."""
        q = self.quote
        one = "(" + ", ".join([self.placeholder] * len(table.columns)) + ")"
        return (
            f"INSERT INTO {q(table.name)} ({', '.join(q(c) for c in table.columns)}) "
            f"VALUES {', '.join([one] * rows)}"
        )


class MySQL(Dialect):
    """MySQL and MariaDB through aiomysql."""

    name = "mysql"
    engine = "tortoise.backends.mysql"
    placeholder = "%s"
    # MariaDB may read every job to find a few pods by theirs: STRAIGHT_JOIN keeps order.
    in_order_join = "STRAIGHT_JOIN"
    locks_rows = True

    def quote(self, identifier: str) -> str:
        """Backquoted, a backquote in it doubled; NUL and ``%`` refused (decision 13)."""
        return _quoted(identifier, "`", refused="\0%")

    def upsert_sql(self, table: Table, rows: int) -> str:
        """INSERT ... ON DUPLICATE KEY UPDATE, each column assigned unless the row is stale."""
        q = self.quote
        old, new = q("version"), f"VALUES({q('version')})"
        stale = (
            f"({old} REGEXP '^[0-9]+$' AND {new} REGEXP '^[0-9]+$' AND "
            f"(CHAR_LENGTH({new}) < CHAR_LENGTH({old}) OR "
            f"(CHAR_LENGTH({new}) = CHAR_LENGTH({old}) AND {new} < {old})))"
        )
        cluster = q("cluster")
        stale = f"({stale} OR {_foreign(cluster, f'VALUES({cluster})')})"
        # MySQL evaluates these assignments left to right, each seeing what the earlier
        # ones wrote. So the guard is evaluated once per row, by the first assignment,
        # into a session variable the others read (evaluating it per column cost 30% of
        # the throughput); and `version` is assigned last, so the guard reads the stored one.
        # `cluster` too is read by the guard (decision 35): assigned after it, like version.
        updated = [c for c in table.columns if c not in _INSERT_ONLY | {table.key, *_GUARDED}]
        updated += _GUARDED
        first, *rest = updated

        def written(column: str) -> str:
            if column in table.earliest:
                return _earliest(q(column), f"VALUES({q(column)})", "{}")
            return f"VALUES({q(column)})"

        # A stale row also bumps a counter, so the caller learns how many the guard kept.
        counted = f"(@jobarchive_stale := {stale}) AND (@jobarchive_kept := @jobarchive_kept + 1)"
        sets = [f"{q(first)} = IF({counted}, {q(first)}, {written(first)})"]
        sets += [f"{q(c)} = IF(@jobarchive_stale, {q(c)}, {written(c)})" for c in rest]
        return f"{self.insert_sql(table, rows)} ON DUPLICATE KEY UPDATE {', '.join(sets)}"

    def insert_new_sql(self, table: Table, rows: int) -> str:
        """ON DUPLICATE KEY UPDATE of the id to itself: a no-op for a stored key. Not
        INSERT IGNORE, which would also turn a value that does not fit into a warning."""
        key = self.quote("id")
        return f"{self.insert_sql(table, rows)} ON DUPLICATE KEY UPDATE {key} = {key}"

    def locking(self, sql: str) -> str:
        """``FOR UPDATE``."""
        return f"{sql} FOR UPDATE"

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
        await execute(self.upsert_sql(table, len(rows)), self.params(table, rows))
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

    def exact(self, sql: str) -> str:
        """Under the binary collation (the columns' ignores case and accents), converted
        first: a table KubeDL made may be in utf8mb3."""
        return f"CONVERT({sql} USING utf8mb4) COLLATE utf8mb4_bin"

    def seconds_between(self, start: str, end: str) -> str:
        """TIMESTAMPDIFF in whole seconds."""
        return f"TIMESTAMPDIFF(SECOND, {start}, {end})"

    def later(self, first: str, second: str) -> str:
        """GREATEST."""
        return f"GREATEST({first}, {second})"

    def earlier(self, first: str, second: str) -> str:
        """LEAST."""
        return f"LEAST({first}, {second})"

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


def _earliest(stored: str, written: str, comparable: str) -> str:
    """SQL of ``models.earliest``: the earlier of two times (each made ``comparable``),
    or the one that is not NULL."""
    later = f"{comparable.format(written)} > {comparable.format(stored)}"
    return (
        f"CASE WHEN {stored} IS NULL THEN {written} "
        f"WHEN {written} IS NULL OR {later} THEN {stored} ELSE {written} END"
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
    # SQLite keeps the left table of a CROSS JOIN outer.
    in_order_join = "CROSS JOIN"

    def quote(self, identifier: str) -> str:
        """Double-quoted, a double quote in it doubled; NUL refused."""
        return _quoted(identifier, '"', refused="\0")

    def upsert_sql(self, table: Table, rows: int) -> str:
        """INSERT ... ON CONFLICT DO UPDATE, whose WHERE skips a stale row entirely."""
        q = self.quote
        old, new = f"{q(table.name)}.{q('version')}", f"excluded.{q('version')}"
        digits = "{0} <> '' AND {0} NOT GLOB '*[^0-9]*'"
        stale = (
            f"({digits.format(old)} AND {digits.format(new)} AND "
            f"(length({new}) < length({old}) OR (length({new}) = length({old}) AND {new} < {old})))"
        )
        cluster = q("cluster")
        stale = f"({stale} OR {_foreign(f'{q(table.name)}.{cluster}', f'excluded.{cluster}')})"
        updated = [c for c in table.columns if c not in _INSERT_ONLY and c != table.key]

        def written(column: str) -> str:
            if column in table.earliest:
                stored = f"{q(table.name)}.{q(column)}"
                return _earliest(stored, f"excluded.{q(column)}", "julianday({})")
            return f"excluded.{q(column)}"

        sets = ", ".join(f"{q(c)} = {written(c)}" for c in updated)
        return (
            f"{self.insert_sql(table, rows)} "
            f"ON CONFLICT({q(table.key)}) DO UPDATE SET {sets} WHERE NOT {stale}"
        )

    def insert_new_sql(self, table: Table, rows: int) -> str:
        """ON CONFLICT DO NOTHING, whatever unique key the row meets."""
        return f"{self.insert_sql(table, rows)} ON CONFLICT DO NOTHING"

    def value(self, value: Any) -> Any:
        """Booleans as 0/1; aiosqlite converts the rest."""
        return int(value) if isinstance(value, bool) else value

    async def upsert(
        self, execute: Execute, table: Table, rows: Sequence[Mapping[str, Any]]
    ) -> int:
        """SQLite counts only rows inserted or updated; the guard's WHERE skips the rest."""
        changed, _ = await execute(self.upsert_sql(table, len(rows)), self.params(table, rows))
        return len(rows) - changed

    @contextlib.asynccontextmanager
    async def transaction(self, conn: BaseDBAsyncClient) -> AsyncIterator[Execute]:
        """Tortoise's transaction."""
        async with in_transaction(conn.connection_name) as transaction:
            yield transaction.execute_query

    def prefix_range(self, prefix: str) -> tuple[str, str] | None:
        """None: SQLite's LIKE ignores ASCII case where its comparisons do not."""
        return None

    def exact(self, sql: str) -> str:
        """Unchanged: SQLite compares and groups text byte by byte."""
        return sql

    def seconds_between(self, start: str, end: str) -> str:
        """The difference of Julian days, in (fractional) seconds."""
        return f"(julianday({end}) - julianday({start})) * 86400.0"

    def later(self, first: str, second: str) -> str:
        """The scalar MAX, comparing the stored text (ISO times compare as times)."""
        return f"MAX({first}, {second})"

    def earlier(self, first: str, second: str) -> str:
        """The scalar MIN."""
        return f"MIN({first}, {second})"

    def bounded(self, sql: str, seconds: float) -> str:
        """Unchanged: SQLite has no limit of its own; ``storage.readpool`` interrupts a
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
