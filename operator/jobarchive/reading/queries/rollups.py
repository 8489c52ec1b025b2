"""Usage rolled up by a job's column over a window, per UTC period when asked: jobs,
outcomes, GPU- and CPU-hours of their pods cut to each period, queue waits, the
costliest failure classes. A few statements whatever the archive's size; the pods'
hours are summed and the waits' percentiles ranked by the database (decision 33)."""

import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.core.efficiency import MEASURED, RATES
from jobarchive.reading import usage
from jobarchive.reading.params import BadQuery, Clusters, Named, check_namespace, one_of
from jobarchive.reading.queries.allocation import queue_rollup
from jobarchive.reading.queries.facts import first_ran_sql
from jobarchive.reading.queries.windows import FAILURES, Window, class_sql, period_sql
from jobarchive.storage import daily

REASON_BATCH = 500
# The pods running now, read live over the whole window.
RUNNING = "p.gmt_finished IS NULL"
# The summaries of pods (decision 45), joined by a pod's uid (their unique key).
SUMMARIES = "pod_efficiency"
# Less than any time the database keeps apart: a window's start at midnight is a whole day.
_TICK = datetime.timedelta(microseconds=1)


def pod_hours_sql(
    w: Window,
    cut: Sequence[usage.Period],
    lo: datetime.datetime,
    hi: datetime.datetime,
    which: str,
    pods_first: bool = False,
) -> str:
    """Per group, of the pods ``which`` names, their time in [lo, hi) as the periods it
    begins and ends in (``n0``, ``n1``), and the failed job (``job``, else ''): the sums
    ``usage.spread`` cuts into periods. One pass over the pods, never a pod per period;
    ``pods_first``: the pods read before their jobs (a few pods found by an index:
    ``RUNNING``'s, whose index holds all a pod's columns read here). Finished pods come
    with their summaries' efficiency weights (``rates_sql``); ``RUNNING``'s have none,
    and are read off their index alone."""
    measured = which != RUNNING
    join = w.dialect.in_order_join if pods_first else "JOIN"
    begun = w.dialect.later("p.gmt_started", w.time(lo))
    ending = w.dialect.earlier(f"COALESCE(p.gmt_finished, {w.time(w.now)})", w.time(hi))
    # Never before its start: a start stamped by a clock ahead of this one is no time.
    ending = w.dialect.later(ending, begun)
    pods = (
        f"SELECT {w.pod_group()} AS grp, CASE WHEN j.status = 'Failed' THEN j.job_id ELSE '' "
        f"END AS job, COALESCE(p.gpus, 0) AS g, COALESCE(p.cpu_millis, 0) AS c, "
        f"{w.rel(begun)} AS a, {w.rel(ending)} AS b{rates_sql(w) if measured else ''} "
        f"FROM replica_info p {join} job_info j ON j.job_id = p.job_id "
        f"{f'LEFT JOIN {SUMMARIES} e ON e.pod_id = p.pod_id ' if measured else ''}"
        f"WHERE {which} AND {w.jobs_where()} AND p.gmt_started IS NOT NULL "
        f"AND p.gmt_started < {w.time(hi)} "
        f"AND (p.gmt_finished IS NULL OR p.gmt_finished > {w.time(lo)})"
    )
    n0, n1 = period_sql(cut, w.since, w.every, "u.a"), period_sql(cut, w.since, w.every, "u.b")
    return (
        f"SELECT u.grp AS grp, u.job AS job, {n0} AS n0, {n1} AS n1, SUM(u.g) AS g, "
        "SUM(u.g * u.a) AS ga, SUM(u.g * u.b) AS gb, SUM(u.c) AS c, SUM(u.c * u.a) AS ca, "
        f"SUM(u.c * u.b) AS cb{_rate_sums() if measured else ''} "
        f"FROM ({pods}) u GROUP BY u.grp, u.job, n0, n1"
    )


