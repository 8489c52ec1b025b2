"""The daily usage roll-up (``usage_day``, decision 33): per job and UTC day, its finished
pods' GPU- and CPU-seconds on that day, rewritten from all the job's pods whenever one of
them is written finished, so that writing the same pods again writes the same rows; and
its job's columns, copied whenever the job or its days are written."""

import dataclasses
import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core import efficiency
from jobarchive.storage import dialects, spans
from jobarchive.storage.models import USAGE_DAY_TABLE, UsageDay, utcnow

# One reading of a stored time, the spans' (``storage.spans``).
from jobarchive.storage.spans import moment as moment

DAY = datetime.timedelta(days=1)
# A failed pod's reason: the head of its remark (``OOMKilled (exit code 137)``).
HEAD = "CASE WHEN INSTR({0}, ': ') > 0 THEN SUBSTR({0}, 1, INSTR({0}, ': ') - 1) ELSE {0} END"
# Jobs rewritten per statement: well under both engines' bound parameters.
JOBS_PER_STATEMENT = 500
ROWS_PER_INSERT = 500
# (job, day) -> the day's GPU-seconds, CPU-millicore-seconds, efficiency weights.
Seconds = dict[tuple[str, datetime.datetime], dict[str, float | None]]
# A pod's summary as the rewrite reads it beside the pod (``SUMMARY``), for its weights.
_MEASURED = (
    "outcome",
    "gpu_activity_mean",
    "unused_gpus",
    "energy_joules",
    "cpu_efficiency",
    "memory_peak_ratio",
)
# The pods a rewrite reads, with their summaries (decision 47): a pod's limit is read
# only where its memory peak ratio is known, the one figure weighed by it.
SUMMARISED = (
    "SELECT p.pod_id, p.job_id, p.cluster, p.gpus, p.cpu_millis, p.memory_bytes, "
    "p.gmt_started, p.gmt_finished, p.status, "
    f"{HEAD.format('p.remark')} AS head, "
    "CASE WHEN e.memory_peak_ratio IS NOT NULL THEN p.resources END AS resources, "
    + ", ".join(f"e.{name}" for name in _MEASURED)
    + " FROM replica_info p LEFT JOIN pod_efficiency e ON e.pod_id = p.pod_id "
)
# A day's copies of its job's columns, as read from its ``job_info`` row (``j``).
JOB_COLUMNS: dict[str, str] = {
    "namespace": "j.namespace",
    "owner": "j.owner",
    "tenant": "j.tenant",
    "queue": "j.queue",
    "kind": "j.kind",
    "status": "j.status",
    "job_reason": f"NULLIF({HEAD.format('j.remark')}, '')",
    "job_created": "j.gmt_created",
    "job_finished": "j.gmt_finished",
}


def midnight(moment_: datetime.datetime) -> datetime.datetime:
    """The start of the UTC day that holds ``moment_``."""
    utc = moment_.astimezone(datetime.UTC)
    return utc.replace(hour=0, minute=0, second=0, microsecond=0)


def _rates(
    pod: Mapping[str, Any], start: datetime.datetime, end: datetime.datetime
) -> dict[str, float | None]:
    """A pod's efficiency weights a second (``efficiency.rates``) from its row and its
    summary's columns read beside it (none when it has no summary)."""
    if pod["outcome"] is None:
        return {}
    given = efficiency.Allocated(
        run_seconds=max(0.0, (end - start).total_seconds()),
        gpus=pod["gpus"] or 0,
        cpu_millis=pod["cpu_millis"],
        memory_bytes=efficiency.memory_given(pod["resources"], pod["memory_bytes"]),
    )
    return efficiency.rates(given, efficiency.PodEfficiency(**{n: pod[n] for n in _MEASURED}))


def days_of(pods: Iterable[Mapping[str, Any]]) -> Seconds:
    """(job, day) -> GPU-seconds, CPU-millicore-seconds of finished pods and their
    efficiency weights (``efficiency.RATES``, None where no pod's is known), each pod's
    time cut at UTC midnights; a row for every day from its start's to its finish's, so
    a job with a finished pod has at least one (zero when it ran no time). Pure."""
    found: Seconds = {}
    for pod in pods:
        start, end = moment(pod["gmt_started"]), moment(pod["gmt_finished"])
        if start is None or end is None:
            continue
        gpus, millis = pod["gpus"] or 0, pod["cpu_millis"] or 0
        rates = _rates(pod, start, end)
        day = midnight(start)
        while day <= end:
            ran = max(0.0, (min(end, day + DAY) - max(start, day)).total_seconds())
            cost = found.setdefault(
                (pod["job_id"], day),
                {"gpu_seconds": 0.0, "cpu_milli_seconds": 0.0, **dict.fromkeys(efficiency.RATES)},
            )
            cost["gpu_seconds"] = (cost["gpu_seconds"] or 0.0) + gpus * ran
            cost["cpu_milli_seconds"] = (cost["cpu_milli_seconds"] or 0.0) + millis * ran
            efficiency.add_rates(cost, rates, ran)
            day += DAY
    return found


