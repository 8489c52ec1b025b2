"""The roll-up of usage by cluster queue (``queue_span``, decision 46): per job, its
finished pods' GPUs as spans, each (cluster queue, preempted, start, finish) with the
GPUs its pods held over it summed, each pod in the attempt reserved last at or before
its start (``core.attempts``); and its first attempt's queue and reservation and its
start waits (``queue_job``), both with copies of the job's columns the reads need.
Rewritten from all the job's pods and attempts whenever one of its pods is written
finished (beside its days, ``storage.daily``) or one of its attempts is written, so
that writing the same rows again writes the same rows; the copies whenever the job is."""

import datetime
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient

from jobarchive.core.attempts import PREEMPTED, figures, ordered
from jobarchive.core.times import aware, from_rfc3339
from jobarchive.storage import dialects
from jobarchive.storage.kueue import QueueJob, QueueSpan
from jobarchive.storage.models import QUEUE_JOB_TABLE, QUEUE_SPAN_TABLE, utcnow

# Jobs rewritten per statement, rows per insert: well under both engines' bounds.
JOBS_PER_STATEMENT = 500
ROWS_PER_INSERT = 500
# The pods a span is made of: finished, started, holding GPUs.
SPANNED = "gmt_finished IS NOT NULL AND gmt_started IS NOT NULL AND gpus > 0"
Key = tuple[str, str, bool, datetime.datetime, datetime.datetime]
# A span's copies of its job's columns, as read from its ``job_info`` row (``j``).
JOB_COLUMNS: dict[str, str] = {"job_cluster": "j.cluster", "job_created": "j.gmt_created"}
# Per table kept here, the copies of its job's columns.
COPIES: dict[str, dict[str, str]] = {
    QUEUE_SPAN_TABLE.name: JOB_COLUMNS,
    QUEUE_JOB_TABLE.name: {**JOB_COLUMNS, "job_running": "j.gmt_job_running"},
}


def moment(value: Any) -> datetime.datetime | None:
    """A stored time as the driver gives it (a naive UTC datetime, or SQLite's text), aware."""
    if isinstance(value, str):
        return from_rfc3339(value)
    return aware(value)


def spans_of(
    pods: Iterable[Mapping[str, Any]], attempts: Iterable[Mapping[str, Any]]
) -> dict[Key, tuple[int, str | None]]:
    """(job, queue, preempted, start, finish) -> (GPUs, cluster) of the pods (``SPANNED``)
    in an attempt with a cluster queue: the attempt of their job reserved last at or
    before their start (none before the first, which then holds no span). Pure."""
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for attempt in attempts:
        if attempt["cluster_queue"] is not None:
            reserved = {**attempt, "quota_reserved_at": moment(attempt["quota_reserved_at"])}
            by_job.setdefault(str(attempt["job_id"]), []).append(reserved)
    for held in by_job.values():
        held.sort(key=lambda attempt: attempt["quota_reserved_at"])
    found: dict[Key, tuple[int, str | None]] = {}
    for pod in pods:
        gpus, start, end = pod["gpus"] or 0, moment(pod["gmt_started"]), moment(pod["gmt_finished"])
        if gpus <= 0 or start is None or end is None:
            continue
        owning = None
        for attempt in by_job.get(str(pod["job_id"]), ()):
            if attempt["quota_reserved_at"] > start:
                break
            owning = attempt
        if owning is None:
            continue
        key = (
            str(pod["job_id"]),
            str(owning["cluster_queue"]),
            owning["end_reason"] == PREEMPTED,
            start,
            end,
        )
        held_gpus, _ = found.get(key, (0, None))
        found[key] = (held_gpus + gpus, pod["cluster"])
    return found