def rates_sql(w: Window) -> str:
    """A pod's efficiency weights a second (``efficiency.rates`` in SQL: NULL where
    unknown), from its summary ``e``: GPUs and their activity, never-used GPUs, energy
    over its run, CPU millicores and their use, its memory limit and its peak. The
    limit is the peak over the ratio (the limit's text is not read): the request where
    the peak was zero."""
    m = f"e.outcome = '{MEASURED}'"
    run = w.dialect.seconds_between("p.gmt_started", "p.gmt_finished")
    gpus, cpu = "COALESCE(p.gpus, 0)", "p.cpu_millis"
    ratio, request = "e.memory_peak_ratio", "p.memory_bytes"
    rates = {
        "measured_gpu_s": f"CASE WHEN {m} AND e.gpu_activity_mean IS NOT NULL THEN {gpus} END",
        "active_gpu_s": f"CASE WHEN {m} THEN {gpus} * e.gpu_activity_mean END",
        "unused_gpu_s": f"CASE WHEN {m} THEN e.unused_gpus END",
        "energy_j": f"CASE WHEN {m} AND {run} > 0 THEN e.energy_joules / ({run}) END",
        "measured_cpu_ms": f"CASE WHEN {m} AND e.cpu_efficiency IS NOT NULL AND {cpu} > 0 "
        f"THEN {cpu} END",
        "used_cpu_ms": f"CASE WHEN {m} AND {cpu} > 0 THEN {cpu} * e.cpu_efficiency END",
        "measured_mem_bs": f"CASE WHEN {m} AND {ratio} > 0 THEN e.memory_peak_bytes / {ratio} "
        f"WHEN {m} AND {ratio} = 0 AND {request} > 0 THEN {request} END",
        "peak_mem_bs": f"CASE WHEN {m} AND {ratio} > 0 THEN e.memory_peak_bytes "
        f"WHEN {m} AND {ratio} = 0 AND {request} > 0 THEN 0 END",
    }
    return "".join(f", {sql} AS {name}" for name, sql in rates.items())


def _rate_sums() -> str:
    """Per group of pods, each weight's sum, and its sums times ``a`` and ``b``: what
    ``usage.cut`` cuts into periods (NULL where no pod's weight is known)."""
    return "".join(
        f", SUM(u.{r}) AS {r}, SUM(u.{r} * u.a) AS {r}a, SUM(u.{r} * u.b) AS {r}b" for r in RATES
    )


async def _day_hours(
    w: Window, cut: Sequence[usage.Period], first: datetime.datetime, last: datetime.datetime
) -> list[dict[str, Any]]:
    """Per group, period and, for failed jobs, class (``class_sql``: read from
    ``job_failure`` as the days are read), the finished pods' seconds of the whole days
    [first, last) from the daily roll-up (``usage_day``), by its copies of the jobs'
    columns; and how many failed jobs they are, counted over
    the failed jobs' days alone (a distinct count over every day costs three times
    the sums)."""
    n = period_sql(cut, w.since, w.every, w.rel("d.day"))
    reason = f"CASE WHEN d.status = 'Failed' THEN {class_sql('d')} END"
    weights = "".join(f", d.{rate} AS {rate}" for rate in RATES)

    def days(failed: str) -> str:
        return (
            f"SELECT {w.grouped('d')} AS grp, {n} AS n, {w.dialect.exact(reason)} AS reason, "
            f"d.job_id AS job, d.gpu_seconds AS g, d.cpu_milli_seconds AS c{weights} "
            "FROM usage_day d "
            f"WHERE d.day >= {w.time(first)} AND d.day < {w.time(last)}{failed} AND "
            f"{w.days_where()}"
        )

    sums = await w.rows(
        "SELECT u.grp AS grp, u.n AS n, u.reason AS reason, SUM(u.g) AS gpu_s, "
        f"SUM(u.c) AS cpu_ms{''.join(f', SUM(u.{r}) AS {r}' for r in RATES)} "
        f"FROM ({days('')}) u GROUP BY u.grp, u.n, u.reason"
    )
    only_failed = days(" AND d.status = 'Failed'")
    failed = await w.rows(
        "SELECT u.grp AS grp, u.n AS n, u.reason AS reason, COUNT(DISTINCT u.job) AS jobs "
        f"FROM ({only_failed}) u GROUP BY u.grp, u.n, u.reason"
    )
    jobs = {(row["grp"], row["n"], row["reason"]): row["jobs"] for row in failed}
    return [{**row, "jobs": jobs.get((row["grp"], row["n"], row["reason"]), 0)} for row in sums]


