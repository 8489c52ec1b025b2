"""Adopting a database that KubeDL (or an earlier jobarchive) created: ``jobarchive migrate``.

KubeDL creates ``job_info`` and ``replica_info`` with no unique keys, narrow columns
(varchar(128) names, varchar(32) status and kind), every column nullable, and, before
v0.4, the finish time in ``gmt_finished`` only, since then in ``gmt_job_finished``
only. jobarchive's upsert finds a row by its uid's unique key: on such a table every
write would add a row. So the operator refuses to start on it (``schema.NotAdopted``)
and this module brings it to jobarchive's schema, in steps:

1. add the columns it lacks (``cluster`` with every row's value: the cluster named);
2. merge the rows of one uid into one (``keeper``): the newest version is kept, its
   NULL columns filled from the older rows, newest first;
3. fill NULLs where jobarchive's schema says NOT NULL (``''``, the flag defaults, the
   row's other timestamp);
4. fill ``gmt_finished`` from ``gmt_job_finished`` and the reverse; count pods'
   requests from their resources, clear running times not before the finish;
5. convert the text to utf8mb4, and widen the columns narrower than jobarchive's
   (never narrowing one) and make NOT NULL what should be;
6. cut free text and JSON stored past their bounds (``trimming``);
7. add the unique keys, then the indexes.

Every step asks the database what is left to do and does it in batches, each in a
transaction of its own, so a migration killed at any point finishes when run again,
and a second run finds nothing to do. ``plan`` only counts.
"""

from collections.abc import Sequence

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.accounting import ACCELERATORS
from jobarchive.core.rows import DEFAULT_CLUSTER
from jobarchive.storage import daily, introspection, schema, spans
from jobarchive.storage.kueue import QueueSpan
from jobarchive.storage.migration.counting import Counting
from jobarchive.storage.migration.filling import FINISH_COLUMNS, Filling, measured_jobs
from jobarchive.storage.migration.merging import Merging
from jobarchive.storage.migration.steps import BATCH, Report, Step
from jobarchive.storage.migration.trimming import Trimming
from jobarchive.storage.migration.widening import Columns
from jobarchive.storage.models import TABLES, Event, Job, Pod, Stamped, UsageDay

__all__ = ["Migration", "Report", "Step", "lacking_clusters", "upgrade"]


async def lacking_clusters(conn: BaseDBAsyncClient) -> list[str]:
    """The existing tables without the ``cluster`` column (decision 35): their rows get
    the cluster the migration is given."""
    lacking = []
    for model in schema.MODELS:
        table = model._meta.db_table
        existing = await introspection.of(conn).columns(conn, table)
        if existing and "cluster" not in existing:
            lacking.append(table)
    return lacking


async def upgrade(
    conn: BaseDBAsyncClient, added: Sequence[str], accelerators: frozenset[str] = ACCELERATORS
) -> list[Step]:
    """At every start, after the missing columns are added (``added``, as
    ``table.column``): what an earlier jobarchive's rows lack for KubeDL's readers
    and for the usage accounting.

    A column still nullable where the schema now says NOT NULL (``owner`` and
    ``tenant`` were) gets its NULLs filled and its rule tightened; a finish column
    just added is filled from the other; Events from before ``event_info.job_id``
    get their job; pods' requests just added are counted (``accelerators`` as GPUs),
    and the count goes on at the next start if a start was stopped during it; with
    ``job_info.queue`` (added by the version that keeps a job's running time right)
    running times not before their finish are cleared; the usage roll-ups are filled
    from the finished pods when their oldest job has no row yet. Only the schema, an index range
    and one row by the primary key are read to find out, so a start with nothing to do
    scans no table.
    """
    filling, columns = Filling(conn, BATCH), Columns(conn, BATCH)
    counting = Counting(conn, BATCH, accelerators)
    steps: list[Step] = []
    for model in TABLES:
        declared = await introspection.of(conn).column_types(conn, model._meta.db_table)
        loose = [
            name
            for name, field in model._meta.fields_map.items()
            if not field.null and name in declared and declared[name].nullable
        ]
        if loose:
            steps += await filling.nulls(model, dry_run=False, only=loose)
            steps += await columns.types(model, dry_run=False)
    if any(f"{Job._meta.db_table}.{column}" in added for column in FINISH_COLUMNS):
        steps += await filling.finish_times(Job, dry_run=False)
    if f"{Pod._meta.db_table}.gpus" in added or await counting.requests_left(Pod):
        steps += await counting.pod_requests(Pod, dry_run=False)
    if f"{Job._meta.db_table}.queue" in added:
        steps += await filling.running_times(Job, dry_run=False)
    if f"{Job._meta.db_table}.gmt_measured" in added:
        steps += await measured_jobs(conn)
    # Cheap when there is nothing to do: NULL job_ids are a range of their index.
    steps += await filling.event_jobs(Event, dry_run=False)
    steps += await _usage_days(conn, added)
    return steps