def reasons_of(pods: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each job's first failed pod's reason (``head``), by finish, an unfinished one last
    (as the per-job facts take it, finishing now); none for a job whose failed pods gave
    none. Pure."""
    far = datetime.datetime.max.replace(tzinfo=datetime.UTC)
    failed = sorted(
        (pod for pod in pods if pod["status"] == "Failed"),
        key=lambda pod: moment(pod["gmt_finished"]) or far,
    )
    found: dict[str, str] = {}
    for pod in failed:
        if pod["head"]:
            found.setdefault(str(pod["job_id"]), str(pod["head"]))
    return found


async def lock(execute: dialects.Execute, dialect: dialects.Dialect, jobs: Iterable[str]) -> None:
    """Hold the jobs' rows, then their stored pods (and their index's gaps), before the
    pods are written, where the engine has locking reads: a second transaction writing
    one of these jobs or pods of it then waits for this one whole, rather than
    deadlocking with it midway; and the job's columns copied into its days are its
    newest (a job's write takes its row first too, then its days: one order)."""
    uids = sorted(set(jobs))
    if not dialect.locks_rows:
        return
    for table in ("job_info", "replica_info"):
        for start in range(0, len(uids), JOBS_PER_STATEMENT):
            chunk = uids[start : start + JOBS_PER_STATEMENT]
            marks = ", ".join([dialect.placeholder] * len(chunk))
            await execute(
                dialect.locking(f"SELECT id FROM {table} WHERE job_id IN ({marks})"), chunk
            )


async def refresh(
    execute: dialects.Execute, dialect: dialects.Dialect, jobs: Iterable[str]
) -> None:
    """Copy the jobs' columns (``JOB_COLUMNS``) into their days, in the caller's
    transaction: after the jobs' rows are written, and after their days are. A day of a
    job not recorded gets NULLs, which no window's jobs match."""
    await spans.copy_job_columns(execute, dialect, USAGE_DAY_TABLE.name, JOB_COLUMNS, jobs)


async def rewrite(
    execute: dialects.Execute,
    dialect: dialects.Dialect,
    jobs: Iterable[str],
    spanned: bool = True,
) -> None:
    """Rewrite the jobs' days from their pods and the pods' summaries, in the caller's
    transaction, and (``spanned``) their spans by cluster queue. The pods are read with
    a locking read where the engine has one, so that two transactions writing pods of
    one job see each other's (one waits, or is rolled back and retried)."""
    uids = sorted(set(jobs))
    for start in range(0, len(uids), JOBS_PER_STATEMENT):
        await _rewrite(execute, dialect, uids[start : start + JOBS_PER_STATEMENT], spanned)


async def _rewrite(
    execute: dialects.Execute, dialect: dialects.Dialect, uids: list[str], spanned: bool
) -> None:
    marks = ", ".join([dialect.placeholder] * len(uids))
    _, pods = await execute(dialect.locking(f"{SUMMARISED}WHERE p.job_id IN ({marks})"), list(uids))
    await execute(f"DELETE FROM {USAGE_DAY_TABLE.name} WHERE job_id IN ({marks})", list(uids))
    jobs: dict[str, tuple[str | None, str | None]] = {
        str(pod["job_id"]): (pod["cluster"], None) for pod in pods
    }
    jobs.update({job: (jobs[job][0], why) for job, why in reasons_of(pods).items()})
    await insert(execute, dialect, days_of(pods), jobs)
    await refresh(execute, dialect, uids)
    # The spans by cluster queue are of the same pods: rewritten from them (decision 46);
    # a summary written changes no span.
    if spanned:
        await spans.rewrite(execute, dialect, uids, pods)


async def insert(
    execute: dialects.Execute,
    dialect: dialects.Dialect,
    days: Seconds,
    jobs: Mapping[str, tuple[str | None, str | None]],
) -> None:
    """Insert the days' rows, stamped as every table's (``Stamped.stamp``), each with its
    job's (cluster its pods came from, reason its pods failed) from ``jobs``."""
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for (job, day), seconds in sorted(days.items()):
        row: dict[str, Any] = {
            "job_id": job,
            "day": day,
            **seconds,
            "cluster": jobs.get(job, (None, None))[0],
            "reason": jobs.get(job, (None, None))[1],
            # Copied from the job's row next (``refresh``).
            **dict.fromkeys(JOB_COLUMNS),
        }
        UsageDay.stamp(row, now)
        rows.append(row)
    for start in range(0, len(rows), ROWS_PER_INSERT):
        group: Sequence[Mapping[str, Any]] = rows[start : start + ROWS_PER_INSERT]
        await execute(
            dialect.insert_sql(USAGE_DAY_TABLE, len(group)), dialect.params(USAGE_DAY_TABLE, group)
        )


@dataclasses.dataclass(frozen=True)
class Step:
    """The daily usage roll-up's step of one table's rows in a write: the jobs whose days
    are rewritten from their pods (pods written finished or failed), and those whose
    days take their new columns (jobs written). Run in the write's transaction: ``lock``
    before the rows are written, ``write`` after."""

    rewritten: frozenset[str] = frozenset()
    refreshed: tuple[str, ...] = ()
    # The jobs whose spans by cluster queue are rewritten alone (attempts written).
    respanned: frozenset[str] = frozenset()
    # The jobs whose days are rewritten alone: a pod's summary written (decision 47).
    measured: frozenset[str] = frozenset()

    @classmethod
    def of_pods(cls, rows: Iterable[Mapping[str, Any]]) -> "Step":
        """The step of pod rows: their finished jobs' days rewritten."""
        return cls(rewritten=frozenset(finished_jobs(rows)))

    @classmethod
    def of_attempts(cls, rows: Iterable[Mapping[str, Any]]) -> "Step":
        """The step of Kueue's attempt rows: their jobs' spans by cluster queue rewritten
        (decision 46), their days unchanged."""
        return cls(respanned=frozenset(str(row["job_id"]) for row in rows))

    @classmethod
    def of_summaries(cls, rows: Iterable[Mapping[str, Any]]) -> "Step":
        """The step of ``pod_efficiency`` rows: their jobs' days rewritten with the pods'
        efficiency weights (decision 47), their spans unchanged."""
        return cls(measured=frozenset(str(row["job_id"]) for row in rows))

    @classmethod
    def of_jobs(cls, uids: Iterable[str]) -> "Step":
        """The step of job rows: their days' and spans' copies of the jobs' columns
        refreshed."""
        return cls(refreshed=tuple(uids))

    async def lock(self, execute: dialects.Execute, dialect: dialects.Dialect) -> None:
        """Hold what the step will read and write (``lock``), before the rows are written:
        respanned jobs' rows too, as their spans copy from them (one order with a job's
        write, which takes its row, then its spans)."""
        await lock(execute, dialect, self.rewritten | self.respanned | self.measured)

    async def write(self, execute: dialects.Execute, dialect: dialects.Dialect) -> None:
        """Rewrite and refresh the days, after the rows are written."""
        await rewrite(execute, dialect, self.rewritten)
        await rewrite(execute, dialect, self.measured - self.rewritten, spanned=False)
        if self.refreshed:
            await refresh(execute, dialect, self.refreshed)
            await spans.refresh(execute, dialect, self.refreshed)
        await spans.rewrite_jobs(execute, dialect, self.respanned)


def finished_jobs(rows: Iterable[Mapping[str, Any]]) -> set[str]:
    """The jobs of the pod rows written finished or failed: those whose days or reason
    may change."""
    return {
        str(row["job_id"])
        for row in rows
        if row.get("gmt_finished") is not None or row.get("status") == "Failed"
    }


FINISHED = "FROM replica_info WHERE gmt_finished IS NOT NULL AND gmt_started IS NOT NULL"


async def fill(conn: BaseDBAsyncClient, batch: int = ROWS_PER_INSERT) -> int:
    """Rewrite the days of every job with a finished pod, from the pods ``batch`` at a
    time by id, newest first (so the oldest is done last: ``left``), each batch's jobs in
    a transaction of their own; returns the pods read."""
    dialect = dialects.of(conn)
    before, count = 2**63 - 1, 0
    select = (
        f"SELECT id, job_id {FINISHED} AND id < {dialect.placeholder} "
        f"ORDER BY id DESC LIMIT {int(batch)}"
    )
    while rows := await conn.execute_query_dict(select, [before]):
        before = rows[-1]["id"]
        async with dialect.transaction(conn) as execute:
            await rewrite(execute, dialect, {str(row["job_id"]) for row in rows})
        count += len(rows)
    return count


async def remeasure(conn: BaseDBAsyncClient, batch: int = JOBS_PER_STATEMENT) -> int:
    """Rewrite the days of every job a pod of which has a summary, ``batch`` jobs at a
    time by uid, each batch in a transaction of its own: the days written before they
    held efficiency weights (decision 47). Returns the jobs rewritten."""
    dialect = dialects.of(conn)
    after, count = "", 0
    select = (
        f"SELECT DISTINCT job_id FROM pod_efficiency WHERE job_id > {dialect.placeholder} "
        f"ORDER BY job_id LIMIT {int(batch)}"
    )
    while rows := await conn.execute_query_dict(select, [after]):
        after = str(rows[-1]["job_id"])
        async with dialect.transaction(conn) as execute:
            await rewrite(execute, dialect, {str(row["job_id"]) for row in rows}, spanned=False)
        count += len(rows)
    return count


async def left(conn: BaseDBAsyncClient) -> bool:
    """Whether a fill is to do, or was stopped before it finished: the oldest finished
    pod's job has no day. Two rows read by their indexes, so that every start can ask."""
    dialect = dialects.of(conn)
    oldest = await conn.execute_query_dict(f"SELECT job_id {FINISHED} ORDER BY id LIMIT 1")
    if not oldest:
        return False
    days = await conn.execute_query_dict(
        f"SELECT 1 AS found FROM {USAGE_DAY_TABLE.name} WHERE job_id = {dialect.placeholder} "
        "LIMIT 1",
        [oldest[0]["job_id"]],
    )
    return not days