async def _counted(
    w: Window,
    cut: Sequence[usage.Period],
    jobs: list[str],
    first: datetime.datetime,
    last: datetime.datetime,
) -> set[tuple[str, int]]:
    """(job, period) of the failed jobs read live that the whole days count already."""
    found: set[tuple[str, int]] = set()
    n = period_sql(cut, w.since, w.every, w.rel("d.day"))
    for start in range(0, len(jobs), REASON_BATCH):
        marks = ", ".join(w.value(uid) for uid in jobs[start : start + REASON_BATCH])
        sql = (
            f"SELECT DISTINCT d.job_id AS job, {n} AS n FROM usage_day d WHERE d.job_id IN "
            f"({marks}) AND d.day >= {w.time(first)} AND d.day < {w.time(last)}"
        )
        found |= {(row["job"], usage.clamp(row["n"], len(cut))) for row in await w.rows(sql)}
    return found


async def _hours(
    w: Window, cut: Sequence[usage.Period], from_pods: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The pods' time in the window (decision 33): the whole days' finished pods from
    the daily roll-up, the edge days' finished pods of the jobs it holds on them read
    live, and the running pods read live through the index on ``gmt_finished``; or,
    ``from_pods``, and by ``node`` (the roll-up keeps no node), every pod read live
    (the indexed query, the bench's baseline).
    Returns (live sums for ``usage.spread``, days' seconds by period)."""
    if from_pods or w.group == "node":
        return await w.rows(pod_hours_sql(w, cut, w.since, w.until, "1 = 1")), []
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
                f"WHERE d.day >= {w.time(daily.midnight(lo))} AND d.day < {w.time(hi)})"
            )
            live += await w.rows(pod_hours_sql(w, cut, lo, hi, held))
    live += await w.rows(pod_hours_sql(w, cut, w.since, w.until, RUNNING, pods_first=True))
    return live, days


async def _job_counts(w: Window, cut: Sequence[usage.Period]) -> list[dict[str, Any]]:
    """Per group, the periods a job's life (in the window) begins and ends in, and its
    outcome when it finished in the window, and whether no pod of it was measured: the
    jobs count in each period between, and as Succeeded or Failed in the one they
    finished in."""
    created = w.rel(w.dialect.later("j.gmt_created", w.time(w.since)))
    ended = w.rel(w.dialect.earlier(f"COALESCE(j.gmt_finished, {w.time(w.now)})", w.time(w.until)))
    outcome = (
        f"CASE WHEN j.gmt_finished < {w.time(w.until)} AND j.status IN ('Succeeded', 'Failed') "
        "THEN j.status ELSE '' END"
    )
    # No pod of it measured (decision 47): the mark the summaries' writes keep.
    unknown = "CASE WHEN j.gmt_measured IS NULL THEN 1 ELSE 0 END"
    jobs = (
        f"SELECT {w.grouped()} AS grp, {outcome} AS outcome, {created} AS c, {ended} AS f, "
        f"{unknown} AS unknown FROM {w.jobs()} WHERE {w.jobs_where()}"
    )
    n0, n1 = period_sql(cut, w.since, w.every, "u.c"), period_sql(cut, w.since, w.every, "u.f")
    sql = (
        f"SELECT u.grp AS grp, u.outcome AS outcome, u.unknown AS unknown, {n0} AS n0, "
        f"{n1} AS n1, COUNT(*) AS jobs FROM ({jobs}) u GROUP BY u.grp, u.outcome, u.unknown, "
        "n0, n1"
    )
    return await w.rows(sql)


async def _waits(w: Window, cut: Sequence[usage.Period]) -> list[dict[str, Any]]:
    """Per group and period, the queue waits that ended in it at the ranks of
    ``usage.WAIT_PERCENTS`` (``usage.rank``), ranked by the database: of each job first
    running in the window (``first_ran_sql``), after how long, in tenths of a second. The
    candidates are the jobs that ran in the window by ``gmt_job_running``, and those
    without one alive in it."""
    first_pod = (
        f"(SELECT MIN({w.rel('p.gmt_started')}) FROM replica_info p WHERE p.job_id = j.job_id)"
    )
    started = first_ran_sql("j.gmt_job_running", w.rel("j.gmt_job_running"), first_pod)
    jobs = (
        f"SELECT {w.grouped()} AS grp, {w.rel('j.gmt_created')} AS created, {started} AS started "
        f"FROM {w.jobs()} WHERE ((j.gmt_job_running >= {w.time(w.since)} "
        f"AND j.gmt_job_running < {w.time(w.until)}) OR (j.gmt_job_running IS NULL "
        f"AND {w.life()})){w.scope()}"
    )
    length = int((w.until - w.since).total_seconds())
    n = period_sql(cut, w.since, w.every, "s.started")
    waits = (
        f"SELECT s.grp AS grp, {n} AS n, "
        f"ROUND({w.dialect.later('s.started - s.created', '0')}, 1) AS wait "
        f"FROM ({jobs}) s WHERE s.started >= 0 AND s.started < {length}"
    )
    ranked = (
        "SELECT u.grp AS grp, u.n AS n, u.wait AS wait, "
        "ROW_NUMBER() OVER (PARTITION BY u.grp, u.n ORDER BY u.wait) AS k, "
        f"COUNT(*) OVER (PARTITION BY u.grp, u.n) AS total FROM ({waits}) u"
    )
    # k is rank(total, p) when 100 (k - 1) < p total <= 100 k: integers, as ``usage.rank``.
    ranks = " OR ".join(
        f"(100 * (r.k - 1) < {p} * r.total AND {p} * r.total <= 100 * r.k)"
        for p in usage.WAIT_PERCENTS
    )
    return await w.rows(
        "SELECT r.grp AS grp, r.n AS n, r.wait AS wait, r.k AS k, r.total AS total "
        f"FROM ({ranked}) r WHERE {ranks}"
    )


async def _classes(w: Window, jobs: list[str]) -> dict[str, str]:
    """The class of each failed job the classifying pass has classified (decision 42),
    ``REASON_BATCH`` jobs a statement by ``job_failure``'s unique index."""
    found: dict[str, str] = {}
    for start in range(0, len(jobs), REASON_BATCH):
        marks = ", ".join(w.value(uid) for uid in jobs[start : start + REASON_BATCH])
        sql = (
            f"SELECT f.job_id AS job, f.failure_class AS class FROM {FAILURES} f "
            f"WHERE f.job_id IN ({marks})"
        )
        found.update({row["job"]: row["class"] for row in await w.rows(sql)})
    return found


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
    ``cluster``: one cluster's jobs, those of a caller's scope, or (None) every cluster's.
    By ``clusterqueue``, the queues' figures instead (``queries.allocation``)."""
    group = usage.group_of(group_by)
    period = one_of("every", every, usage.EVERY)
    start, end = usage.window(since, until)
    try:
        cut = usage.periods(start, end, period)
    except ValueError as exc:
        raise BadQuery(Named("every"), f": {exc}; narrow the window") from None
    namespace = check_namespace(namespace)
    w = Window(group, start, end, namespace, period, cluster)
    if group == usage.CLUSTER_QUEUE:
        return await queue_rollup(w, cut, from_pods)
    counts = await _job_counts(w, cut)
    usage.check_rows(group, counts, len(cut))
    hours, days = await _hours(w, cut, from_pods)
    waits = await _waits(w, cut)
    failed = sorted({row["job"] for row in hours if row["job"]})
    reasons = await _classes(w, failed)
    counted = await _counted(w, cut, failed, *_whole_days(w)) if days else set()
    return _rows(group, period, cut, start, (hours, days, counted), counts, waits, reasons)


def _whole_days(w: Window) -> tuple[datetime.datetime, datetime.datetime]:
    """The first and the end of the whole UTC days inside the window (first > end when
    there are none)."""
    return daily.midnight(w.since - _TICK) + daily.DAY, daily.midnight(w.until)


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
            row(found["grp"], n)[usage.UNKNOWN_JOBS] += int(found["jobs"]) * int(found["unknown"])
        if found["outcome"]:
            row(found["grp"], found["n1"])[found["outcome"].lower()] += int(found["jobs"])
    live, days, counted = hours
    for found in live:
        for n, gpu_s, cpu_ms in usage.spread(found, bounds):
            job = found["job"]
            one = row(found["grp"], n)
            usage.add_hours(one, job, gpu_s, cpu_ms, reasons, counts=(job, n) not in counted)
        for rate in RATES:
            for n, weighed in usage.cut(found, bounds, rate):
                usage.add_rates(row(found["grp"], n), {rate: weighed})
    for found in days:
        cost = (float(found["gpu_s"] or 0), float(found["cpu_ms"] or 0))
        usage.add_days(row(found["grp"], found["n"]), found["reason"], *cost, int(found["jobs"]))
        usage.add_rates(row(found["grp"], found["n"]), found)
    for found in waits:
        usage.add_wait(row(found["grp"], found["n"]), found["k"], found["total"], found["wait"])
    ordered = sorted(table.items(), key=lambda item: (item[0][1], -item[1]["gpu_s"]))
    return [
        usage.finished_row(group, grp, cut[n].label if every else None, one)
        for (grp, n), one in ordered
    ]