async def rewrite(
    execute: dialects.Execute,
    dialect: dialects.Dialect,
    uids: Sequence[str],
    pods: Sequence[Mapping[str, Any]] | None = None,
) -> None:
    """Rewrite the spans and waits of the jobs ``uids`` (at most ``JOBS_PER_STATEMENT``)
    from their attempts and ``pods`` (all the jobs' pods, read here with a locking read
    where the engine has one when not given), in the caller's transaction. A job without
    attempts has neither (its attempts go only with it, and its rows with them): left
    alone, so that jobs Kueue never admitted cost one read."""
    if not uids:
        return
    marks = ", ".join([dialect.placeholder] * len(uids))
    _, attempts = await execute(
        "SELECT job_id, cluster, cluster_queue, end_reason, quota_reserved_at, admitted_at, "
        f"running_at, ended_at FROM job_attempt WHERE job_id IN ({marks})",
        list(uids),
    )
    held = sorted({str(attempt["job_id"]) for attempt in attempts})
    if not held:
        return
    marks = ", ".join([dialect.placeholder] * len(held))
    if pods is None:
        _, pods = await execute(
            dialect.locking(
                "SELECT job_id, cluster, gpus, gmt_started, gmt_finished FROM replica_info "
                f"WHERE job_id IN ({marks}) AND {SPANNED}"
            ),
            held,
        )
    for table in COPIES:
        await execute(f"DELETE FROM {table} WHERE job_id IN ({marks})", held)
    await _insert(execute, dialect, spans_of(pods, attempts))
    await _insert_jobs(execute, dialect, firsts_of(attempts))
    await refresh(execute, dialect, held)


