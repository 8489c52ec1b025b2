"""Usage by cluster queue from the roll-up (``queue_span``, decision 46), summed and
ranked by the database, so that a month answers in a few rows whatever its pods: the
GPUs held (the spans of the finished pods, the running pods read live), of them those
preempted, and those beyond the quota in force, swept in one window-function
statement (``utilization``'s sweep in SQL) and cut into periods by ``usage.spread``;
and the waits' percentiles ranked as the other roll-ups' are (``usage.rank``). The
same figures as ``queries.allocation``'s reading of every pod."""

from collections.abc import Sequence
from typing import Any

from jobarchive.core.attempts import PREEMPTED
from jobarchive.reading import usage
from jobarchive.reading.queries.facts import first_ran_sql
from jobarchive.reading.queries.windows import Window, period_sql

# Per (queue, period): the figures, or the waits' percentiles, under their columns' names.
Cells = dict[tuple[str, int], dict[str, float]]
# The factor that packs two counts in one column (``_swept_sql``): more GPUs than any
# queue holds at once and more quota rows than it has in force, while the packed sums
# stay below 2^53, where a double holds every whole number exactly.
PACK = 1 << 24
# The running pods, read live through the index on ``gmt_finished``.
RUNNING = "p.gmt_finished IS NULL"
# A running pod's attempt: its job's reserved last at or before its start.
_OWNING = (
    "(SELECT x.id FROM job_attempt x WHERE x.job_id = p.job_id AND x.cluster_queue IS NOT "
    "NULL AND x.quota_reserved_at <= p.gmt_started ORDER BY x.quota_reserved_at DESC LIMIT 1)"
)


async def queue_names(w: Window) -> list[str]:
    """Every cluster queue an attempt names, told apart by case (read along the index
    of ``job_attempt`` on its queue): the statements below carry a queue as its index
    here, so that their many rows hold a number, not a name."""
    found = await w.rows(
        f"SELECT DISTINCT {w.dialect.exact('x.cluster_queue')} AS grp FROM job_attempt x "
        "WHERE x.cluster_queue IS NOT NULL"
    )
    return sorted(str(row["grp"]) for row in found)


def _numbered(w: Window, names: Sequence[str], column: str) -> str:
    """The index in ``names`` of the queue ``column`` names (NULL for another)."""
    if not names:
        return "NULL"
    exact = w.dialect.exact(column)
    branches = " ".join(f"WHEN {w.value(name)} THEN {n}" for n, name in enumerate(names))
    return f"CASE {exact} {branches} END"


def _cut(w: Window, rows: str, names: Sequence[str]) -> str:
    """Rows of ``rows`` (queue ``q``, preempted ``pre``, GPUs ``g``, start ``s0``, end
    ``s1``: NULL while running, ``cluster``) in the window, as (grp: the queue's index
    in ``names``, pre, g, a, b: their stretch cut to it, in seconds from its start)."""
    grp = _numbered(w, names, "u.q")
    begun = w.dialect.later("u.s0", w.time(w.since))
    ending = w.dialect.earlier(f"COALESCE(u.s1, {w.time(w.now)})", w.time(w.until))
    ending = w.dialect.later(ending, begun)
    return (
        f"SELECT {grp} AS grp, u.pre AS pre, u.g AS g, "
        f"{w.rel(begun)} AS a, {w.rel(ending)} AS b FROM ({rows}) u WHERE u.s0 < "
        f"{w.time(w.until)} AND (u.s1 IS NULL OR u.s1 > {w.time(w.since)}){w.scope('u')}"
    )


def held_sql(w: Window, names: Sequence[str]) -> str:
    """The GPUs held in the window as (grp, pre, g, a, b): the finished pods' spans from
    the roll-up, of recorded jobs as reading the pods counts them (by the spans' copies
    of their jobs' columns: no join), and the running pods read live, each in the
    attempt found by the index of its job's."""
    spans = (
        "SELECT s.cluster_queue AS q, s.preempted AS pre, s.gpus AS g, s.started AS s0, "
        "s.finished AS s1, s.job_cluster AS cluster FROM queue_span s "
        "WHERE s.job_created IS NOT NULL"
    )
    running = (
        f"SELECT a.cluster_queue AS q, CASE WHEN a.end_reason = '{PREEMPTED}' THEN 1 ELSE 0 "
        "END AS pre, p.gpus AS g, p.gmt_started AS s0, p.gmt_finished AS s1, j.cluster AS "
        f"cluster FROM replica_info p JOIN job_info j ON j.job_id = p.job_id "
        f"JOIN job_attempt a ON a.id = {_OWNING} WHERE {RUNNING} AND p.gpus > 0 "
        "AND p.gmt_started IS NOT NULL"
    )
    first = _cut(w, spans, names)
    return f"{first} UNION ALL {_cut(w, running, names)}"


