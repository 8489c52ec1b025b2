"""KubeDL's side of ``job_info`` and ``replica_info``, for the compatibility suite:
its Go types, a scanner that reads a row as ``database/sql`` and gorm would, and
the console's conversions of what it read.

Everything here mirrors kubedl-io/kubedl at b93a2b4 (gorm v1.9.12, go-sql-driver
v1.4.1). The Go side reads DATETIMEs in its process's Local zone; KubeDL's images
are distroless with no TZ, so Local is UTC there, and the naive UTC values
jobarchive stores are read as the instants they are.

gorm itself would read a NULL in a non-pointer field as the zero value; the
scanner fails instead, because an empty name or a zero creation time is a row the
console cannot show. A NULL in a pointer field is a nil pointer, and only the
console's conversions decide whether that is fine (``*Owner`` is not).
"""

import dataclasses
import datetime
import math
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pymysql
import pymysql.cursors

GoType = Literal["uint64", "string", "int", "time.Time"]
# Go's time.Time{}: what a '0000-00-00' DATETIME scans into, and what IsZero() tests.
GO_ZERO_TIME = datetime.datetime.min
# model.JobInfoTimeFormat, "2006-01-02 15:04:05".
CONSOLE_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
# The console's name for jobs without an owner (handlers/job.go defaultUser).
ANONYMOUS = "Anonymous"
_INT64 = re.compile(r"[+-]?[0-9]+")
_ZERO_DATETIMES = frozenset({"0000-00-00", "0000-00-00 00:00:00"})


class ScanError(AssertionError):
    """A row does not fit KubeDL's Go type: the console would show it wrong, or
    KubeDL's writer would fail on it."""


class NilPointerDereference(AssertionError):
    """The Go runtime's panic: the console dereferenced a nil pointer (HTTP 500)."""


@dataclasses.dataclass(frozen=True)
class GoField:
    """One field of a DMO struct: its Go name, its column, its type and pointer-ness."""

    name: str
    column: str
    go_type: GoType
    pointer: bool = False
    # updateJob and updatePod run strconv.ParseInt(version, 10, 64) on stored rows.
    parsed_as_int64: bool = False

    def describe(self) -> str:
        """``Name *string``, as the struct declares it."""
        return f"{self.name} {'*' if self.pointer else ''}{self.go_type}"


@dataclasses.dataclass(frozen=True)
class Dmo:
    """A DMO struct of pkg/storage/dmo/types.go and its table."""

    go_name: str
    table: str
    fields: tuple[GoField, ...]

    def field(self, column: str) -> GoField:
        """The field mapped to ``column``."""
        return next(field for field in self.fields if field.column == column)

    def blank(self, column: str, value: Any) -> bool:
        """gorm's isBlank: a nil pointer, or a non-pointer "" / 0 / zero time. A pointer
        to "" or 0 is not blank, so gorm puts it in WHERE and SET clauses."""
        if self.field(column).pointer:
            return value is None
        return value in ("", 0) or value == GO_ZERO_TIME


# pkg/storage/dmo/types.go Job, in struct order (gorm's order in WHERE and INSERT).
DMO_JOB = Dmo(
    "dmo.Job",
    "job_info",
    (
        GoField("ID", "id", "uint64"),
        GoField("Name", "name", "string"),
        GoField("Namespace", "namespace", "string"),
        GoField("JobID", "job_id", "string"),
        GoField("Version", "version", "string", parsed_as_int64=True),
        GoField("Status", "status", "string"),
        GoField("Kind", "kind", "string"),
        GoField("Resources", "resources", "string"),
        GoField("DeployRegion", "deploy_region", "string", pointer=True),
        GoField("Tenant", "tenant", "string", pointer=True),
        GoField("Owner", "owner", "string", pointer=True),
        GoField("Deleted", "deleted", "int", pointer=True),
        GoField("IsInEtcd", "is_in_etcd", "int", pointer=True),
        GoField("Remark", "remark", "string", pointer=True),
        GoField("GmtCreated", "gmt_created", "time.Time"),
        GoField("GmtModified", "gmt_modified", "time.Time"),
        GoField("GmtJobRunning", "gmt_job_running", "time.Time", pointer=True),
        GoField("GmtJobFinished", "gmt_job_finished", "time.Time", pointer=True),
    ),
)

# pkg/storage/dmo/types.go Pod, in struct order.
DMO_POD = Dmo(
    "dmo.Pod",
    "replica_info",
    (
        GoField("ID", "id", "uint64"),
        GoField("Name", "name", "string"),
        GoField("Namespace", "namespace", "string"),
        GoField("PodID", "pod_id", "string"),
        GoField("Version", "version", "string", parsed_as_int64=True),
        GoField("Status", "status", "string"),
        GoField("Image", "image", "string"),
        GoField("JobID", "job_id", "string"),
        GoField("ReplicaType", "replica_type", "string"),
        GoField("Resources", "resources", "string"),
        GoField("HostIP", "host_ip", "string", pointer=True),
        GoField("PodIP", "pod_ip", "string", pointer=True),
        GoField("DeployRegion", "deploy_region", "string", pointer=True),
        GoField("Deleted", "deleted", "int", pointer=True),
        GoField("IsInEtcd", "is_in_etcd", "int", pointer=True),
        GoField("Remark", "remark", "string", pointer=True),
        GoField("GmtCreated", "gmt_created", "time.Time"),
        GoField("GmtModified", "gmt_modified", "time.Time"),
        GoField("GmtStarted", "gmt_started", "time.Time", pointer=True),
        GoField("GmtFinished", "gmt_finished", "time.Time", pointer=True),
    ),
)