def firsts_of(attempts: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per job of the attempts, its ``queue_job`` row (bar the copies of its job's
    columns): its first attempt's queue and reservation, and its start waits summed as
    ``core.attempts.figures`` sums them. Pure."""
    by_job: dict[str, list[Mapping[str, Any]]] = {}
    for attempt in attempts:
        times = ("quota_reserved_at", "admitted_at", "running_at", "ended_at")
        read = {**attempt, **{name: moment(attempt[name]) for name in times}}
        by_job.setdefault(str(attempt["job_id"]), []).append(read)
    rows = []
    for job, held in sorted(by_job.items()):
        first = ordered(held)[0]
        rows.append(
            {
                "job_id": job,
                "cluster_queue": first["cluster_queue"],
                "first_reserved": first["quota_reserved_at"],
                "start_wait_s": figures(None, held).start_wait_s,
                "cluster": first["cluster"],
            }
        )
    return rows


async def refresh(
    execute: dialects.Execute, dialect: dialects.Dialect, jobs: Iterable[str]
) -> None:
    """Copy the jobs' columns (``COPIES``) into their spans and waits, in the caller's
    transaction: after the jobs' rows are written, and after their spans are. A row of
    a job not recorded gets NULLs, which reads leave out (as reading the pods does)."""
    for table, columns in COPIES.items():
        await copy_job_columns(execute, dialect, table, columns, jobs)


async def copy_job_columns(
    execute: dialects.Execute,
    dialect: dialects.Dialect,
    table: str,
    columns: Mapping[str, str],
    jobs: Iterable[str],
) -> None:
    """Copy the jobs' columns into ``table``'s rows of them (``columns``: each column
    of ``table`` -> its value read from the job's ``job_info`` row, ``j``), in the
    caller's transaction, ``JOBS_PER_STATEMENT`` jobs a statement."""
    uids = sorted(set(jobs))
    sets = ", ".join(
        f"{column} = (SELECT {value} FROM job_info j WHERE j.job_id = {table}.job_id)"
        for column, value in columns.items()
    )
    for start in range(0, len(uids), JOBS_PER_STATEMENT):
        chunk = uids[start : start + JOBS_PER_STATEMENT]
        marks = ", ".join([dialect.placeholder] * len(chunk))
        await execute(f"UPDATE {table} SET {sets} WHERE job_id IN ({marks})", chunk)


async def _insert(
    execute: dialects.Execute, dialect: dialects.Dialect, spans: dict[Key, tuple[int, str | None]]
) -> None:
    """Insert the spans' rows, stamped as every table's (``Stamped.stamp``)."""
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for (job, queue, preempted, began, ended), (gpus, cluster) in spans.items():
        row: dict[str, Any] = {
            "job_id": job,
            "cluster_queue": queue,
            "preempted": preempted,
            "started": began,
            "finished": ended,
            "gpus": gpus,
            "cluster": cluster,
            # Copied from the job's row next (``refresh``).
            **dict.fromkeys(JOB_COLUMNS),
        }
        QueueSpan.stamp(row, now)
        rows.append(row)
    for start in range(0, len(rows), ROWS_PER_INSERT):
        group = rows[start : start + ROWS_PER_INSERT]
        await execute(
            dialect.insert_sql(QUEUE_SPAN_TABLE, len(group)),
            dialect.params(QUEUE_SPAN_TABLE, group),
        )


async def _insert_jobs(
    execute: dialects.Execute, dialect: dialects.Dialect, firsts: Sequence[dict[str, Any]]
) -> None:
    """Insert the jobs' ``queue_job`` rows, stamped as every table's."""
    now = utcnow()
    for row in firsts:
        row.update(dict.fromkeys(COPIES[QUEUE_JOB_TABLE.name]))
        QueueJob.stamp(row, now)
    for start in range(0, len(firsts), ROWS_PER_INSERT):
        group = firsts[start : start + ROWS_PER_INSERT]
        await execute(
            dialect.insert_sql(QUEUE_JOB_TABLE, len(group)),
            dialect.params(QUEUE_JOB_TABLE, group),
        )


async def rewrite_jobs(
    execute: dialects.Execute, dialect: dialects.Dialect, jobs: Iterable[str]
) -> None:
    """Rewrite the spans of ``jobs`` from their pods and attempts, in the caller's
    transaction, ``JOBS_PER_STATEMENT`` at a time."""
    uids = sorted(set(jobs))
    for start in range(0, len(uids), JOBS_PER_STATEMENT):
        await rewrite(execute, dialect, uids[start : start + JOBS_PER_STATEMENT])


# The attempts whose job has a pod of theirs to span, oldest first.
_SPANNING = (
    "FROM job_attempt a WHERE a.cluster_queue IS NOT NULL AND EXISTS (SELECT 1 FROM "
    "replica_info p WHERE p.job_id = a.job_id AND p.gmt_finished IS NOT NULL AND p.gpus > 0 "
    "AND p.gmt_started >= a.quota_reserved_at)"
)


async def fill(conn: BaseDBAsyncClient, batch: int = JOBS_PER_STATEMENT) -> int:
    """Rewrite the spans of every job with an attempt, ``batch`` attempts at a time by id,
    newest first (so the oldest is done last: ``left``), each batch's jobs in a
    transaction of their own; returns the attempts read."""
    dialect = dialects.of(conn)
    before, count = 2**63 - 1, 0
    select = (
        f"SELECT id, job_id FROM job_attempt WHERE id < {dialect.placeholder} "
        f"ORDER BY id DESC LIMIT {int(batch)}"
    )
    while rows := await conn.execute_query_dict(select, [before]):
        before = rows[-1]["id"]
        async with dialect.transaction(conn) as execute:
            await rewrite_jobs(execute, dialect, {str(row["job_id"]) for row in rows})
        count += len(rows)
    return count


async def left(conn: BaseDBAsyncClient) -> bool:
    """Whether a fill is to do, or was stopped before it finished: the oldest attempt's
    job has no waits (``queue_job``), or the oldest attempt with a finished GPU pod of
    its own has no span. Found by the indexes, the first such attempt is the first read
    but on an archive of attempts without pods."""
    dialect = dialects.of(conn)
    found = "SELECT 1 AS found FROM {} WHERE job_id = " + dialect.placeholder + " LIMIT 1"
    first = await conn.execute_query_dict(
        "SELECT job_id AS job FROM job_attempt ORDER BY id LIMIT 1"
    )
    if not first:
        return False
    if not await conn.execute_query_dict(found.format(QUEUE_JOB_TABLE.name), [first[0]["job"]]):
        return True
    oldest = await conn.execute_query_dict(
        f"SELECT a.job_id AS job {_SPANNING} ORDER BY a.id LIMIT 1"
    )
    if not oldest:
        return False
    spans = await conn.execute_query_dict(found.format(QUEUE_SPAN_TABLE.name), [oldest[0]["job"]])
    return not spans
