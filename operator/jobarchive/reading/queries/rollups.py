"""Usage rolled up by a job's column over a window, per UTC period when asked: jobs,
outcomes, GPU- and CPU-hours of their pods cut to each period, queue waits, the
costliest failure reasons. Three statements whatever the archive's size; the pods'
hours are summed by the database (decision 33)."""

import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.reading import usage
from jobarchive.reading.params import BadQuery, Named, fits, one_of
from jobarchive.reading.queries.source import reader
from jobarchive.rows import NAMESPACE_LENGTH
from jobarchive.storage import dialects

# A failed pod's reason: the head of its remark (``OOMKilled (exit code 137)``).
HEAD = "CASE WHEN INSTR({0}, ': ') > 0 THEN SUBSTR({0}, 1, INSTR({0}, ': ') - 1) ELSE {0} END"
REASON_BATCH = 500


def _periods_sql(cut: Sequence[usage.Period], since: datetime.datetime) -> str:
    """The periods as a derived table of integers (seconds from ``since``): no user text."""
    parts = [
        f"SELECT {n} AS n, {int((p.start - since).total_seconds())} AS s, "
        f"{int((p.end - since).total_seconds())} AS e"
        for n, p in enumerate(cut)
    ]
    return "(" + " UNION ALL ".join(parts) + ")"


def _least(a: str, b: str) -> str:
    return f"(CASE WHEN {a} < {b} THEN {a} ELSE {b} END)"


def _greatest(a: str, b: str) -> str:
    return f"(CASE WHEN {a} > {b} THEN {a} ELSE {b} END)"


class _Window:
    """The SQL a roll-up's statements share: times as seconds from the window's start,
    the jobs whose life overlaps it, of a namespace when named."""

    def __init__(
        self,
        group: str,
        since: datetime.datetime,
        until: datetime.datetime,
        namespace: str | None,
    ) -> None:
        self.connection = reader()
        self.dialect = dialects.of(self.connection)
        self.group, self.since, self.until = group, since, until
        self.now = min(datetime.datetime.now(datetime.UTC), until)
        self.params: list[Any] = []
        self.namespace = namespace

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

    def jobs_where(self) -> str:
        where = (
            f"j.gmt_created < {self.time(self.until)} "
            f"AND (j.gmt_finished IS NULL OR j.gmt_finished >= {self.time(self.since)})"
        )
        if self.namespace is not None:
            where += f" AND j.namespace = {self.value(self.namespace)}"
        return where

    async def rows(self, sql: str) -> list[dict[str, Any]]:
        params, self.params = self.params, []
        _, rows = await self.connection.execute_query(sql, params)
        return list(rows)


async def _pod_hours(w: _Window, periods: str) -> list[dict[str, Any]]:
    """Per group and period, the pods' GPU- and CPU-seconds: the failed jobs' one row
    each (``job`` set), the others' one row together."""
    start = w.rel("p.gmt_started")
    end = w.rel(f"COALESCE(p.gmt_finished, {w.time(w.now)})")
    pods = (
        f"SELECT j.{w.group} AS grp, CASE WHEN j.status = 'Failed' THEN j.job_id ELSE '' "
        f"END AS job, COALESCE(p.gpus, 0) AS gpus, COALESCE(p.cpu_millis, 0) AS cpu, "
        f"{start} AS a, {end} AS b FROM job_info j JOIN replica_info p ON p.job_id = j.job_id "
        f"WHERE {w.jobs_where()} AND p.gmt_started IS NOT NULL "
        f"AND p.gmt_started < {w.time(w.until)} "
        f"AND (p.gmt_finished IS NULL OR p.gmt_finished > {w.time(w.since)})"
    )
    seconds = f"({_least('u.b', 'per.e')} - {_greatest('u.a', 'per.s')})"
    sql = (
        f"SELECT u.grp AS grp, per.n AS n, u.job AS job, SUM(u.gpus * {seconds}) AS gpu_s, "
        f"SUM(u.cpu * {seconds}) AS cpu_ms FROM ({pods}) u JOIN {periods} per "
        "ON u.a < per.e AND u.b > per.s GROUP BY u.grp, per.n, u.job"
    )
    return await w.rows(sql)


