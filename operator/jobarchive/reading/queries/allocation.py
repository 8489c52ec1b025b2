"""Usage by Kueue's cluster queue over a window (decision 44): from the roll-up, summed
by the database (``queries.allotted``, decision 46), or from every pod read live in
three statements, the arithmetic ``reading.utilization``'s: the pods' GPU time by the
attempt each started in, the quotas in force, and the jobs' waits by the queue of
their first attempt. The same figures either way.

A ClusterQueue belongs to no namespace: its quota is the whole cluster's, so the
roll-up takes no namespace, and a caller needs the grant of usage over all
namespaces, in the clusters it may read (decision 36).
"""

import bisect
import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.core.attempts import PREEMPTED, figures
from jobarchive.reading import usage, utilization
from jobarchive.reading.params import BadQuery, Named
from jobarchive.reading.queries import allotted
from jobarchive.reading.queries.facts import first_ran_sql
from jobarchive.reading.queries.windows import Window

# Each attempt with the reservation of its job's next (NULL for the latest), so that a
# pod's attempt, its job's latest reserved at or before its start, is found by a range.
_ATTEMPTS = (
    "(SELECT x.job_id, x.cluster_queue, x.end_reason, x.quota_reserved_at, "
    "LEAD(x.quota_reserved_at) OVER (PARTITION BY x.job_id ORDER BY x.quota_reserved_at) "
    "AS next_at FROM job_attempt x WHERE x.cluster_queue IS NOT NULL) a"
)
_OWNING = (
    "a.quota_reserved_at <= p.gmt_started AND (a.next_at IS NULL OR p.gmt_started < a.next_at)"
)
_ATTEMPT_TIMES = ("quota_reserved_at", "admitted_at", "running_at", "ended_at")


async def _held(w: Window) -> list[dict[str, Any]]:
    """Per queue, whether preempted, and stretch [a, b) within the window: the GPUs its
    pods held, summed (one row for the pods of a job that ran together)."""
    begun = w.dialect.later("p.gmt_started", w.time(w.since))
    ending = w.dialect.earlier(f"COALESCE(p.gmt_finished, {w.time(w.now)})", w.time(w.until))
    ending = w.dialect.later(ending, begun)
    pods = (
        f"SELECT {w.dialect.exact('a.cluster_queue')} AS grp, "
        f"CASE WHEN a.end_reason = '{PREEMPTED}' THEN 1 ELSE 0 END AS pre, p.gpus AS g, "
        f"{w.rel(begun)} AS a, {w.rel(ending)} AS b FROM {_ATTEMPTS} "
        "JOIN replica_info p ON p.job_id = a.job_id JOIN job_info j ON j.job_id = a.job_id "
        f"WHERE p.gpus > 0 AND p.gmt_started IS NOT NULL "
        f"AND p.gmt_started < {w.time(w.until)} "
        f"AND (p.gmt_finished IS NULL OR p.gmt_finished > {w.time(w.since)}) "
        f"AND {_OWNING}{w.scope()}"
    )
    return await w.rows(
        "SELECT u.grp AS grp, u.pre AS pre, u.a AS a, u.b AS b, SUM(u.g) AS g "
        f"FROM ({pods}) u GROUP BY u.grp, u.pre, u.a, u.b"
    )


async def _granted(w: Window) -> list[dict[str, Any]]:
    """Per quota row in force within the window (until now at the latest): its queue,
    nominal GPUs and stretch [a, b) within the window."""
    begun = w.dialect.later("q.valid_from", w.time(w.since))
    ending = w.dialect.earlier(f"COALESCE(q.valid_until, {w.time(w.now)})", w.time(w.until))
    return await w.rows(
        f"SELECT {w.dialect.exact('q.cluster_queue')} AS grp, q.nominal AS g, "
        f"{w.rel(begun)} AS a, {w.rel(ending)} AS b FROM queue_quota q "
        f"WHERE q.valid_from < {w.time(w.now)} "
        f"AND (q.valid_until IS NULL OR q.valid_until > {w.time(w.since)}){w.scope('q')}"
    )


async def _attempts(w: Window) -> list[dict[str, Any]]:
    """The attempts of the jobs whose first quota reservation lies in the window, with
    their jobs' creation and first running (as usage's queue wait reads it), as
    seconds from the window's start."""
    first_pod = (
        f"(SELECT MIN({w.rel('p.gmt_started')}) FROM replica_info p WHERE p.job_id = j.job_id)"
    )
    ran = first_ran_sql("j.gmt_job_running", w.rel("j.gmt_job_running"), first_pod)
    times = ", ".join(f"{w.rel(f'a.{column}')} AS {column}" for column in _ATTEMPT_TIMES)
    first = "(SELECT MIN(y.quota_reserved_at) FROM job_attempt y WHERE y.job_id = j.job_id)"
    return await w.rows(
        f"SELECT a.job_id AS job, {w.dialect.exact('a.cluster_queue')} AS grp, {times}, "
        f"a.end_reason AS end_reason, {w.rel('j.gmt_created')} AS created, {ran} AS ran "
        "FROM job_attempt a JOIN job_info j ON j.job_id = a.job_id "
        f"WHERE {first} >= {w.time(w.since)} AND {first} < {w.time(w.until)}{w.scope()}"
    )


def _moment(since: datetime.datetime, seconds: Any) -> datetime.datetime | None:
    return None if seconds is None else since + datetime.timedelta(seconds=float(seconds))