async def _usage_days(conn: BaseDBAsyncClient, added: Sequence[str] = ()) -> list[Step]:
    """The usage roll-up filled from the pods when it lacks the oldest (decision 33);
    emptied first when its copies of the jobs' columns were just added, so that the
    fill writes them (and a start stopped during it fills again); the days of the jobs
    with summaries rewritten when their efficiency weights were just added (decision
    47; an emptied table's fill writes them). The roll-up by cluster
    queue and its copies of the jobs' columns likewise, from the pods and attempts
    (decision 46)."""
    steps = []
    if any(f"{UsageDay._meta.db_table}.{column}" in added for column in daily.JOB_COLUMNS):
        emptied = await conn.execute_query(f"DELETE FROM {UsageDay._meta.db_table}")
        steps.append(Step("usage_day", "empty, to fill with the jobs' columns", emptied[0]))
    if await daily.left(conn):
        steps.append(Step("usage_day", "fill from the finished pods", await daily.fill(conn)))
    elif f"{UsageDay._meta.db_table}.measured_gpu_s" in added:
        measured = await daily.remeasure(conn)
        steps.append(Step("usage_day", "rewrite the summarised jobs' days", measured))
    if any(f"{QueueSpan._meta.db_table}.{column}" in added for column in spans.JOB_COLUMNS):
        emptied = await conn.execute_query(f"DELETE FROM {QueueSpan._meta.db_table}")
        steps.append(Step("queue_span", "empty, to fill with the jobs' columns", emptied[0]))
    if await spans.left(conn):
        filled = await spans.fill(conn)
        steps.append(Step("queue_span", "fill from the pods and Kueue's attempts", filled))
    return steps


class Migration:
    """The steps that bring one database to jobarchive's schema; see the module docstring."""

    def __init__(
        self,
        conn: BaseDBAsyncClient,
        batch: int = BATCH,
        accelerators: frozenset[str] = ACCELERATORS,
        cluster: str = DEFAULT_CLUSTER,
    ) -> None:
        """``cluster``: the cluster the rows of a table without the column came from."""
        self.conn = conn
        self.merging = Merging(conn, batch)
        self.filling = Filling(conn, batch)
        self.counting = Counting(conn, batch, accelerators)
        self.columns = Columns(conn, batch, cluster)
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
                self.merging.duplicates,
                self.filling.nulls,
                self.filling.finish_times,
                self.filling.event_jobs,
                self.counting.pod_requests,
                self.filling.running_times,
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
            # The roll-up is jobarchive's own table: it only ever gains columns (added
            # before the tables are created, as ``schema.ensure_schema`` says why).
            added = await schema.ensure_columns(self.conn, (UsageDay,))
            await schema.create_tables()
            created = await schema.ensure_indexes(self.conn)
            if created:
                steps.append(Step("*", "create indexes", len(created)))
                report(steps[-1])
            for filled in await _usage_days(self.conn, added):
                steps.append(filled)
                report(filled)
        return steps

    async def _trimmed(self, model: type[Stamped], dry_run: bool) -> list[Step]:
        """Values stored past their bounds before the bounds were kept, cut to them."""
        found = await self.trimming.oversized(model, dry_run)
        table = model._meta.db_table
        return [Step(table, f"cut {column} to its bound", n) for column, n in found.items()]

    async def _tables(self) -> set[str]:
        names = set()
        for table in TABLES.values():
            if await introspection.of(self.conn).columns(self.conn, table.name):
                names.add(table.name)
        return names