def go_parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64); None where Go returns an error."""
    if not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _go_value(field: GoField, value: Any) -> Any:
    """The value a non-NULL column scans into; ValueError says why it does not fit."""
    if field.go_type == "uint64":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            raise ValueError(f"{value!r} is not a uint64")
        return value
    if field.go_type == "string":
        if not isinstance(value, str):
            raise ValueError(f"{value!r} ({type(value).__name__}) is not text")
        if field.parsed_as_int64 and go_parse_int64(value) is None:
            raise ValueError(f"{value!r} fails strconv.ParseInt(v, 10, 64)")
        return value
    if field.go_type == "int":
        # The flags KubeDL writes and compares (deleted, is_in_etcd) are 0 or 1.
        if isinstance(value, bool) or value not in (0, 1):
            raise ValueError(f"{value!r} is not the flag 0 or 1")
        return int(value)
    if isinstance(value, str) and value in _ZERO_DATETIMES:
        return GO_ZERO_TIME
    if not isinstance(value, datetime.datetime) or value.tzinfo is not None:
        raise ValueError(f"{value!r} is not a DATETIME (parseTime=True)")
    return value


def scan(dmo: Dmo, row: Mapping[str, Any]) -> dict[str, Any]:
    """A ``SELECT *`` row as the DMO struct holds it, by column: nil pointers as None,
    zero times as GO_ZERO_TIME. Raises ScanError listing every field that does not fit:
    a missing column, a NULL in a non-pointer field, a value of the wrong type.
    Columns the struct does not declare are ignored, as gorm ignores them."""
    scanned: dict[str, Any] = {}
    problems = []
    for field in dmo.fields:
        where = f"{dmo.table}.{field.column} ({dmo.go_name}.{field.describe()})"
        if field.column not in row:
            problems.append(f"{where}: no such column")
            continue
        value = row[field.column]
        if value is None:
            if field.pointer:
                scanned[field.column] = None
            else:
                problems.append(f"{where}: NULL in a non-pointer field")
            continue
        try:
            scanned[field.column] = _go_value(field, value)
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if problems:
        identity = row.get("job_id") if dmo is DMO_JOB else row.get("pod_id")
        raise ScanError(f"{dmo.table} row {identity!r}: " + "; ".join(problems))
    return scanned


def scan_all(dmo: Dmo, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``scan`` of each row, as gorm's Find into a slice."""
    return [scan(dmo, row) for row in rows]


# The console: console/backend/pkg/model/converter.go and handlers/job.go.


def _is_zero(value: datetime.datetime | None) -> bool:
    """util.Time(ptr).IsZero(): a nil pointer reads as the zero time."""
    return value is None or value == GO_ZERO_TIME


def _local(value: datetime.datetime) -> str:
    """t.Local().Format(JobInfoTimeFormat), Local being UTC in KubeDL's images."""
    return value.strftime(CONSOLE_TIME_FORMAT)


def get_time_differ(start: datetime.datetime, end: datetime.datetime) -> str:
    """model.GetTimeDiffer: ``1d2h3m4s``, days, hours and minutes only when positive."""
    seconds = (end - start).total_seconds()
    parts = []
    for unit, letter in ((86400, "d"), (3600, "h"), (60, "m")):
        count = math.floor(seconds / unit)
        if count > 0:
            # strconv.FormatFloat(count, 'g', -1, 64) of a whole number of units.
            parts.append(f"{float(count):g}{letter}")
            seconds -= unit * count
    parts.append(f"{int(seconds)}s")
    return "".join(parts)


def console_job_info(job: Mapping[str, Any], now: datetime.datetime) -> dict[str, Any]:
    """model.ConvertDMOJobToJobInfo of a scanned job, by JobInfo's JSON names; ``now``
    is the console's time.Now() for the duration of unfinished jobs.

    Raises NilPointerDereference where Go panics: ``jobInfo.JobUserName = *dmoJob.Owner``
    has no nil check.
    """
    info: dict[str, Any] = {
        "id": job["job_id"],
        "name": job["name"],
        "jobType": job["kind"],
        "jobStatus": job["status"],
        "namespace": job["namespace"],
        "deployRegion": job["deploy_region"] or "",
        "createTime": "",
        "endTime": "",
        "durationTime": "",
        "enableTensorboard": False,
    }
    created: datetime.datetime = job["gmt_created"]
    finished: datetime.datetime | None = job["gmt_job_finished"]
    if not _is_zero(created):
        info["createTime"] = _local(created)
    if finished is not None and not _is_zero(finished):
        info["endTime"] = _local(finished)
    if not _is_zero(created):
        end = finished if finished is not None and not _is_zero(finished) else now
        info["durationTime"] = get_time_differ(created, end)
    if job["remark"] is not None:
        remarks = (remark.strip() for remark in job["remark"].split(","))
        info["enableTensorboard"] = "EnableTensorBoard" in remarks
    if job["owner"] is None:
        raise NilPointerDereference(
            f"job_info row {job['job_id']!r}: owner is NULL; ConvertDMOJobToJobInfo "
            "dereferences *dmoJob.Owner without a nil check"
        )
    info["jobUserName"] = job["owner"]
    return info


