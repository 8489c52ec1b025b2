"""Cutting the values an archive stored before the bounds (``Stamped.BOUNDS``,
``JSON_BOUNDS``) to them in place: a step of ``jobarchive migrate``.

The read side cuts such values as it reads them (decision 24); this saves the database
reading a million characters each time, and a backup carrying them.
"""

from collections.abc import Callable

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.cutting import clip, fit_json
from jobarchive.storage import dialects, introspection
from jobarchive.storage.models import Stamped

# Rows whose JSON is read whole at a time: a megabyte each, at most.
JSON_BATCH = 20
Fit = Callable[[str, int], str]


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
        present = await introspection.of(self.conn).columns(self.conn, table)
        found: dict[str, int] = {}
        for column, length in {**model.BOUNDS, **model.JSON_BOUNDS}.items():
            if column not in present:
                continue
            fit = fit_json if column in model.JSON_BOUNDS else clip
            count = await self._cut(table, column, length, fit, dry_run)
            if count:
                found[column] = count
        return found

    async def _cut(self, table: str, column: str, length: int, fit: Fit, dry_run: bool) -> int:
        """Read the candidates by id, a batch at a time, and cut those past ``length``.

        MySQL counts characters (``CHAR_LENGTH``) and sends free text cut to one past the
        bound; SQLite's ``LENGTH`` and ``SUBSTR`` stop at a NUL, so there the bytes choose
        the candidates and each value is read whole. JSON is read whole, to be fitted."""
        quote, mark = self.dialect.quote, self.dialect.placeholder
        mysql = self.dialect.name == "mysql"
        name = quote(column)
        size = f"CHAR_LENGTH({name})" if mysql else f"LENGTH(CAST({name} AS BLOB))"
        shown = f"SUBSTR({name}, 1, {int(length) + 1})" if mysql and fit is clip else name
        batch = JSON_BATCH if fit is fit_json else self.batch
        select = (
            f"SELECT {quote('id')} AS id, {shown} AS value FROM {quote(table)} "
            f"WHERE {size} > {int(length)} AND {quote('id')} > {mark} "
            f"ORDER BY {quote('id')} LIMIT {batch}"
        )
        count, after = 0, 0
        while found := await self.conn.execute_query_dict(select, [after]):
            after = found[-1]["id"]
            past = [
                (fit(str(row["value"]), length), row["id"])
                for row in found
                if len(str(row["value"])) > length
            ]
            count += len(past)
            if past and not dry_run:
                await self._write(table, column, past)
        return count

    async def _write(self, table: str, column: str, values: list[tuple[str, int]]) -> None:
        quote, mark = self.dialect.quote, self.dialect.placeholder
        statement = (
            f"UPDATE {quote(table)} SET {quote(column)} = {mark} WHERE {quote('id')} = {mark}"
        )
        async with self.dialect.transaction(self.conn) as execute:
            for value, row_id in values:
                await execute(statement, [value, row_id])
