"""Reading the history: the queries behind the CLI and the HTTP API.

Lists are paged by keyset, newest first: a cursor names the last row of a page by
its sort key and the row id, so a page never repeats or skips a row however many
rows are written meanwhile (an offset would shift under inserts and cost a scan of
everything skipped). Every filter that narrows a list is an indexed column
compared by equality, a range or a prefix; only ``name_contains`` scans, within
what the other filters leave.

Rows come out as plain dicts under the seed's JSON field names, timestamps as
RFC 3339 strings in UTC.
"""

import base64
import binascii
import dataclasses
import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

from tortoise.expressions import Q
from tortoise.queryset import QuerySet

from jobarchive.storage import dialects
from jobarchive.storage.models import Event, Job, Pod

JOB_STATUSES = (
    "Created",
    "Running",
    "Restarting",
    "Suspended",
    "Succeeded",
    "Failed",
    "Stopped",
)
POD_STATUSES = ("Pending", "Running", "Succeeded", "Failed", "Unknown", "Stopped")
MAX_PAGE = 500
DEFAULT_PAGE = 50
STATS_GROUPS = ("status", "kind", "owner", "namespace", "tenant")


class BadQuery(ValueError):
    """A query that cannot be answered as asked; the message says what to change."""


@dataclasses.dataclass(frozen=True)
class Page:
    """One page of a list, and the cursor of the next one (None on the last page)."""

    items: list[dict[str, Any]]
    next_cursor: str | None

    def as_json(self) -> dict[str, Any]:
        """The page as the CLI and the API answer it."""
        return {"items": self.items, "next_cursor": self.next_cursor}


@dataclasses.dataclass(frozen=True)
class JobQuery:
    """Filters of the job list; None means no filter."""

    namespace: str | None = None
    name_prefix: str | None = None
    name_contains: str | None = None
    kind: str | None = None
    status: str | None = None
    region: str | None = None
    tenant: str | None = None
    owner: str | None = None
    created_since: datetime.datetime | None = None
    created_until: datetime.datetime | None = None
    finished_since: datetime.datetime | None = None
    finished_until: datetime.datetime | None = None
    in_cluster: bool | None = None


@dataclasses.dataclass(frozen=True)
class EventQuery:
    """Filters of the Event list; None means no filter."""

    namespace: str | None = None
    object_name: str | None = None
    object_uid: str | None = None
    object_kind: str | None = None
    type: str | None = None
    reason: str | None = None
    since: datetime.datetime | None = None
    until: datetime.datetime | None = None


