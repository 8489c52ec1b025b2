"""Usage rolled up by a job's column over a window, per UTC period when asked: jobs,
outcomes, GPU- and CPU-hours of their pods cut to each period, queue waits, the
costliest failure reasons. Three statements whatever the archive's size; the pods'
hours are summed by the database (decision 33)."""

import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.reading import usage
from jobarchive.reading.params import BadQuery, Clusters, Named, check_cluster, fits, one_of
from jobarchive.reading.queries.source import reader
from jobarchive.reading.queries.usage import first_ran
from jobarchive.rows import NAMESPACE_LENGTH
from jobarchive.storage import dialects, usage_days

HEAD = usage_days.HEAD
REASON_BATCH = 500
# Less than any time the database keeps apart: a window's start at midnight is a whole day.
_TICK = datetime.timedelta(microseconds=1)


def _period_sql(
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


class _Window:
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
        self.now = min(datetime.datetime.now(datetime.UTC), until)
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

    def pod_group(self) -> str:
        """The group of a pod's time: its node for ``node``, else its job's column."""
        return "p.node_name" if self.group == "node" else f"j.{self.group}"

    def jobs(self) -> str:
        """The jobs, each once per group it counts in: by ``node``, once per node its pods
        were on (once as none when none was scheduled), else once."""
        if self.group != "node":
            return "job_info j"
        return (
            "(SELECT DISTINCT j.job_id, j.namespace, j.cluster, j.status, j.gmt_created, "
            "j.gmt_finished, j.gmt_job_running, p.node_name AS node FROM job_info j "
            "LEFT JOIN replica_info p "
            "ON p.job_id = j.job_id AND p.node_name IS NOT NULL) j"
        )

    def life(self) -> str:
        """The jobs whose life (creation to finish, or now) overlaps the window."""
        return (
            f"j.gmt_created < {self.time(self.until)} "
            f"AND (j.gmt_finished IS NULL OR j.gmt_finished >= {self.time(self.since)})"
        )

    def jobs_where(self) -> str:
        """``life``, of the namespace and the clusters when named."""
        return self.life() + self.scope()

    def scope(self) -> str:
        """The namespace named and the clusters read (one, a caller's scope, or every
        cluster: decision 36), as terms to AND to a statement's jobs."""
        where = ""
        if self.namespace is not None:
            where += f" AND j.namespace = {self.value(self.namespace)}"
        if isinstance(self.clusters, str):
            where += f" AND j.cluster = {self.value(self.clusters)}"
        elif self.clusters is not None:
            names = ", ".join(self.value(name) for name in self.clusters) or "NULL"
            where += f" AND j.cluster IN ({names})"
        return where

    async def rows(self, sql: str) -> list[dict[str, Any]]:
        params, self.params = self.params, []
        _, rows = await self.connection.execute_query(sql, params)
        return list(rows)


async def _pod_hours(
    w: _Window,
    cut: Sequence[usage.Period],
    lo: datetime.datetime,
    hi: datetime.datetime,
    which: str,
    pods_first: bool = False,
) -> list[dict[str, Any]]:
    """Per group, of the pods ``which`` names, their time in [lo, hi) as the periods it
    begins and ends in (``n0``, ``n1``), and the failed job (``job``, else ''): the sums
    ``usage.spread`` cuts into periods. One pass over the pods, never a pod per period;
    ``pods_first``: the pods read before their jobs (a few pods found by an index)."""
    join = w.dialect.in_order_join if pods_first else "JOIN"
    start = w.rel(w.dialect.later("p.gmt_started", w.time(lo)))
    ending = w.dialect.earlier(f"COALESCE(p.gmt_finished, {w.time(w.now)})", w.time(hi))
    pods = (
        f"SELECT {w.pod_group()} AS grp, CASE WHEN j.status = 'Failed' THEN j.job_id ELSE '' "
        f"END AS job, COALESCE(p.gpus, 0) AS g, COALESCE(p.cpu_millis, 0) AS c, "
        f"{start} AS a, {w.rel(ending)} AS b "
        f"FROM replica_info p {join} job_info j ON j.job_id = p.job_id "
        f"WHERE {which} AND {w.jobs_where()} AND p.gmt_started IS NOT NULL "
        f"AND p.gmt_started < {w.time(hi)} "
        f"AND (p.gmt_finished IS NULL OR p.gmt_finished > {w.time(lo)})"
    )
    n0, n1 = _period_sql(cut, w.since, w.every, "u.a"), _period_sql(cut, w.since, w.every, "u.b")
    sql = (
        f"SELECT u.grp AS grp, u.job AS job, {n0} AS n0, {n1} AS n1, SUM(u.g) AS g, "
        "SUM(u.g * u.a) AS ga, SUM(u.g * u.b) AS gb, SUM(u.c) AS c, SUM(u.c * u.a) AS ca, "
        f"SUM(u.c * u.b) AS cb FROM ({pods}) u GROUP BY u.grp, u.job, n0, n1"
    )
    return await w.rows(sql)


async def _day_hours(
    w: _Window, cut: Sequence[usage.Period], first: datetime.datetime, last: datetime.datetime
) -> list[dict[str, Any]]:
    """Per group, period and, for failed jobs, reason (decision 33's rule: the stored
    pods' reason, else the job's remark's head, else ``unknown``), the finished pods'
    seconds of the whole days [first, last) from the daily roll-up (``usage_day``), and
    how many failed jobs they are."""
    n = _period_sql(cut, w.since, w.every, w.rel("d.day"))
    own = f"NULLIF({HEAD.format('j.remark')}, '')"
    days = (
        f"SELECT j.{w.group} AS grp, {n} AS n, CASE WHEN j.status = 'Failed' THEN "
        f"COALESCE(d.reason, {own}, 'unknown') END AS reason, d.job_id AS job, "
        "d.gpu_seconds AS g, d.cpu_milli_seconds AS c "
        "FROM usage_day d JOIN job_info j ON j.job_id = d.job_id "
        f"WHERE d.day >= {w.time(first)} AND d.day < {w.time(last)} AND {w.jobs_where()}"
    )
    sql = (
        "SELECT u.grp AS grp, u.n AS n, u.reason AS reason, SUM(u.g) AS gpu_s, "
        "SUM(u.c) AS cpu_ms, CASE WHEN u.reason IS NULL THEN 0 ELSE COUNT(DISTINCT u.job) END "
        f"AS jobs FROM ({days}) u GROUP BY u.grp, u.n, u.reason"
    )
    return await w.rows(sql)


async def _counted(
    w: _Window,
    cut: Sequence[usage.Period],
    jobs: list[str],
    first: datetime.datetime,
    last: datetime.datetime,
) -> set[tuple[str, int]]:
    """(job, period) of the failed jobs read live that the whole days count already."""
    found: set[tuple[str, int]] = set()
    n = _period_sql(cut, w.since, w.every, w.rel("d.day"))
    for start in range(0, len(jobs), REASON_BATCH):
        marks = ", ".join(w.value(uid) for uid in jobs[start : start + REASON_BATCH])
        sql = (
            f"SELECT DISTINCT d.job_id AS job, {n} AS n FROM usage_day d WHERE d.job_id IN "
            f"({marks}) AND d.day >= {w.time(first)} AND d.day < {w.time(last)}"
        )
        found |= {(row["job"], usage.clamp(row["n"], len(cut))) for row in await w.rows(sql)}
    return found


async def _hours(
    w: _Window, cut: Sequence[usage.Period], from_pods: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The pods' time in the window (decision 33): the whole days' finished pods from
    the daily roll-up, the edge days' finished pods of the jobs it holds on them read
    live, and the running pods read live through the index on ``gmt_finished``; or,
    ``from_pods``, and by ``node`` (the roll-up keeps no node), every pod read live
    (the indexed query, the bench's baseline).
    Returns (live sums for ``usage.spread``, days' seconds by period)."""
    if from_pods or w.group == "node":
        return await _pod_hours(w, cut, w.since, w.until, "1 = 1"), []
    first, last = _whole_days(w)
    days: list[dict[str, Any]] = []
    edges = [(w.since, w.until)]
    if first <= last:
        days = await _day_hours(w, cut, first, last) if first < last else []
        edges = [(w.since, first), (last, w.until)]
    live: list[dict[str, Any]] = []
    for lo, hi in edges:
        if lo < hi:
            held = (
                "p.gmt_finished IS NOT NULL AND p.job_id IN (SELECT d.job_id FROM usage_day d "
                f"WHERE d.day >= {w.time(usage_days.midnight(lo))} AND d.day < {w.time(hi)})"
            )
            live += await _pod_hours(w, cut, lo, hi, held)
    live += await _pod_hours(w, cut, w.since, w.until, "p.gmt_finished IS NULL", pods_first=True)
    return live, days


async def _job_counts(w: _Window, cut: Sequence[usage.Period]) -> list[dict[str, Any]]:
    """Per group, the periods a job's life (in the window) begins and ends in, and its
    outcome when it finished in the window: the jobs count in each period between, and
    as Succeeded or Failed in the one they finished in."""
    created = w.rel(w.dialect.later("j.gmt_created", w.time(w.since)))
    ended = w.rel(w.dialect.earlier(f"COALESCE(j.gmt_finished, {w.time(w.now)})", w.time(w.until)))
    outcome = (
        f"CASE WHEN j.gmt_finished < {w.time(w.until)} AND j.status IN ('Succeeded', 'Failed') "
        "THEN j.status ELSE '' END"
    )
    jobs = (
        f"SELECT j.{w.group} AS grp, {outcome} AS outcome, {created} AS c, {ended} AS f "
        f"FROM {w.jobs()} WHERE {w.jobs_where()}"
    )
    n0, n1 = _period_sql(cut, w.since, w.every, "u.c"), _period_sql(cut, w.since, w.every, "u.f")
    sql = (
        f"SELECT u.grp AS grp, u.outcome AS outcome, {n0} AS n0, {n1} AS n1, COUNT(*) AS jobs "
        f"FROM ({jobs}) u GROUP BY u.grp, u.outcome, n0, n1"
    )
    return await w.rows(sql)


async def _waits(w: _Window, cut: Sequence[usage.Period]) -> list[dict[str, Any]]:
    """The queue waits that ended in the window: each job first running in it (by
    ``first_ran``, the facts' rule), the period it began running in, and after how long.
    The statement reads the jobs that may have: those that ran in the window by
    ``gmt_job_running``, and those without one alive in it, with their pods' first start."""
    first_pod = (
        f"(SELECT MIN({w.rel('p.gmt_started')}) FROM replica_info p WHERE p.job_id = j.job_id)"
    )
    sql = (
        f"SELECT j.{w.group} AS grp, {w.rel('j.gmt_created')} AS created, "
        f"{w.rel('j.gmt_job_running')} AS running, "
        f"CASE WHEN j.gmt_job_running IS NULL THEN {first_pod} END AS first_pod "
        f"FROM {w.jobs()} WHERE ((j.gmt_job_running >= {w.time(w.since)} "
        f"AND j.gmt_job_running < {w.time(w.until)}) OR (j.gmt_job_running IS NULL "
        f"AND {w.life()}))"
    )
    sql += w.scope()
    starts = [(p.start - w.since).total_seconds() for p in cut]
    length = (w.until - w.since).total_seconds()
    waits = []
    for row in await w.rows(sql):
        running = None if row["running"] is None else float(row["running"])
        pod = None if row["first_pod"] is None else float(row["first_pod"])
        started = first_ran(running, [pod])
        if started is not None and 0 <= started < length:
            wait = max(0.0, started - float(row["created"]))
            waits.append({"grp": row["grp"], "n": usage.period_of(starts, started), "wait": wait})
    return waits


async def _reasons(w: _Window, jobs: list[str]) -> dict[str, str]:
    """Why each failed job failed: its first failed pod's reason (by finish, as
    ``storage.usage_days.reasons_of``), else its own remark's head, else ``unknown``."""
    first: dict[str, str] = {}
    own: dict[str, str | None] = {}
    for start in range(0, len(jobs), REASON_BATCH):
        chunk = jobs[start : start + REASON_BATCH]
        marks = ", ".join(w.value(uid) for uid in chunk)
        sql = (
            f"SELECT j.job_id AS job, {HEAD.format('j.remark')} AS own, {HEAD.format('p.remark')} "
            "AS pod, p.gmt_finished AS finished FROM job_info j LEFT JOIN replica_info p "
            "ON p.job_id = j.job_id AND p.status = 'Failed' "
            f"WHERE j.job_id IN ({marks}) ORDER BY j.job_id, p.gmt_finished IS NULL, p.gmt_finished"
        )
        for row in await w.rows(sql):
            own[row["job"]] = row["own"]
            if row["pod"]:
                first.setdefault(row["job"], row["pod"])
    return {job: first.get(job) or why or "unknown" for job, why in own.items()}


async def rollup(
    group_by: str | None = None,
    every: str | None = None,
    namespace: str | None = None,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
    from_pods: bool = False,
    cluster: Clusters = None,
) -> list[dict[str, Any]]:
    """The usage rows of [since, until) by ``group_by``, per ``every`` period when asked
    for (``usage.columns`` names them); BadQuery for input that cannot be answered.
    ``from_pods``: the pods' hours all read from the pods (the same figures, slower);
    ``cluster``: one cluster's jobs, those of a caller's scope, or (None) every cluster's."""
    group = usage.group_of(group_by)
    period = one_of("every", every, usage.EVERY)
    start, end = usage.window(since, until)
    try:
        cut = usage.periods(start, end, period)
    except ValueError as exc:
        raise BadQuery(Named("every"), f": {exc}; narrow the window") from None
    namespace = fits("namespace", namespace, NAMESPACE_LENGTH)
    w = _Window(group, start, end, namespace, period, cluster)
    hours, days = await _hours(w, cut, from_pods)
    counts = await _job_counts(w, cut)
    waits = await _waits(w, cut)
    failed = sorted({row["job"] for row in hours if row["job"]})
    reasons = await _reasons(w, failed)
    counted = await _counted(w, cut, failed, *_whole_days(w)) if days else set()
    return _rows(group, period, cut, start, (hours, days, counted), counts, waits, reasons)


def _whole_days(w: _Window) -> tuple[datetime.datetime, datetime.datetime]:
    """The first and the end of the whole UTC days inside the window (first > end when
    there are none)."""
    return usage_days.midnight(w.since - _TICK) + usage_days.DAY, usage_days.midnight(w.until)


def _rows(
    group: str,
    every: str | None,
    cut: Sequence[usage.Period],
    since: datetime.datetime,
    hours: tuple[list[dict[str, Any]], list[dict[str, Any]], set[tuple[str, int]]],
    counts: list[dict[str, Any]],
    waits: list[dict[str, Any]],
    reasons: dict[str, str],
) -> list[dict[str, Any]]:
    table: dict[tuple[Any, int], dict[str, Any]] = {}
    bounds = [((p.start - since).total_seconds(), (p.end - since).total_seconds()) for p in cut]

    def row(grp: Any, n: Any) -> dict[str, Any]:
        return table.setdefault((grp, usage.clamp(n, len(cut))), usage.empty_row())

    for found in counts:
        first, last = usage.clamp(found["n0"], len(cut)), usage.clamp(found["n1"], len(cut))
        for n in range(first, last + 1):
            row(found["grp"], n)["jobs"] += int(found["jobs"])
        if found["outcome"]:
            row(found["grp"], found["n1"])[found["outcome"].lower()] += int(found["jobs"])
    live, days, counted = hours
    for found in live:
        for n, gpu_s, cpu_ms in usage.spread(found, bounds):
            job = found["job"]
            one = row(found["grp"], n)
            usage.add_hours(one, job, gpu_s, cpu_ms, reasons, counts=(job, n) not in counted)
    for found in days:
        cost = (float(found["gpu_s"] or 0), float(found["cpu_ms"] or 0))
        usage.add_days(row(found["grp"], found["n"]), found["reason"], *cost, int(found["jobs"]))
    for found in waits:
        row(found["grp"], found["n"])["waits"].append(round(float(found["wait"]), 1))
    ordered = sorted(table.items(), key=lambda item: (item[0][1], -item[1]["gpu_s"]))
    return [
        usage.finished_row(group, grp, cut[n].label if every else None, one)
        for (grp, n), one in ordered
    ]
