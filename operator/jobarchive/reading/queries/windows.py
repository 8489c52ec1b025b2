"""The SQL a usage roll-up's statements share (decision 33): a window's times as
seconds from its start, the period a time falls in, the jobs whose life overlaps it,
of the namespace and the clusters asked for."""

import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.reading import usage
from jobarchive.reading.params import Clusters, check_cluster
from jobarchive.storage import dialects
from jobarchive.storage.failed import FailedJob
from jobarchive.storage.readpool import reader

FAILURES = FailedJob._meta.db_table


def class_sql(table: str) -> str:
    """The failure class of the job of a row (``table``: a job, ``j``, or a day, ``d``),
    read from ``job_failure`` by the job's uid (its unique index) when the row is
    read, so that a class the classifying pass writes after the job's days counts at
    once; ``usage.UNCLASSIFIED`` until then. Literals of ours, no user text."""
    return (
        f"COALESCE((SELECT f.failure_class FROM {FAILURES} f WHERE f.job_id = {table}.job_id), "
        f"'{usage.UNCLASSIFIED}')"
    )


def period_sql(
    cut: Sequence[usage.Period], since: datetime.datetime, every: str | None, term: str
) -> str:
    """The index of the period that holds ``term`` (seconds from ``since``; clamped to the
    periods by ``usage.spread``): days and weeks divided, months a CASE over their starts.
    Integers computed here, no user text."""
    if len(cut) == 1:
        return "0"
    if every in ("day", "week"):
        length = 86400 if every == "day" else 7 * 86400
        offset = int((since - usage.calendar_start(since, every)).total_seconds())
        return f"FLOOR(({term} + {offset}) / {length})"
    starts = [int((p.start - since).total_seconds()) for p in cut[1:]]
    branches = " ".join(f"WHEN {term} < {start} THEN {n}" for n, start in enumerate(starts))
    return f"CASE {branches} ELSE {len(starts)} END"


class Window:
    """The SQL a roll-up's statements share: times as seconds from the window's start,
    the jobs whose life overlaps it, of a namespace when named."""

    def __init__(
        self,
        group: str,
        since: datetime.datetime,
        until: datetime.datetime,
        namespace: str | None,
        every: str | None,
        clusters: Clusters = None,
    ) -> None:
        self.connection = reader()
        self.dialect = dialects.of(self.connection)
        self.group, self.since, self.until = group, since, until
        now = datetime.datetime.now(datetime.UTC)
        # Whether a job still running lives in the window: not in one that begins later.
        self.running = now >= since
        # Where a running pod's time ends: now, within the window (none after it).
        self.now = max(min(now, until), since)
        self.params: list[Any] = []
        self.namespace = namespace
        self.clusters = check_cluster(clusters) if isinstance(clusters, str) else clusters
        self.every = every

    def value(self, value: str) -> str:
        """A placeholder for user text, its value kept in the statement's order."""
        self.params.append(value)
        return self.dialect.placeholder

    @staticmethod
    def time(moment: datetime.datetime) -> str:
        """A time as an SQL literal, written as the drivers write a parameter: times are
        inlined (they hold digits only), so that the placeholders' order never depends
        on the order a dialect writes its arguments in."""
        naive = moment.astimezone(datetime.UTC).replace(tzinfo=None)
        return f"'{naive.isoformat(' ')}'"

    def rel(self, column: str) -> str:
        """``column``'s time as seconds from the window's start."""
        return self.dialect.seconds_between(self.time(self.since), column)

    def grouped(self, table: str = "j") -> str:
        """The group's column of a job (``j``) or a day (``d``), told apart by case
        as Kubernetes tells names apart (``Dialect.exact``); by failure, its class."""
        if self.group == usage.FAILURE:
            return self.dialect.exact(class_sql(table))
        return self.dialect.exact(f"{table}.{self.group}")

    def pod_group(self) -> str:
        """The group of a pod's time: its node for ``node``, else its job's column."""
        return self.dialect.exact("p.node_name") if self.group == "node" else self.grouped()

    def jobs(self) -> str:
        """The jobs, each once per group it counts in: by ``node``, once per node its pods
        were on (once as none when none was scheduled), else once."""
        if self.group != "node":
            return "job_info j"
        return (
            "(SELECT DISTINCT j.job_id, j.namespace, j.cluster, j.status, j.gmt_created, "
            "j.gmt_finished, j.gmt_job_running, j.gmt_measured, p.node_name AS node "
            "FROM job_info j "
            "LEFT JOIN replica_info p "
            "ON p.job_id = j.job_id AND p.node_name IS NOT NULL) j"
        )

    def life(self, created: str = "j.gmt_created", finished: str = "j.gmt_finished") -> str:
        """The jobs whose life (creation to finish, or now) overlaps the window; by the
        job's columns, or a day's copies of them."""
        running = f"{finished} IS NULL OR " if self.running else ""
        return (
            f"{created} < {self.time(self.until)} "
            f"AND ({running}{finished} >= {self.time(self.since)})"
        )

    def jobs_where(self) -> str:
        """``life``, of the namespace and the clusters when named."""
        return self.life() + self.scope()

    def days_where(self) -> str:
        """``jobs_where`` of the days (``d``), by their copies of their jobs' columns."""
        return self.life("d.job_created", "d.job_finished") + self.scope("d")

    def scope(self, table: str = "j") -> str:
        """The namespace named and the clusters read (one, a caller's scope, or every
        cluster: decision 36), as terms to AND to a statement's jobs (or days); by
        failure, the failed jobs alone."""
        where = f" AND {table}.status = 'Failed'" if self.group == usage.FAILURE else ""
        if self.namespace is not None:
            where += f" AND {table}.namespace = {self.value(self.namespace)}"
        if isinstance(self.clusters, str):
            where += f" AND {table}.cluster = {self.value(self.clusters)}"
        elif self.clusters is not None:
            names = ", ".join(self.value(name) for name in self.clusters) or "NULL"
            where += f" AND {table}.cluster IN ({names})"
        return where

    async def rows(self, sql: str) -> list[dict[str, Any]]:
        """The rows of ``sql``, built just before with this window's values (taken here:
        the next statement starts with none)."""
        params, self.params = self.params, []
        _, rows = await self.connection.execute_query(sql, params)
        # As mappings with ``get`` on either engine (SQLite's rows have none).
        return [dict(row) for row in rows]
