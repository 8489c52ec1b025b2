"""Cutting the values an archive stored before the bounds (``Stamped.BOUNDS``,
``JSON_BOUNDS``) to them in place: a step of ``jobarchive migrate``.

The read side cuts such values as it reads them (decision 24); this saves the database
reading a million characters each time, and a backup carrying them.
"""

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.cutting import MARK, fit_json
from jobarchive.storage import dialects
from jobarchive.storage.models import Stamped

# Rows whose JSON is read whole at a time: a megabyte each, at most.
JSON_BATCH = 20


class Trimming:
    """The values of one database past their bounds, counted and cut."""

    def __init__(self, conn: BaseDBAsyncClient, batch: int) -> None:
        self.conn = conn
        self.batch = batch
        self.dialect = dialects.of(conn)

    async def oversized(self, model: type[Stamped], dry_run: bool) -> dict[str, int]:
        """Per column of ``model`` present in the table, how many values are past their
        bound; cut to it too, unless ``dry_run``."""
        table = model._meta.db_table
        present = await self.dialect.columns(self.conn, table)
        found: dict[str, int] = {}
        for column, length in {**model.BOUNDS, **model.JSON_BOUNDS}.items():
            if column not in present:
                continue
            count = await self._count(table, column, length)
            if count and not dry_run:
                if column in model.JSON_BOUNDS:
                    await self._fit(table, column, length)
                else:
                    await self._clip(table, column, length)
            if count:
                found[column] = count
        return found

    def _past(self, column: str, length: int) -> str:
        # In characters: MySQL's LENGTH counts bytes, SQLite's characters.
        size = "CHAR_LENGTH" if self.dialect.name == "mysql" else "LENGTH"
        return f"{size}({self.dialect.quote(column)}) > {int(length)}"

    async def _count(self, table: str, column: str, length: int) -> int:
        counted = await self.conn.execute_query_dict(
            f"SELECT COUNT(*) AS n FROM {self.dialect.quote(table)} "
            f"WHERE {self._past(column, length)}"
        )
        return int(counted[0]["n"])

    async def _clip(self, table: str, column: str, length: int) -> None:
        """Free text: its first ``length - 1`` characters, read cut by the database, and
        the mark."""
        quote = self.dialect.quote
        select = (
            f"SELECT {quote('id')} AS id, SUBSTR({quote(column)}, 1, {int(length) - 1}) AS head "
            f"FROM {quote(table)} WHERE {self._past(column, length)} LIMIT {self.batch}"
        )
        while found := await self.conn.execute_query_dict(select):
            await self._write(table, column, [(row["head"] + MARK, row["id"]) for row in found])

    async def _fit(self, table: str, column: str, length: int) -> None:
        """JSON: read whole, a few rows at a time, and fitted as the write path fits it."""
        quote = self.dialect.quote
        select = (
            f"SELECT {quote('id')} AS id, {quote(column)} AS value FROM {quote(table)} "
            f"WHERE {self._past(column, length)} LIMIT {JSON_BATCH}"
        )
        while found := await self.conn.execute_query_dict(select):
            fitted = [(fit_json(str(row["value"]), length), row["id"]) for row in found]
            await self._write(table, column, fitted)

    async def _write(self, table: str, column: str, values: list[tuple[str, int]]) -> None:
        quote, mark = self.dialect.quote, self.dialect.placeholder
        statement = (
            f"UPDATE {quote(table)} SET {quote(column)} = {mark} WHERE {quote('id')} = {mark}"
        )
        async with self.dialect.transaction(self.conn) as execute:
            for value, row_id in values:
                await execute(statement, [value, row_id])