async def _job_counts(w: _Window, periods: str) -> list[dict[str, Any]]:
    """Per group and period, the jobs whose life overlaps it, and those that finished in
    it as Succeeded or Failed."""
    created, ended = w.rel("j.gmt_created"), w.rel(f"COALESCE(j.gmt_finished, {w.time(w.now)})")
    jobs = (
        f"SELECT j.{w.group} AS grp, j.status AS status, {created} AS c, {ended} AS f, "
        f"j.gmt_finished IS NOT NULL AS done FROM job_info j WHERE {w.jobs_where()}"
    )
    ended_in = "u.done AND u.f >= per.s AND u.f < per.e"
    sql = (
        "SELECT u.grp AS grp, per.n AS n, COUNT(*) AS jobs, "
        f"SUM(CASE WHEN u.status = 'Succeeded' AND {ended_in} THEN 1 ELSE 0 END) AS succeeded, "
        f"SUM(CASE WHEN u.status = 'Failed' AND {ended_in} THEN 1 ELSE 0 END) AS failed "
        f"FROM ({jobs}) u JOIN {periods} per ON u.c < per.e AND (u.f > per.s OR u.c >= per.s) "
        "GROUP BY u.grp, per.n"
    )
    return await w.rows(sql)


async def _waits(w: _Window) -> list[dict[str, Any]]:
    """The queue waits that ended in the window: each job first running in it, when and
    after how long."""
    sql = (
        f"SELECT j.{w.group} AS grp, {w.rel('j.gmt_job_running')} AS r, "
        f"{w.dialect.seconds_between('j.gmt_created', 'j.gmt_job_running')} AS wait "
        f"FROM job_info j WHERE j.gmt_job_running >= {w.time(w.since)} "
        f"AND j.gmt_job_running < {w.time(w.until)}"
    )
    if w.namespace is not None:
        sql += f" AND j.namespace = {w.value(w.namespace)}"
    return await w.rows(sql)


async def _reasons(w: _Window, jobs: list[str]) -> dict[str, str]:
    """Why each failed job failed: its first failed pod's reason, else its own remark's
    head, else ``unknown``."""
    found: dict[str, str] = {}
    for start in range(0, len(jobs), REASON_BATCH):
        chunk = jobs[start : start + REASON_BATCH]
        marks = ", ".join(w.value(uid) for uid in chunk)
        sql = (
            f"SELECT j.job_id AS job, {HEAD.format('j.remark')} AS own, {HEAD.format('p.remark')} "
            "AS pod, p.gmt_finished AS finished FROM job_info j LEFT JOIN replica_info p "
            "ON p.job_id = j.job_id AND p.status = 'Failed' "
            f"WHERE j.job_id IN ({marks}) ORDER BY j.job_id, p.gmt_finished"
        )
        for row in await w.rows(sql):
            if row["job"] not in found or found[row["job"]] == "unknown":
                found[row["job"]] = row["pod"] or found.get(row["job"]) or row["own"] or "unknown"
    return found


async def rollup(
    group_by: str | None = None,
    every: str | None = None,
    namespace: str | None = None,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
) -> list[dict[str, Any]]:
    """The usage rows of [since, until) by ``group_by``, per ``every`` period when asked
    for (``usage.columns`` names them); BadQuery for input that cannot be answered."""
    group = usage.group_of(group_by)
    period = one_of("every", every, usage.EVERY)
    start, end = usage.window(since, until)
    try:
        cut = usage.periods(start, end, period)
    except ValueError as exc:
        raise BadQuery(Named("every"), f": {exc}; narrow the window") from None
    w = _Window(group, start, end, fits("namespace", namespace, NAMESPACE_LENGTH))
    periods = _periods_sql(cut, start)
    hours = await _pod_hours(w, periods)
    counts = await _job_counts(w, periods)
    waits = await _waits(w)
    failed = sorted({row["job"] for row in hours if row["job"]})
    reasons = await _reasons(w, failed)
    return _rows(group, period, cut, start, hours, counts, waits, reasons)


def _rows(
    group: str,
    every: str | None,
    cut: Sequence[usage.Period],
    since: datetime.datetime,
    hours: list[dict[str, Any]],
    counts: list[dict[str, Any]],
    waits: list[dict[str, Any]],
    reasons: dict[str, str],
) -> list[dict[str, Any]]:
    table: dict[tuple[Any, int], dict[str, Any]] = {}

    def row(grp: Any, n: int) -> dict[str, Any]:
        return table.setdefault((grp, int(n)), usage.empty_row())

    for found in counts:
        one = row(found["grp"], found["n"])
        for name in usage.COUNTS:
            one[name] = int(found[name] or 0)
    for found in hours:
        usage.add_hours(row(found["grp"], found["n"]), found, reasons)
    starts = [int((p.start - since).total_seconds()) for p in cut]
    for found in waits:
        n = usage.period_of(starts, float(found["r"]))
        row(found["grp"], n)["waits"].append(round(float(found["wait"]), 1))
    ordered = sorted(table.items(), key=lambda item: (item[0][1], -item[1]["gpu_s"]))
    return [
        usage.finished_row(group, grp, cut[n].label if every else None, one)
        for (grp, n), one in ordered
    ]
