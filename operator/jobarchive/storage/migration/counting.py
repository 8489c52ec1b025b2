"""Counting the requests of pods recorded before ``replica_info.gpus`` existed, from their
stored resources (decision 32)."""

from collections.abc import Sequence
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.accounting import ACCELERATORS, Requested, requested_of_json
from jobarchive.storage.migration.steps import Part, Step
from jobarchive.storage.models import Pod, Stamped

# A pod's requests as numbers, counted from its resources column.
REQUEST_COLUMNS = ("gpus", "cpu_millis", "memory_bytes")


class Counting(Part):
    """Pods' requests counted from their resources, ``accelerators`` as GPUs."""

    def __init__(
        self, conn: BaseDBAsyncClient, batch: int, accelerators: frozenset[str] = ACCELERATORS
    ) -> None:
        super().__init__(conn, batch)
        self.accelerators = accelerators

    async def pod_requests(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Count the requests of pods recorded before ``gpus`` existed from their stored
        resources, a batch of rows at a time, newest id first (so the oldest row is
        counted last: ``requests_left``); a pod whose resources do not read (cut, or not
        JSON) stays NULL: unknown."""
        table = model._meta.db_table
        existing = await self.schema.columns(self.conn, table)
        if model is not Pod or not existing.issuperset(REQUEST_COLUMNS):
            return []
        quote, mark = self.dialect.quote, self.dialect.placeholder
        unset = f"{quote('gpus')} IS NULL"
        counted = await self.conn.execute_query_dict(
            f"SELECT COUNT(*) AS n FROM {quote(table)} WHERE {unset}"
        )
        count = int(counted[0]["n"])
        if count and not dry_run:
            select = (
                f"SELECT {quote('id')} AS id, {quote('resources')} AS resources "
                f"FROM {quote(table)} WHERE {unset} AND {quote('id')} < {mark} "
                f"ORDER BY {quote('id')} DESC LIMIT {self.batch}"
            )
            before = 2**63 - 1
            while rows := await self.conn.execute_query_dict(select, [before]):
                before = rows[-1]["id"]
                await self._set_requests(table, rows)
        if not count:
            return []
        return [Step(table, "count gpus, cpu_millis, memory_bytes from resources", count)]

    async def requests_left(self, model: type[Stamped]) -> bool:
        """Whether a count of pods' requests was stopped before it finished: its last
        row, the oldest, is still uncounted though its resources read. One row read by
        the primary key, so that every start can ask."""
        quote = self.dialect.quote
        oldest = await self.conn.execute_query_dict(
            f"SELECT {quote('gpus')} AS gpus, {quote('resources')} AS resources "
            f"FROM {quote(model._meta.db_table)} ORDER BY {quote('id')} LIMIT 1"
        )
        return (
            bool(oldest)
            and oldest[0]["gpus"] is None
            and (requested_of_json(oldest[0]["resources"], self.accelerators) is not None)
        )

    async def _set_requests(self, table: str, rows: Sequence[dict[str, Any]]) -> None:
        """One UPDATE per distinct count in the batch: a job's pods mostly share theirs."""
        by_count: dict[Requested, list[int]] = {}
        for row in rows:
            found = requested_of_json(row["resources"], self.accelerators)
            if found is not None:
                by_count.setdefault(found, []).append(row["id"])
        if not by_count:
            return
        quote, mark = self.dialect.quote, self.dialect.placeholder
        sets = ", ".join(f"{quote(column)} = {mark}" for column in REQUEST_COLUMNS)
        async with self.dialect.transaction(self.conn) as execute:
            for found, ids in by_count.items():
                await execute(
                    f"UPDATE {quote(table)} SET {sets} WHERE {quote('id')} IN "
                    f"({', '.join([mark] * len(ids))})",
                    [found.gpus, found.cpu_millis, found.memory_bytes, *ids],
                )