def parse_time(value: str, name: str) -> datetime.datetime:
    """An RFC 3339 time or a date (midnight UTC); naive times are UTC."""
    try:
        parsed = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadQuery(
            f"{name}: {value!r} is not a date or time (use 2026-11-29 or 2026-11-29T10:00:00Z)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    return parsed.astimezone(datetime.UTC)


def page_size(limit: int | None) -> int:
    """The page size asked for, refused outside 1..MAX_PAGE."""
    if limit is None:
        return DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise BadQuery(f"limit: {limit} is outside 1..{MAX_PAGE}")
    return limit


def check_status(status: str | None, known: Sequence[str] = JOB_STATUSES) -> str | None:
    """The status if it is one the archive records (case-insensitive), else BadQuery."""
    if status is None:
        return None
    for candidate in known:
        if candidate.lower() == status.lower():
            return candidate
    raise BadQuery(f"status: {status!r} is not one of {', '.join(known)}")


def encode_cursor(when: datetime.datetime | None, row_id: int) -> str:
    """An opaque cursor for the row after which the next page starts."""
    stamp = when.isoformat() if when is not None else ""
    raw = json.dumps([stamp, row_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime.datetime | None, int]:
    """The sort key and id a cursor names; BadQuery if it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        stamp, row_id = json.loads(raw)
        when = datetime.datetime.fromisoformat(stamp) if stamp else None
    except (binascii.Error, ValueError, TypeError, UnicodeDecodeError):
        raise BadQuery("cursor: not a cursor this archive gave out") from None
    if not isinstance(row_id, int) or isinstance(row_id, bool):
        raise BadQuery("cursor: not a cursor this archive gave out")
    return when, row_id


def _utc(value: datetime.datetime | None) -> datetime.datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=datetime.UTC) if value.tzinfo is None else value


def _time(value: datetime.datetime | None) -> str | None:
    moment = _utc(value)
    return moment.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if moment else None


def _seconds(start: datetime.datetime | None, end: datetime.datetime | None) -> float | None:
    first, last = _utc(start), _utc(end)
    if first is None or last is None:
        return None
    return max(0.0, (last - first).total_seconds())


def job_json(job: Job, now: datetime.datetime | None = None) -> dict[str, Any]:
    """A job row under the seed's field names, with its duration so far or in total."""
    end = job.gmt_finished or (now if job.is_in_etcd and now is not None else None)
    return {
        "id": job.id,
        "name": job.name,
        "namespace": job.namespace,
        "job_id": job.job_id,
        "version": job.version,
        "status": job.status,
        "kind": job.kind,
        "resources": _json_or_text(job.resources),
        "deploy_region": job.deploy_region,
        "tenant": job.tenant,
        "owner": job.owner,
        "deleted": int(job.deleted),
        "is_in_etcd": int(job.is_in_etcd),
        "gmt_created": _time(job.gmt_created),
        "gmt_modified": _time(job.gmt_modified),
        "gmt_finished": _time(job.gmt_finished),
        "gmt_job_running": _time(job.gmt_job_running),
        "gmt_job_finished": _time(job.gmt_job_finished),
        "duration_seconds": _seconds(job.gmt_created, end),
    }


def pod_json(pod: Pod) -> dict[str, Any]:
    """A pod row under the seed's field names."""
    return {
        "id": pod.id,
        "name": pod.name,
        "namespace": pod.namespace,
        "pod_id": pod.pod_id,
        "version": pod.version,
        "status": pod.status,
        "image": pod.image,
        "job_id": pod.job_id,
        "replica_type": pod.replica_type,
        "resources": _json_or_text(pod.resources),
        "host_ip": pod.host_ip,
        "pod_ip": pod.pod_ip,
        "deploy_region": pod.deploy_region,
        "is_del": int(pod.deleted),
        "is_in_etcd": int(pod.is_in_etcd),
        "remark": pod.remark,
        "gmt_created": _time(pod.gmt_created),
        "gmt_modified": _time(pod.gmt_modified),
        "gmt_started": _time(pod.gmt_started),
        "gmt_finished": _time(pod.gmt_finished),
    }


def event_json(event: Event) -> dict[str, Any]:
    """An Event row under the seed's field names."""
    return {
        "id": event.id,
        "event_id": event.event_id,
        "name": event.name,
        "kind": event.kind,
        "type": event.type,
        "obj_namespace": event.obj_namespace,
        "obj_name": event.obj_name,
        "obj_uid": event.obj_uid,
        "job_id": event.job_id,
        "reason": event.reason,
        "message": event.message,
        "count": event.count,
        "region": event.region,
        "first_timestamp": _time(event.first_timestamp),
        "last_timestamp": _time(event.last_timestamp),
    }


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _after(query: "QuerySet[Any]", field: str, cursor: str | None) -> "QuerySet[Any]":
    """Rows after the cursor in (field, id) descending order; NULLs sort last."""
    if cursor is None:
        return query
    when, row_id = decode_cursor(cursor)
    if when is None:
        return query.filter(**{f"{field}__isnull": True, "id__lt": row_id})
    before: dict[str, Any] = {f"{field}__lt": when}
    tied: dict[str, Any] = {field: when, "id__lt": row_id}
    after = Q(**before) | Q(**tied)
    if query.model._meta.fields_map[field].null:
        unknown: dict[str, Any] = {f"{field}__isnull": True}
        after |= Q(**unknown)
    return query.filter(after)


def _ordered(query: "QuerySet[Any]", field: str, limit: int, cursor: str | None) -> Any:
    """One more row than the page holds: its presence says another page follows."""
    return _after(query, field, cursor).order_by(f"-{field}", "-id").limit(limit + 1)


async def _page(
    query: "QuerySet[Any]", field: str, limit: int, cursor: str | None
) -> tuple[list[Any], str | None]:
    rows: list[Any] = await _ordered(query, field, limit, cursor)
    if len(rows) <= limit:
        return rows, None
    last = rows[limit - 1]
    return rows[:limit], encode_cursor(_utc(getattr(last, field)), last.id)


def job_page_sql(query: JobQuery, limit: int | None = None, cursor: str | None = None) -> str:
    """The SQL of one page of jobs, parameters inlined: for EXPLAIN."""
    sql: str = _ordered(_job_filters(query), "gmt_created", page_size(limit), cursor).sql(
        params_inline=True
    )
    return sql


def event_page_sql(query: EventQuery, limit: int | None = None, cursor: str | None = None) -> str:
    """The SQL of one page of Events, parameters inlined: for EXPLAIN."""
    ordered = _ordered(_event_filters(query), "last_timestamp", page_size(limit), cursor)
    sql: str = ordered.sql(params_inline=True)
    return sql


def _job_filters(query: JobQuery) -> "QuerySet[Job]":
    found = Job.all()
    exact = {
        "namespace": query.namespace,
        "kind": query.kind,
        "status": check_status(query.status),
        "deploy_region": query.region,
        "tenant": query.tenant,
        "owner": query.owner,
        "is_in_etcd": query.in_cluster,
    }
    found = found.filter(**{field: value for field, value in exact.items() if value is not None})
    ranges = {
        "name__startswith": query.name_prefix,
        "name__contains": query.name_contains,
        "gmt_created__gte": query.created_since,
        "gmt_created__lt": query.created_until,
        "gmt_finished__gte": query.finished_since,
        "gmt_finished__lt": query.finished_until,
    }
    return found.filter(**{field: value for field, value in ranges.items() if value is not None})


async def list_jobs(query: JobQuery, limit: int | None = None, cursor: str | None = None) -> Page:
    """Jobs matching the filters, newest first (by creation), one page."""
    rows, after = await _page(_job_filters(query), "gmt_created", page_size(limit), cursor)
    now = datetime.datetime.now(datetime.UTC)
    return Page([job_json(row, now) for row in rows], after)


async def find_jobs(reference: str) -> list[dict[str, Any]]:
    """Jobs named ``namespace/name`` (every incarnation, newest first) or with that uid."""
    now = datetime.datetime.now(datetime.UTC)
    if "/" in reference:
        namespace, _, name = reference.partition("/")
        jobs = await Job.filter(namespace=namespace, name=name).order_by("-gmt_created", "-id")
    else:
        jobs = await Job.filter(job_id=reference)
    return [job_json(job, now) for job in jobs]


def replica_summary(pods: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Per replica type: how many pods are active, succeeded, failed, stopped."""
    summary: dict[str, dict[str, int]] = {}
    for pod in pods:
        counts = summary.setdefault(
            str(pod["replica_type"]), {"active": 0, "succeeded": 0, "failed": 0, "stopped": 0}
        )
        status = pod["status"]
        if status == "Succeeded":
            counts["succeeded"] += 1
        elif status == "Failed":
            counts["failed"] += 1
        elif status == "Stopped" or not pod["is_in_etcd"]:
            counts["stopped"] += 1
        else:
            counts["active"] += 1
    return summary


def _event_time(event: Mapping[str, Any]) -> str:
    return str(event["first_timestamp"] or event["last_timestamp"] or "")


async def job_detail(job_uid: str) -> dict[str, Any] | None:
    """One job with its pods, a per-replica-type summary, and its own Events and its
    pods' merged into one timeline (oldest first)."""
    job = await Job.get_or_none(job_id=job_uid)
    if job is None:
        return None
    pods = [
        pod_json(pod) for pod in await Pod.filter(job_id=job_uid).order_by("replica_type", "name")
    ]
    # Rows written before event_info.job_id existed are found by their subject.
    subjects = [job_uid, *(pod["pod_id"] for pod in pods)]
    found = await Event.filter(Q(job_id=job_uid) | Q(obj_uid__in=subjects))
    events = [event_json(event) for event in found]
    events.sort(key=lambda event: (_event_time(event), event["id"]))
    detail = job_json(job, datetime.datetime.now(datetime.UTC))
    detail.update(pods=pods, replicas=replica_summary(pods), events=events)
    return detail


async def list_events(
    query: EventQuery, limit: int | None = None, cursor: str | None = None
) -> Page:
    """Events matching the filters, most recent occurrence first, one page."""
    rows, after = await _page(_event_filters(query), "last_timestamp", page_size(limit), cursor)
    return Page([event_json(row) for row in rows], after)


def _event_filters(query: EventQuery) -> "QuerySet[Event]":
    exact = {
        "obj_namespace": query.namespace,
        "obj_name": query.object_name,
        "obj_uid": query.object_uid,
        "kind": query.object_kind,
        "type": query.type,
        "reason": query.reason,
        "last_timestamp__gte": query.since,
        "last_timestamp__lt": query.until,
    }
    return Event.filter(**{field: value for field, value in exact.items() if value is not None})


async def stats(
    group_by: str,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
) -> list[dict[str, Any]]:
    """Jobs created in [since, until) counted by a column, with how long the finished
    ones took: count, finished, average and longest duration in seconds."""
    if group_by not in STATS_GROUPS:
        raise BadQuery(f"by: {group_by!r} is not one of {', '.join(STATS_GROUPS)}")
    connection = Job._meta.db
    dialect = dialects.of(connection)
    where, params = [], []
    for clause, value in (("gmt_created >= ", since), ("gmt_created < ", until)):
        if value is not None:
            where.append(clause + dialect.placeholder)
            params.append(value.astimezone(datetime.UTC).replace(tzinfo=None))
    duration = dialect.seconds_between("gmt_created", "gmt_finished")
    sql = (
        f"SELECT {group_by} AS grp, COUNT(*) AS jobs, COUNT(gmt_finished) AS finished, "
        f"AVG({duration}) AS avg_seconds, MAX({duration}) AS max_seconds "
        f"FROM job_info {'WHERE ' + ' AND '.join(where) if where else ''} "
        f"GROUP BY {group_by} ORDER BY jobs DESC, grp"
    )
    _, rows = await connection.execute_query(sql, params)
    return [
        {
            group_by: row["grp"],
            "jobs": int(row["jobs"]),
            "finished": int(row["finished"]),
            "avg_duration_seconds": _number(row["avg_seconds"]),
            "max_duration_seconds": _number(row["max_seconds"]),
        }
        for row in rows
    ]


def _number(value: Any) -> float | None:
    return None if value is None else round(float(value), 1)
