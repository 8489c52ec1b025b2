"""Filling what rows lack for jobarchive's schema and KubeDL's readers: NULLs where the
schema says NOT NULL (``''``, the flag defaults, the row's other timestamp), each
finish time from the other, the job of Events recorded before they had one; and a
job's running time that is not before its finish cleared (decision 32)."""

from collections.abc import Sequence
from typing import Any

from tortoise import fields
from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.efficiency import MEASURED
from jobarchive.storage.dialects import Dialect
from jobarchive.storage.migration.steps import Part, Step
from jobarchive.storage.models import Event, Job, Pod, Stamped, utcnow

# jobarchive's finish columns of a job: the seed's and KubeDL >= 0.4's, kept equal.
FINISH_COLUMNS = ("gmt_finished", "gmt_job_finished")


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


class Filling(Part):
    """Filling what rows lack: NULLs where the schema says NOT NULL, each finish time
    from the other, the job of Events recorded before ``event_info.job_id`` existed,
    jobs' running times."""

    async def nulls(
        self, model: type[Stamped], dry_run: bool, only: Sequence[str] | None = None
    ) -> list[Step]:
        """Fill NULLs in the columns the model says are NOT NULL (``only`` these)."""
        table = model._meta.db_table
        existing = await self.schema.columns(self.conn, table)
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
        """Fill each of a job's two finish columns from the other, where only one is set."""
        existing = await self.schema.columns(self.conn, model._meta.db_table)
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

    async def event_jobs(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Give Events recorded before ``event_info.job_id`` existed their job: the job of
        the pod they are about, or the job itself. A job's timeline is read by job_id."""
        table = model._meta.db_table
        if model is not Event or "job_id" not in await self.schema.columns(self.conn, table):
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

    async def running_times(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Clear a job's running time where it is not before its finish: what recording
        the Running condition's time whatever its status left for every finished
        Kubeflow job (the time it turned False). Its pods' first start stands for it."""
        existing = await self.schema.columns(self.conn, model._meta.db_table)
        if model is not Job or not existing.issuperset({"gmt_job_running", "gmt_finished"}):
            return []
        quote = self.dialect.quote
        running, finished = quote("gmt_job_running"), quote("gmt_finished")
        return await self._fill(
            Job._meta.db_table,
            "gmt_job_running",
            "clear gmt_job_running where it is not before gmt_finished",
            f"{running} IS NOT NULL AND {finished} IS NOT NULL AND "
            f"{self.dialect.seconds_between(running, finished)} <= 0",
            "NULL",
            dry_run,
        )


async def measured_jobs(conn: BaseDBAsyncClient) -> list[Step]:
    """Mark every job a pod of which was measured and whose mark is missing (the column
    just added, decision 47): at its first measured summary's creation, in one
    statement."""
    found, _ = await conn.execute_query(
        "UPDATE job_info SET gmt_measured = (SELECT MIN(e.gmt_created) FROM pod_efficiency e "
        f"WHERE e.job_id = job_info.job_id AND e.outcome = '{MEASURED}') "
        "WHERE gmt_measured IS NULL AND job_id IN "
        f"(SELECT e.job_id FROM pod_efficiency e WHERE e.outcome = '{MEASURED}')"
    )
    return [Step("job_info", "mark the jobs a pod of which was measured", int(found))]