def _waits(
    w: Window, rows: list[dict[str, Any]], bounds: Sequence[tuple[float, float]]
) -> allotted.Cells:
    """Per queue and period, the percentiles of the jobs' waits (``usage.QUEUE_WAITS``):
    in the queue of its first attempt, the period its quota was first reserved in."""
    jobs: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        jobs.setdefault(row["job"], []).append(row)
    starts = [lo for lo, _ in bounds]
    found: dict[tuple[str, int], dict[str, list[float]]] = {}
    for attempts in jobs.values():
        first = min(attempts, key=lambda row: float(row["quota_reserved_at"]))
        if first["grp"] is None:
            continue
        n = usage.clamp(
            bisect.bisect_right(starts, float(first["quota_reserved_at"])) - 1, len(starts)
        )
        times = [
            {**row, **{c: _moment(w.since, row[c]) for c in _ATTEMPT_TIMES}} for row in attempts
        ]
        said = figures(_moment(w.since, first["created"]), times)
        waits = found.setdefault((first["grp"], n), {})
        created, ran = first["created"], first["ran"]
        values = {
            "queue_wait": None if ran is None else max(0.0, float(ran) - float(created)),
            "quota_wait": said.quota_wait_s,
            "start_wait": said.start_wait_s,
        }
        for wait, value in values.items():
            if value is not None:
                waits.setdefault(wait, []).append(value)
    return {key: utilization.percentiles(said) for key, said in found.items()}


async def queue_rollup(
    w: Window, cut: Sequence[usage.Period], from_pods: bool = False
) -> list[dict[str, Any]]:
    """The rows of usage by cluster queue over ``w``, per period of ``cut``: from the
    roll-up, or ``from_pods`` (every pod read live: the same figures, slower)."""
    if w.namespace is not None:
        raise BadQuery(
            Named("namespace"), " cannot be named by clusterqueue: a queue's quota is the cluster's"
        )
    granted: dict[str, list[utilization.Span]] = {}
    for row in await _granted(w):
        granted.setdefault(row["grp"], []).append(
            (float(row["a"]), float(row["b"]), float(row["g"]))
        )
    if from_pods:
        cells, waits = await _live(w, cut, granted)
    else:
        names = sorted(set(await allotted.queue_names(w)) | set(granted))
        cells = await allotted.held(w, cut, names)
        waits = await allotted.waits(w, cut, names)
    queues = sorted({grp for grp, _ in cells} | set(granted) | {grp for grp, _ in waits})
    if len(queues) * len(cut) > usage.MAX_ROWS:
        raise usage.TooManyRows(Named("by"), f": {len(queues):,} queues over {len(cut):,} periods")
    rows = []
    for queue in queues:
        rows += _queue_rows(w, cut, queue, (cells, granted.get(queue, [])), waits)
    return [row for _, _, row in sorted(rows, key=lambda item: item[:2])]


async def _live(
    w: Window, cut: Sequence[usage.Period], granted: dict[str, list[utilization.Span]]
) -> tuple[allotted.Cells, allotted.Cells]:
    """The figures per queue and period from every pod read live, summed and swept in
    Python (``reading.utilization``), and the waits' percentiles."""
    bounds = [((p.start - w.since).total_seconds(), (p.end - w.since).total_seconds()) for p in cut]
    held: dict[str, list[tuple[utilization.Span, bool]]] = {}
    for row in await _held(w):
        span = (float(row["a"]), float(row["b"]), float(row["g"]))
        held.setdefault(row["grp"], []).append((span, bool(row["pre"])))
    cells: allotted.Cells = {}
    for queue, pods in held.items():
        allocated = utilization.per_period((s for s, _ in pods), bounds)
        preempted = utilization.per_period((s for s, pre in pods if pre), bounds)
        beyond = utilization.borrowed((s for s, _ in pods), granted.get(queue, []), bounds)
        for n in range(len(cut)):
            cells[queue, n] = {
                "allocated": allocated[n],
                "preempted": preempted[n],
                "borrowed": beyond[n],
            }
    return cells, _waits(w, await _attempts(w), bounds)


def _queue_rows(
    w: Window,
    cut: Sequence[usage.Period],
    queue: str,
    spans: tuple[allotted.Cells, list[utilization.Span]],
    waits: allotted.Cells,
) -> list[tuple[int, float, dict[str, Any]]]:
    """A queue's rows, each with its sort key (period, most allocated first): the
    periods it held GPUs in, had a quota in force in, or had a job first reserved in."""
    bounds = [((p.start - w.since).total_seconds(), (p.end - w.since).total_seconds()) for p in cut]
    cells, quotas = spans
    quota = utilization.per_period(quotas, bounds)
    rows = []
    for n, period in enumerate(cut):
        lo, hi = bounds[n]
        in_force = any(min(b, hi) > max(a, lo) for a, b, _ in quotas)
        said = waits.get((queue, n), {})
        cell = cells.get((queue, n), {})
        allocated = cell.get("allocated", 0.0)
        if not (allocated or in_force or said):
            continue
        figures_n = {
            "allocated": allocated,
            "quota": quota[n] if in_force else None,
            "borrowed": cell.get("borrowed", 0.0),
            "preempted": cell.get("preempted", 0.0),
        }
        label = period.label if w.every else None
        rows.append((n, -allocated, utilization.queue_row(queue, label, figures_n, said)))
    return rows