def _granted_sql(w: Window, names: Sequence[str]) -> str:
    """Each quota row in force in the window as (grp: its queue's index in ``names``, g,
    a, b), as ``queries.allocation`` reads them."""
    grp = _numbered(w, names, "q.cluster_queue")
    begun = w.dialect.later("q.valid_from", w.time(w.since))
    ending = w.dialect.earlier(f"COALESCE(q.valid_until, {w.time(w.now)})", w.time(w.until))
    return (
        f"SELECT {grp} AS grp, q.nominal AS g, "
        f"{w.rel(begun)} AS a, {w.rel(ending)} AS b FROM queue_quota q "
        f"WHERE q.valid_from < {w.time(w.now)} "
        f"AND (q.valid_until IS NULL OR q.valid_until > {w.time(w.since)}){w.scope('q')}"
    )


def _swept_sql(w: Window, names: Sequence[str]) -> str:
    """The GPUs held (``h``), of them in attempts a preemption ended (``hp``), and
    beyond the GPUs granted while a quota was in force (``x``), per queue over each
    stretch [t, nt) between the moments either changes: the changes (+GPUs at a
    stretch's start, - at its end) summed in time order per queue. Of the changes one
    moment holds, each has the sums of all (a RANGE frame, whatever the peers' order)
    and only the last the next moment: the others hold no time."""
    two = "(SELECT 0 AS k UNION ALL SELECT 1 AS k) e"
    # Doubles (``1e0``), not the integers' sums (DECIMAL), and two counts in one column
    # (``PACK`` times the first, plus the second: each whole and at least 0 at every
    # moment, so both come back exactly): the rows the window functions are computed
    # over stay narrow enough for MariaDB to keep them in memory (a temporary table
    # past ``tmp_table_size`` goes to disk: three times slower).
    moment = "CASE WHEN e.k = 0 THEN x.a ELSE x.b END"
    sign = "CASE WHEN e.k = 0 THEN 1e0 ELSE -1e0 END"
    # Built in the statement's order: each adds its values' placeholders in turn.
    held, granted = held_sql(w, names), _granted_sql(w, names)
    changes = (
        f"SELECT x.grp AS grp, {moment} AS t, {sign} * x.g * ({PACK} + x.pre) AS dh, "
        f"0e0 AS dg FROM ({held}) x CROSS JOIN {two} "
        "WHERE x.grp IS NOT NULL AND x.b > x.a UNION ALL "
        f"SELECT x.grp AS grp, {moment} AS t, 0e0 AS dh, {sign} * ({PACK} * x.g + 1) AS dg "
        f"FROM ({granted}) x CROSS JOIN {two} WHERE x.b > x.a"
    )
    over = "OVER (PARTITION BY m.grp ORDER BY m.t)"
    swept = (
        f"SELECT m.grp AS grp, m.t AS t, SUM(m.dh) {over} AS held, SUM(m.dg) {over} AS granted, "
        f"LEAD(m.t) {over} AS nt FROM ({changes}) m"
    )
    h, g = f"FLOOR(r.held / {PACK})", f"FLOOR(r.granted / {PACK})"
    return (
        f"SELECT r.grp AS grp, r.t AS t, r.nt AS nt, {h} AS h, r.held - {PACK} * {h} AS hp, "
        f"CASE WHEN r.granted > {g} * {PACK} AND {h} > {g} THEN {h} - {g} ELSE 0 END AS x "
        f"FROM ({swept}) r WHERE r.nt > r.t AND r.held > 0"
    )


async def held(w: Window, cut: Sequence[usage.Period], names: Sequence[str]) -> Cells:
    """Per queue of ``names`` and period, the GPU-seconds held (``allocated``), of them in
    attempts a preemption ended (``preempted``), and held beyond the GPUs granted at
    each moment while a quota was in force (``borrowed``): ``utilization``'s sweep in
    one statement, its stretches summed per the periods they begin and end in and cut
    by ``usage.spread``."""
    n0, n1 = period_sql(cut, w.since, w.every, "s.t"), period_sql(cut, w.since, w.every, "s.nt")
    sums = ", ".join(
        f"SUM(s.{v}) AS {v}, SUM(s.{v} * s.t) AS {v}a, SUM(s.{v} * s.nt) AS {v}b"
        for v in ("h", "hp", "x")
    )
    found = await w.rows(
        f"SELECT s.grp AS grp, {n0} AS n0, {n1} AS n1, {sums} FROM ({_swept_sql(w, names)}) s "
        "GROUP BY s.grp, n0, n1"
    )
    bounds = [((p.start - w.since).total_seconds(), (p.end - w.since).total_seconds()) for p in cut]
    cells: Cells = {}
    for row in found:
        spread = zip(
            usage.spread(_sums(row, "h", "hp"), bounds),
            usage.spread(_sums(row, "x", None), bounds),
            strict=True,
        )
        for (n, gpu_s, preempted_s), (_, borrowed_s, _) in spread:
            cell = cells.setdefault(
                (names[int(row["grp"])], n), {"allocated": 0.0, "preempted": 0.0, "borrowed": 0.0}
            )
            cell["allocated"] += gpu_s
            cell["preempted"] += preempted_s
            cell["borrowed"] += borrowed_s
    return cells


