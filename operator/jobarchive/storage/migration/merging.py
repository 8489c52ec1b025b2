"""Merging the rows of one uid into one, as KubeDL's tables (no unique key) hold them:
the newest version is kept, its NULL columns filled from the older rows, newest first."""

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from jobarchive.storage.migration.steps import Part, Step
from jobarchive.storage.models import TABLES, Stamped, Table


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


class Merging(Part):
    """Merging the rows of one uid into one: its keeper."""

    async def duplicates(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Merge the rows that share a uid, a batch of uids at a time."""
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
        existing = await self.schema.columns(self.conn, table.name)
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