def console_pod_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    """model.ConvertDMOPodToJobSpec of a scanned pod, by Spec's JSON names (every
    pointer is nil-checked there)."""
    spec: dict[str, Any] = {
        "name": pod["name"],
        "podId": pod["pod_id"],
        "replicaType": pod["replica_type"],
        "jobStatus": pod["status"],
        "containerIp": pod["pod_ip"] or "",
        "hostIp": pod["host_ip"] or "",
        "remark": pod["remark"] or "",
        "createTime": "",
        "startTime": "",
        "endTime": "",
        "durationTime": "",
    }
    created: datetime.datetime = pod["gmt_created"]
    started: datetime.datetime | None = pod["gmt_started"]
    finished: datetime.datetime | None = pod["gmt_finished"]
    if not _is_zero(created):
        spec["createTime"] = _local(created)
    if started is not None and not _is_zero(started):
        spec["startTime"] = _local(started)
    if finished is not None and not _is_zero(finished):
        spec["endTime"] = _local(finished)
        if not _is_zero(created):
            spec["durationTime"] = get_time_differ(created, finished)
    return spec


def replica_statuses(pods: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """handlers.GetDetailedJobFromBackend's count of a job's pods per replica type:
    Succeeded, Failed and Stopped by name, every other status as active."""
    buckets = {"Succeeded": "succeeded", "Failed": "failed", "Stopped": "stopped"}
    counts: dict[str, dict[str, int]] = {}
    for pod in pods:
        count = counts.setdefault(
            pod["replica_type"], {"active": 0, "succeeded": 0, "failed": 0, "stopped": 0}
        )
        count[buckets.get(pod["status"], "active")] += 1
    return counts


def jobs_per_user(infos: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """handlers.GetJobStatisticsFromBackend's job count per JobUserName, "" as Anonymous."""
    counts: dict[str, int] = {}
    for info in infos:
        user = info["jobUserName"] or ANONYMOUS
        counts[user] = counts.get(user, 0) + 1
    return counts


# The Go driver's side of the wire.


def connect(db_url: str) -> Any:
    """A connection as KubeDL's DSN opens one (``charset=utf8``, which MariaDB reads as
    utf8mb3): autocommit, as database/sql runs statements outside gorm's transactions.
    Rows come back as dicts by column."""
    parts = urllib.parse.urlsplit(db_url)
    return pymysql.connect(
        host=parts.hostname or "127.0.0.1",
        port=parts.port or 3306,
        user=parts.username or "root",
        password=parts.password or "",
        database=parts.path.lstrip("/"),
        charset="utf8mb3",
        autocommit=True,
        cursorclass=pymysql.cursors.DictCursor,
    )


def go_param(value: Any) -> Any:
    """A parameter as go-sql-driver v1.4.1 sends it: a time as its wall clock in Local
    (UTC), naive; the zero time as '0000-00-00'."""
    if isinstance(value, datetime.datetime):
        if value == GO_ZERO_TIME:
            return "0000-00-00"
        if value.tzinfo is not None:
            return value.astimezone(datetime.UTC).replace(tzinfo=None)
    return value


def _pymysql_sql(sql: str) -> str:
    # gorm writes '?' placeholders; PyMySQL formats '%s' ones, so a literal '%' in
    # the statement would be read as a placeholder.
    if "%" in sql:
        raise ValueError(f"a statement with a literal % cannot be replayed: {sql}")
    return sql.replace("?", "%s")


def select(conn: Any, sql: str, *params: Any) -> list[dict[str, Any]]:
    """Run one of KubeDL's SELECTs, written with gorm's '?' placeholders."""
    with conn.cursor() as cursor:
        cursor.execute(_pymysql_sql(sql), [go_param(p) for p in params])
        return list(cursor.fetchall())


def execute(conn: Any, sql: str, *params: Any) -> int:
    """Run one of KubeDL's writes in its own transaction, as gorm's Create and Updates
    do (BEGIN, the statement, COMMIT); returns the rows affected."""
    conn.begin()
    try:
        with conn.cursor() as cursor:
            cursor.execute(_pymysql_sql(sql), [go_param(p) for p in params])
            affected = int(cursor.rowcount)
    except BaseException:
        conn.rollback()
        raise
    conn.commit()
    return affected