def _sums(row: dict[str, Any], first: str, second: str | None) -> dict[str, Any]:
    """A row's periods and sums of two figures under the names ``usage.spread`` reads
    for GPUs and CPUs (none for no second)."""
    sums = {"n0": row["n0"], "n1": row["n1"]}
    for figure, name in ((first, "g"), (second, "c")):
        for end in ("", "a", "b"):
            sums[name + end] = 0 if figure is None else row[figure + end]
    return sums


def _job_waits_sql(w: Window, cut: Sequence[usage.Period], names: Sequence[str]) -> str:
    """Each recorded job whose first quota reservation lies in the window, as (grp: the
    queue of its first attempt, n: the period of that reservation, its three waits,
    w0-w2): the waits ``core.attempts.figures`` and usage's queue wait give, in seconds,
    from the waits the writer keeps per job (``queue_job``), read along its index on
    the first reservation."""
    rel = w.rel
    first_pod = f"(SELECT MIN({rel('p.gmt_started')}) FROM replica_info p WHERE p.job_id = u.job)"
    ran = first_ran_sql("u.job_running", rel("u.job_running"), first_pod)
    created, first_at = rel("u.job_created"), rel("u.first_reserved")
    jobs = (
        "SELECT r.job_id AS job, r.cluster_queue AS q, r.first_reserved AS first_reserved, "
        "r.start_wait_s AS start_wait, r.job_cluster AS cluster, r.job_created AS job_created, "
        f"r.job_running AS job_running FROM queue_job r WHERE r.first_reserved >= "
        f"{w.time(w.since)} AND r.first_reserved < {w.time(w.until)} "
        "AND r.job_created IS NOT NULL"
    )
    return (
        f"SELECT {_numbered(w, names, 'u.q')} AS grp, "
        f"{period_sql(cut, w.since, w.every, first_at)} AS n, "
        f"{w.dialect.later(f'{ran} - {created}', '0')} AS w0, "
        f"{w.dialect.later(f'{first_at} - {created}', '0')} AS w1, "
        f"u.start_wait AS w2 FROM ({jobs}) u WHERE 1 = 1{w.scope('u')}"
    )


async def waits(w: Window, cut: Sequence[usage.Period], names: Sequence[str]) -> Cells:
    """Per queue and period, each wait's percentiles (``usage.WAIT_PERCENTS``) under
    their columns' names, in tenths of a second: the jobs holding a wait at one of those
    ranks, ranked by the database within their queue and period, each wait apart. A
    job without a wait sorts first (NULL), so its rank among the waits is its row
    number less the jobs without one."""
    kinds = range(len(usage.QUEUE_WAITS))
    group = "OVER (PARTITION BY v.grp, v.n"
    numbers = ", ".join(
        f"ROW_NUMBER() {group} ORDER BY v.w{i}) AS k{i}, COUNT(v.w{i}) {group}) AS c{i}"
        for i in kinds
    )
    numbered = (
        f"SELECT v.grp AS grp, v.n AS n, v.w0 AS w0, v.w1 AS w1, v.w2 AS w2, {numbers}, "
        f"COUNT(*) {group}) AS total FROM ({_job_waits_sql(w, cut, names)}) v "
        "WHERE v.grp IS NOT NULL"
    )
    ranks = ", ".join(f"y.k{i} - y.total + y.c{i} AS r{i}, y.c{i} AS c{i}" for i in kinds)
    ranked = (
        f"SELECT y.grp AS grp, y.n AS n, y.w0 AS w0, y.w1 AS w1, y.w2 AS w2, {ranks} "
        f"FROM ({numbered}) y"
    )
    # r is rank(c, p) when 100 (r - 1) < p c <= 100 r: integers, as ``usage.rank``.
    wanted = " OR ".join(
        f"(100 * (z.r{i} - 1) < {p} * z.c{i} AND {p} * z.c{i} <= 100 * z.r{i})"
        for i in kinds
        for p in usage.WAIT_PERCENTS
    )
    cells: Cells = {}
    for row in await w.rows(f"SELECT z.* FROM ({ranked}) z WHERE {wanted}"):
        cell = cells.setdefault((names[int(row["grp"])], usage.clamp(row["n"], len(cut))), {})
        for i, wait in enumerate(usage.QUEUE_WAITS):
            for p in usage.WAIT_PERCENTS:
                found = row[f"w{i}"]
                if found is not None and usage.rank(int(row[f"c{i}"]), p) == int(row[f"r{i}"]):
                    cell[f"{wait}_p{p}_s"] = round(float(found), 1)
    return cells
