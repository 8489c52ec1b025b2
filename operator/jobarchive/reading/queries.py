"""Reading the history: the queries behind the CLI and the HTTP API.

Lists are paged by keyset, newest first: a cursor names the last row of a page by
its sort key and the row id, so a page never repeats or skips a row however many
rows are written meanwhile (an offset would shift under inserts and cost a scan of
everything skipped). Every filter that narrows a list is an indexed column
compared by equality, a range or a prefix; only ``name_contains`` scans, within
what the other filters leave.

Rows come out as plain dicts under the seed's JSON field names, timestamps as
RFC 3339 strings in UTC.

Every query runs on the read side's own connection (``storage.database.reader``,
which ``_read`` and ``_reader`` name once for all of them): never on the writer's, so
that no read, however slow or many, takes a connection the writer needs.
"""

import base64
import binascii
import contextlib
import dataclasses
import datetime
import json
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pypika_tortoise.context import SqlContext
from pypika_tortoise.enums import Dialects
from pypika_tortoise.terms import Function as SqlFunction
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.expressions import Function, Q
from tortoise.functions import Count
from tortoise.models import Model
from tortoise.queryset import QuerySet

from jobarchive import config
from jobarchive.cutting import clip
from jobarchive.kinds import BATCH_JOB, BUILTIN_KINDS, INTERMEDIATE_KINDS
from jobarchive.rows import (
    IMAGE_LENGTH,
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    REMARK_LENGTH,
    RESOURCES_LENGTH,
    SHORT_TEXT_LENGTH,
    UID_LENGTH,
)
from jobarchive.storage import database, dialects, introspection
from jobarchive.storage.models import (
    CONTAINER_NAME_LENGTH,
    LOG_TAIL_LENGTH,
    NOTE_LENGTH,
    Event,
    Job,
    LogTail,
    Pod,
    Stamped,
)
from jobarchive.times import aware, rfc3339

M = TypeVar("M", bound=Model)
S = TypeVar("S", bound=Stamped)

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
EVENT_TYPES = ("Normal", "Warning")
MAX_PAGE = 500
DEFAULT_PAGE = 50
# No page is longer than this as JSON, whatever its rows hold: past it the page ends
# early and its cursor goes on from there (decision 15). A job's detail holds two.
PAGE_BYTES = 2 * 2**20
STATS_GROUPS = ("status", "kind", "owner", "namespace", "tenant")


def _reader() -> BaseDBAsyncClient:
    """The connection every read runs on."""
    return database.reader()


def _read(model: type[M]) -> "QuerySet[M]":
    """Every row of ``model``, read through the read side's connection."""
    return model.all(using_db=_reader())


class _SqlHead(SqlFunction):
    def __init__(self, term: Any, length: int, alias: str | None = None) -> None:
        super().__init__("SUBSTR", term, 1, length, alias=alias)

    def get_function_sql(self, ctx: SqlContext) -> str:
        if ctx.dialect == Dialects.SQLITE:
            return str(self.get_arg_sql(self.args[0], ctx))
        return str(super().get_function_sql(ctx))


class Head(Function):
    """The first characters of a text column, cut by MySQL's SUBSTR. SQLite's stops at
    a NUL, which a tenant's text may hold, so there the column is read whole (decision
    24)."""

    database_func = _SqlHead


def _bounded(model: type[S]) -> "QuerySet[S]":
    """Whole rows of ``model`` whose free text and JSON the database cuts to one past
    their bounds, so that a row stored before they were kept costs a read no more than
    a new one; the shapes then cut them with a mark (``cutting.clip``)."""
    bounds = {**model.BOUNDS, **model.JSON_BOUNDS}
    others = [column for column in model._meta.db_fields if column not in bounds]
    heads = {column: Head(column, length + 1) for column, length in bounds.items()}
    return _read(model).only(*others).annotate(**heads)


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


# What a DATETIME column can hold; a bound beyond it means "no bound" and is clamped.
EARLIEST = datetime.datetime(1000, 1, 1, tzinfo=datetime.UTC)
LATEST = datetime.datetime(9999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC)
MAX_TIME_TEXT = 64


def parse_time(value: str, name: str) -> datetime.datetime:
    """An RFC 3339 time or a date (midnight UTC); naive times are UTC. Any year and any
    offset are taken: a time outside what the database stores is clamped to its range."""
    refused = BadQuery(
        f"{name}: {quoted(value)} is not a date or time (use 2026-11-29 or 2026-11-29T10:00:00Z)"
    )
    if len(value) > MAX_TIME_TEXT:
        raise refused
    try:
        parsed = datetime.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise refused from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.UTC)
    try:
        moment = parsed.astimezone(datetime.UTC)
    except OverflowError:
        # Year 1 with a positive offset, or 9999 with a negative one.
        return EARLIEST if parsed.year < 2000 else LATEST
    return min(max(moment, EARLIEST), LATEST)


def page_size(limit: int | None) -> int:
    """The page size asked for, refused outside 1..MAX_PAGE."""
    if limit is None:
        return DEFAULT_PAGE
    if not 1 <= limit <= MAX_PAGE:
        raise BadQuery(f"limit: {limit} is outside 1..{MAX_PAGE}")
    return limit


def check_status(status: str | None, known: Sequence[str] = JOB_STATUSES) -> str | None:
    """The status if it is one the archive records (case-insensitive), else BadQuery."""
    return one_of("status", status, known)


def one_of(name: str, value: str | None, known: Sequence[str]) -> str | None:
    """The value as the archive spells it if it is one of ``known`` (case-insensitive),
    else BadQuery listing them: an unknown value is a mistake, not an empty answer."""
    if value is None:
        return None
    for candidate in known:
        if candidate.lower() == value.lower():
            return candidate
    raise BadQuery(f"{name}: {quoted(value)} is not one of {', '.join(known)}")


def quoted(value: str, longest: int = 80) -> str:
    """User text for a message or a log line: escaped (no line breaks, no control
    characters) and cut, so it can neither forge a line nor flood one."""
    shown = value if len(value) <= longest else value[:longest] + "…"
    return repr(shown)


def fits(name: str, value: str | None, width: int) -> str | None:
    """The value if it can match a column ``width`` characters wide, else BadQuery."""
    if value is not None and len(value) > width:
        raise BadQuery(f"{name}: {len(value)} characters, longer than any stored value ({width})")
    return value


# Cursors name what they page, so one of a list is refused by another.
CURSOR_KINDS = ("jobs", "events", "pods", "job-events", "named-jobs")
MAX_CURSOR = 200


def encode_cursor(kind: str, when: datetime.datetime | None, row_id: int) -> str:
    """An opaque cursor of a ``kind`` of list for the row after which the next page starts."""
    stamp = when.isoformat() if when is not None else ""
    raw = json.dumps([kind, stamp, row_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, kind: str) -> tuple[datetime.datetime | None, int]:
    """The sort key and id a cursor of this kind of list names; BadQuery otherwise.

    Checked field by field before use: a cursor is user input (a crafted one may be
    huge, nested or of other types).
    """
    refused = BadQuery(f"cursor: not a cursor of this list ({kind}) that this archive gave out")
    if len(cursor) > MAX_CURSOR:
        raise refused
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError, RecursionError):
        raise refused from None
    if not (isinstance(decoded, list) and len(decoded) == 3 and decoded[0] == kind):
        raise refused
    _, stamp, row_id = decoded
    if not isinstance(stamp, str) or type(row_id) is not int:
        raise refused
    try:
        when = datetime.datetime.fromisoformat(stamp) if stamp else None
    except ValueError:
        raise refused from None
    return aware(when), row_id


def _seconds(start: datetime.datetime | None, end: datetime.datetime | None) -> float | None:
    first, last = aware(start), aware(end)
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
        "resources": _json_or_text(clip(job.resources, RESOURCES_LENGTH)),
        "deploy_region": job.deploy_region,
        "tenant": job.tenant,
        "owner": job.owner,
        "deleted": int(job.deleted),
        "is_in_etcd": int(job.is_in_etcd),
        "gmt_created": rfc3339(job.gmt_created),
        "gmt_modified": rfc3339(job.gmt_modified),
        "gmt_finished": rfc3339(job.gmt_finished),
        "gmt_job_running": rfc3339(job.gmt_job_running),
        "gmt_job_finished": rfc3339(job.gmt_job_finished),
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
        "image": clip(pod.image, IMAGE_LENGTH),
        "job_id": pod.job_id,
        "replica_type": pod.replica_type,
        "resources": _json_or_text(clip(pod.resources, RESOURCES_LENGTH)),
        "host_ip": pod.host_ip,
        "pod_ip": pod.pod_ip,
        "deploy_region": pod.deploy_region,
        "is_del": int(pod.deleted),
        "is_in_etcd": int(pod.is_in_etcd),
        "remark": clip(pod.remark, REMARK_LENGTH),
        "gmt_created": rfc3339(pod.gmt_created),
        "gmt_modified": rfc3339(pod.gmt_modified),
        "gmt_started": rfc3339(pod.gmt_started),
        "gmt_finished": rfc3339(pod.gmt_finished),
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
        "message": clip(event.message, MESSAGE_LENGTH),
        "count": event.count,
        "region": event.region,
        "first_timestamp": rfc3339(event.first_timestamp),
        "last_timestamp": rfc3339(event.last_timestamp),
    }


def _json_or_text(value: str) -> Any:
    try:
        return json.loads(value)
    except ValueError:
        return value


def _after(
    query: "QuerySet[Any]", field: str, cursor: str | None, kind: str, ascending: bool = False
) -> "QuerySet[Any]":
    """Rows after the cursor in (field, id) order, descending unless ``ascending``;
    NULLs sort last."""
    if cursor is None:
        return query
    when, row_id = decode_cursor(cursor, kind)
    beyond, id_beyond = ("gt", "id__gt") if ascending else ("lt", "id__lt")
    if when is None:
        return query.filter(**{f"{field}__isnull": True, id_beyond: row_id})
    before: dict[str, Any] = {f"{field}__{beyond}": when}
    tied: dict[str, Any] = {field: when, id_beyond: row_id}
    after = Q(**before) | Q(**tied)
    if query.model._meta.fields_map[field].null:
        unknown: dict[str, Any] = {f"{field}__isnull": True}
        after |= Q(**unknown)
    return query.filter(after)


def _ordered(
    query: "QuerySet[Any]",
    field: str,
    limit: int,
    cursor: str | None,
    kind: str,
    ascending: bool = False,
) -> Any:
    """One more row than the page holds: its presence says another page follows."""
    order = (field, "id") if ascending else (f"-{field}", "-id")
    return _after(query, field, cursor, kind, ascending).order_by(*order).limit(limit + 1)


@dataclasses.dataclass(frozen=True)
class Order:
    """How a list is paged: by which field, which way, and the name its cursors carry."""

    field: str
    kind: str
    ascending: bool = False


async def _page(
    query: "QuerySet[Any]",
    order: Order,
    limit: int,
    cursor: str | None,
    shape: Callable[[Any], dict[str, Any]],
) -> Page:
    """One page of ``query``'s rows as ``shape`` makes them: at most ``limit`` rows and
    ``PAGE_BYTES`` of JSON (one row at least); the cursor goes on after the last."""
    rows: list[Any] = await _ordered(query, order.field, limit, cursor, order.kind, order.ascending)
    items: list[dict[str, Any]] = []
    size = 0
    for row in rows[:limit]:
        item = shape(row)
        size += len(json.dumps(item)) + 2
        if items and size > PAGE_BYTES:
            break
        items.append(item)
    if len(rows) <= len(items):
        return Page(items, None)
    last = rows[len(items) - 1]
    return Page(items, encode_cursor(order.kind, aware(getattr(last, order.field)), last.id))


async def job_page_sql(query: JobQuery, limit: int | None = None, cursor: str | None = None) -> str:
    """The SQL of one page of jobs, parameters inlined: for EXPLAIN."""
    found = await _hinted(_job_filters(query), query)
    ordered = _ordered(found, "gmt_created", page_size(limit), cursor, "jobs")
    sql: str = ordered.sql(params_inline=True)
    return sql


async def event_page_sql(
    query: EventQuery, limit: int | None = None, cursor: str | None = None
) -> str:
    """The SQL of one page of Events, parameters inlined: for EXPLAIN."""
    ordered = _ordered(_event_filters(query), "last_timestamp", page_size(limit), cursor, "events")
    sql: str = ordered.sql(params_inline=True)
    return sql


def _job_filters(query: JobQuery) -> "QuerySet[Job]":
    _refuse_scans(query)
    found = _bounded(Job)
    exact = {
        "namespace": fits("namespace", query.namespace, NAMESPACE_LENGTH),
        "kind": one_of("kind", query.kind, known_job_kinds()),
        "status": check_status(query.status),
        "deploy_region": fits("region", query.region, SHORT_TEXT_LENGTH),
        "tenant": fits("tenant", query.tenant, SHORT_TEXT_LENGTH),
        "owner": fits("owner", query.owner, SHORT_TEXT_LENGTH),
        "is_in_etcd": query.in_cluster,
    }
    found = found.filter(**{field: value for field, value in exact.items() if value is not None})
    prefix = fits("name", query.name_prefix, NAME_LENGTH)
    if prefix is not None:
        found = _prefix_range(found, prefix)
    ranges = {
        "name__startswith": prefix,
        "name__contains": fits("name_contains", query.name_contains, NAME_LENGTH),
        "gmt_created__gte": query.created_since,
        "gmt_created__lt": query.created_until,
        "gmt_finished__gte": query.finished_since,
        "gmt_finished__lt": query.finished_until,
    }
    return found.filter(**{field: value for field, value in ranges.items() if value is not None})


def _prefix_range(found: "QuerySet[Job]", prefix: str) -> "QuerySet[Job]":
    """The names that can start with ``prefix``, as a range an index can read: Tortoise
    spells a prefix as ``CAST(name AS CHAR) LIKE``, which no index serves. The LIKE
    stays, for its exact meaning; the range only narrows what it reads."""
    bounds = dialects.of(_reader()).prefix_range(prefix)
    if bounds is None:
        return found
    low, high = bounds
    return found.filter(name__gte=low, name__lt=high)


async def _hinted(found: "QuerySet[Job]", query: JobQuery) -> "QuerySet[Job]":
    """Name the index for a range filter the optimizer misjudges.

    Asked for a page ordered by ``gmt_created``, MariaDB reads the time index from the
    newest job, expecting to meet matches early; for a name prefix or a finish window
    with no equality filter beside it, that reads every job. Reading the range's own
    index and sorting what it holds reads only the matches.
    """
    equalities = (query.namespace, query.kind, query.status, query.owner, query.tenant)
    if any(value is not None for value in equalities):
        return found
    if query.name_prefix is not None:
        columns: tuple[str, ...] = ("name", "gmt_created")
    elif query.finished_since is not None or query.finished_until is not None:
        columns = ("gmt_finished",)
    else:
        return found
    conn = _reader()
    name = (await introspection.of(conn).index_names(conn, Job._meta.db_table)).get(columns)
    return found.force_index(name) if name else found


def _refuse_scans(query: JobQuery) -> None:
    """Filters no index serves are read within a namespace or a creation window only:
    alone they would read every job ever recorded."""
    bounded = query.namespace is not None or query.created_since is not None
    for name, value in (("name_contains", query.name_contains), ("region", query.region)):
        if value is not None and not bounded:
            raise BadQuery(
                f"{name}: no index serves it; name a namespace or a created_since with it"
            )


def known_job_kinds() -> tuple[str, ...]:
    """The kinds a job can be recorded as: the built-in ones, plain batch Jobs, and
    those the environment adds (JOBARCHIVE_EXTRA_KINDS), as the operator reads it."""
    names = {kind.kind for kind in (*BUILTIN_KINDS, BATCH_JOB)}
    with contextlib.suppress(config.ConfigError):
        names |= {kind.kind for kind in config.load().kinds}
    return tuple(sorted(names))


async def list_jobs(query: JobQuery, limit: int | None = None, cursor: str | None = None) -> Page:
    """Jobs matching the filters, newest first (by creation), one page."""
    now = datetime.datetime.now(datetime.UTC)
    found = await _hinted(_job_filters(query), query)
    order = Order("gmt_created", "jobs")
    return await _page(found, order, page_size(limit), cursor, lambda row: job_json(row, now))


async def job_namespace(job_uid: str) -> str | None:
    """The namespace of the job with that uid (one indexed row, one column); None if no
    job has it: what is checked before anything else of a job is read."""
    found = (
        await _read(Job).filter(job_id=fits("uid", job_uid, UID_LENGTH)).first().values("namespace")
    )
    return None if found is None else str(found["namespace"])


async def find_jobs(reference: str) -> list[dict[str, Any]]:
    """Jobs named ``namespace/name`` (the newest page of its incarnations) or with that uid."""
    if "/" in reference:
        namespace, _, name = reference.partition("/")
        return (await named_jobs(namespace, name)).items
    found = await _bounded(Job).filter(job_id=fits("uid", reference, UID_LENGTH))
    now = datetime.datetime.now(datetime.UTC)
    return [job_json(job, now) for job in found]


async def named_jobs(
    namespace: str, name: str, limit: int | None = None, cursor: str | None = None
) -> Page:
    """Every job recorded under one name (each recreation has its own uid), newest first."""
    query = _bounded(Job).filter(
        namespace=fits("namespace", namespace, NAMESPACE_LENGTH),
        name=fits("name", name, NAME_LENGTH),
    )
    now = datetime.datetime.now(datetime.UTC)
    order = Order("gmt_created", "named-jobs")
    return await _page(query, order, page_size(limit), cursor, lambda row: job_json(row, now))


async def replica_summary(job_uid: str) -> dict[str, dict[str, int]]:
    """Per replica type: how many pods are active, succeeded, failed, stopped; counted
    by the database, so a job of any size costs one small answer."""
    rows = (
        await _read(Pod)
        .filter(job_id=job_uid)
        .group_by("replica_type", "status", "is_in_etcd")
        .annotate(pods=Count("id"))
        .values("replica_type", "status", "is_in_etcd", "pods")
    )
    summary: dict[str, dict[str, int]] = {}
    for row in rows:
        counts = summary.setdefault(
            str(row["replica_type"]), {"active": 0, "succeeded": 0, "failed": 0, "stopped": 0}
        )
        status = row["status"]
        if status == "Succeeded":
            bucket = "succeeded"
        elif status == "Failed":
            bucket = "failed"
        elif status == "Stopped" or not row["is_in_etcd"]:
            bucket = "stopped"
        else:
            bucket = "active"
        counts[bucket] += int(row["pods"])
    return summary


async def job_pods(job_uid: str, limit: int | None = None, cursor: str | None = None) -> Page:
    """A job's pods in the order they were recorded, one page."""
    query = _bounded(Pod).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    order = Order("gmt_created", "pods", ascending=True)
    return await _page(query, order, page_size(limit), cursor, pod_json)


async def job_events(job_uid: str, limit: int | None = None, cursor: str | None = None) -> Page:
    """The Events about a job, its pods and its intermediate objects, oldest last
    occurrence first, one page. (Events recorded before ``event_info.job_id`` existed
    are reached after ``jobarchive migrate``, which fills it.)"""
    query = _bounded(Event).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    order = Order("last_timestamp", "job-events", ascending=True)
    return await _page(query, order, page_size(limit), cursor, event_json)


async def job_detail(
    job_uid: str,
    limit: int | None = None,
    pods_cursor: str | None = None,
    events_cursor: str | None = None,
) -> dict[str, Any] | None:
    """One job with a page of its pods and of its Events (the first, or those after
    the cursors; each with the cursor of the next), and a per-replica-type summary of
    all its pods.

    Bounded whatever the job's size: a 20,000-pod job answers ``limit`` pods and
    Events; the rest are read page by page (``job_pods``, ``job_events``).
    """
    job = await _bounded(Job).get_or_none(job_id=fits("uid", job_uid, UID_LENGTH))
    if job is None:
        return None
    pods = await job_pods(job_uid, limit, pods_cursor)
    events = await job_events(job_uid, limit, events_cursor)
    detail = job_json(job, datetime.datetime.now(datetime.UTC))
    detail.update(
        pods=pods.items,
        pods_next_cursor=pods.next_cursor,
        replicas=await replica_summary(job_uid),
        events=events.items,
        events_next_cursor=events.next_cursor,
    )
    return detail


async def list_events(
    query: EventQuery, limit: int | None = None, cursor: str | None = None
) -> Page:
    """Events matching the filters, most recent occurrence first, one page."""
    order = Order("last_timestamp", "events")
    return await _page(_event_filters(query), order, page_size(limit), cursor, event_json)


def _event_filters(query: EventQuery) -> "QuerySet[Event]":
    # What an index reads first; the other filters then only sift what it found.
    leading = (query.namespace, query.since, query.object_uid, query.reason)
    for name, value in (
        ("object", query.object_name),
        ("kind", query.object_kind),
        ("type", query.type),
    ):
        if value is not None and all(first is None for first in leading):
            raise BadQuery(f"{name}: no index serves it; name a namespace or a since with it")
    exact = {
        "obj_namespace": fits("namespace", query.namespace, NAMESPACE_LENGTH),
        "obj_name": fits("object", query.object_name, NAME_LENGTH),
        "obj_uid": fits("uid", query.object_uid, UID_LENGTH),
        "kind": one_of("kind", query.object_kind, known_object_kinds()),
        "type": one_of("type", query.type, EVENT_TYPES),
        "reason": fits("reason", query.reason, SHORT_TEXT_LENGTH),
        "last_timestamp__gte": query.since,
        "last_timestamp__lt": query.until,
    }
    found = _bounded(Event)
    return found.filter(**{field: value for field, value in exact.items() if value is not None})


def known_object_kinds() -> tuple[str, ...]:
    """The kinds an Event recorded here can be about: jobs, pods, intermediate objects."""
    return tuple(sorted({*known_job_kinds(), "Pod", *(kind.kind for kind in INTERMEDIATE_KINDS)}))


async def stats(
    group_by: str,
    since: datetime.datetime | None = None,
    until: datetime.datetime | None = None,
) -> list[dict[str, Any]]:
    """Jobs created in [since, until) counted by a column, with how long the finished
    ones took: count, finished, average and longest duration in seconds."""
    if group_by not in STATS_GROUPS:
        raise BadQuery(f"by: {group_by!r} is not one of {', '.join(STATS_GROUPS)}")
    connection = _reader()
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


# The most pods and Events of one job a timeline reads: a 2,000-pod job is drawn whole,
# a larger one from its first pods by creation (the page says so).
TIMELINE_PODS = 5000
TIMELINE_EVENTS = 500
TIMELINE_MESSAGE = 200
# A pod's failure as a timeline groups and shows it.
TIMELINE_REMARK = 200
TIMELINE_POD_FIELDS = (
    "name",
    "replica_type",
    "status",
    "is_in_etcd",
    "remark",
    "gmt_created",
    "gmt_started",
    "gmt_finished",
)
TIMELINE_EVENT_FIELDS = (
    "type",
    "reason",
    "message",
    "kind",
    "obj_name",
    "count",
    "first_timestamp",
    "last_timestamp",
)


@dataclasses.dataclass(frozen=True)
class Timeline:
    """What a job's timeline draws: its pods and Events, only the fields the bars and
    marks need, times as aware UTC datetimes; ``*_cut`` when more were left unread."""

    remark: str | None
    pods: list[dict[str, Any]]
    pods_cut: bool
    events: list[dict[str, Any]]
    events_cut: bool


async def job_timeline(job_uid: str) -> Timeline | None:
    """A job's pods (the first ``TIMELINE_PODS`` by creation) and Events (the first
    ``TIMELINE_EVENTS`` Warnings and as many others, by last occurrence), compact;
    None for an unknown job. Each list is one range of its (job_id, time) index."""
    fits("uid", job_uid, UID_LENGTH)
    uid = job_uid
    job = (
        await _read(Job)
        .filter(job_id=uid)
        .annotate(head=Head("remark", REMARK_LENGTH + 1))
        .first()
        .values("head")
    )
    if job is None:
        return None
    connection = _reader()
    dialect = dialects.of(connection)
    placeholder, name = dialect.placeholder, dialect.name
    # Raw rows: Tortoise's conversion of 2,000 rows costs 0.2 s, a tenth of that here.
    _, found = await connection.execute_query(_timeline_pods_sql(placeholder, name), [uid])
    pods = [dict(row) for row in found]
    events: list[dict[str, Any]] = []
    events_cut = False
    for warning in (True, False):
        sql = _timeline_events_sql(placeholder, name, warning)
        _, rows = await connection.execute_query(sql, [uid])
        events_cut = events_cut or len(rows) > TIMELINE_EVENTS
        events.extend(dict(row) for row in rows[:TIMELINE_EVENTS])
    for pod in pods:
        for field in ("gmt_created", "gmt_started", "gmt_finished"):
            pod[field] = _moment(pod[field])
        pod["remark"] = clip(pod["remark"], TIMELINE_REMARK)
    for event in events:
        for field in ("first_timestamp", "last_timestamp"):
            event[field] = _moment(event[field])
        event["message"] = clip(event["message"] or "", TIMELINE_MESSAGE)
    events.sort(key=lambda event: event["last_timestamp"] or EARLIEST)
    return Timeline(
        clip(job["head"], REMARK_LENGTH),
        pods[:TIMELINE_PODS],
        len(pods) > TIMELINE_PODS,
        events,
        events_cut,
    )


# The text a timeline shows, cut by the database to one past what it shows.
_TIMELINE_HEADS = {"remark": TIMELINE_REMARK + 1, "message": TIMELINE_MESSAGE + 1}


def _selected(fields: Sequence[str], dialect: str) -> str:
    return ", ".join(
        f"SUBSTR({field}, 1, {_TIMELINE_HEADS[field]}) AS {field}"
        if field in _TIMELINE_HEADS and dialect == "mysql"
        else field
        for field in fields
    )


def _timeline_pods_sql(placeholder: str, dialect: str) -> str:
    return (
        f"SELECT {_selected(TIMELINE_POD_FIELDS, dialect)} FROM replica_info "
        f"WHERE job_id = {placeholder} ORDER BY gmt_created, id LIMIT {TIMELINE_PODS + 1}"
    )


def _timeline_events_sql(placeholder: str, dialect: str, warnings: bool) -> str:
    return (
        f"SELECT {_selected(TIMELINE_EVENT_FIELDS, dialect)} FROM event_info "
        f"WHERE job_id = {placeholder} AND type {'=' if warnings else '<>'} 'Warning' "
        f"ORDER BY last_timestamp, id LIMIT {TIMELINE_EVENTS + 1}"
    )


def timeline_pods_sql(job_uid: str) -> str:
    """The SQL of a timeline's pods, the uid inlined: for EXPLAIN."""
    fits("uid", job_uid, UID_LENGTH)
    return _timeline_pods_sql("'" + job_uid.replace("'", "''") + "'", "mysql")


def _moment(value: Any) -> datetime.datetime | None:
    """A time as a raw row holds it (MySQL: a naive UTC datetime; SQLite: text), aware."""
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return aware(value) if isinstance(value, datetime.datetime) else None


def _window_sql(
    dialect: dialects.Dialect,
    column: str,
    since: datetime.datetime | None,
    until: datetime.datetime | None,
) -> tuple[list[str], list[Any]]:
    where, params = [], []
    for clause, value in ((f"{column} >= ", since), (f"{column} < ", until)):
        if value is not None:
            where.append(clause + dialect.placeholder)
            params.append(value.astimezone(datetime.UTC).replace(tzinfo=None))
    return where, params


async def jobs_per_day(since: datetime.datetime, until: datetime.datetime) -> list[dict[str, Any]]:
    """Jobs created in [since, until) counted per UTC day and status (``day`` as
    YYYY-MM-DD), read through the creation-time index."""
    connection = _reader()
    where, params = _window_sql(dialects.of(connection), "gmt_created", since, until)
    sql = (
        "SELECT DATE(gmt_created) AS day, status, COUNT(*) AS jobs FROM job_info "
        f"WHERE {' AND '.join(where)} GROUP BY DATE(gmt_created), status"
    )
    _, rows = await connection.execute_query(sql, params)
    return [
        {"day": str(row["day"])[:10], "status": row["status"], "jobs": int(row["jobs"])}
        for row in rows
    ]


# How many reasons a chart of failures shows; the rest are few by construction.
FAILURE_REASONS = 20


async def failure_reasons(
    since: datetime.datetime, until: datetime.datetime
) -> list[dict[str, Any]]:
    """The failed pods of the failed jobs created in [since, until), counted by why they
    failed: the head of their remark (``OOMKilled (exit code 137)``), most first.

    Read through the jobs' (status, gmt_created) index, then each job's pods by theirs.
    """
    connection = _reader()
    where, params = _window_sql(dialects.of(connection), "j.gmt_created", since, until)
    placeholder = dialects.of(connection).placeholder
    head = (
        "CASE WHEN INSTR(p.remark, ': ') > 0 "
        "THEN SUBSTR(p.remark, 1, INSTR(p.remark, ': ') - 1) ELSE p.remark END"
    )
    sql = (
        f"SELECT {head} AS reason, COUNT(*) AS pods, COUNT(DISTINCT j.job_id) AS jobs "
        "FROM job_info j JOIN replica_info p ON p.job_id = j.job_id "
        f"WHERE j.status = {placeholder} AND {' AND '.join(where)} "
        f"AND p.status = {placeholder} "
        f"GROUP BY {head} ORDER BY pods DESC, reason LIMIT {FAILURE_REASONS}"
    )
    _, rows = await connection.execute_query(sql, ["Failed", *params, "Failed"])
    return [
        {"reason": row["reason"] or "unknown", "pods": int(row["pods"]), "jobs": int(row["jobs"])}
        for row in rows
    ]


# The most jobs of a window whose requests are summed in Python (JSON is not summed
# alike by MySQL and SQLite): the newest ones, and the page says when it is cut.
GPU_SCAN = 20_000
GPU_OWNERS = 10


@dataclasses.dataclass(frozen=True)
class GpuHours:
    """GPU-hours requested per owner, most first (the first ``GPU_OWNERS``); ``cut``
    when the window held more than ``GPU_SCAN`` jobs and only the newest were summed."""

    owners: list[dict[str, Any]]
    cut: bool


async def gpu_hours(since: datetime.datetime, until: datetime.datetime) -> GpuHours:
    """Per owner, the GPUs a job's replicas request (``*/gpu`` requests, else limits)
    times how long it ran (created to finished, or to now while it runs), summed over
    the jobs created in [since, until)."""
    rows = (
        await _read(Job)
        .filter(gmt_created__gte=since, gmt_created__lt=until)
        .order_by("-gmt_created", "-id")
        .limit(GPU_SCAN + 1)
        .annotate(head=Head("resources", RESOURCES_LENGTH + 1))
        .values("owner", "head", "gmt_created", "gmt_finished", "is_in_etcd")
    )
    now = datetime.datetime.now(datetime.UTC)
    totals: dict[str, list[float]] = {}
    for row in rows[:GPU_SCAN]:
        gpus = requested_gpus(_json_or_text(row["head"]))
        end = row["gmt_finished"] or (now if row["is_in_etcd"] else None)
        seconds = _seconds(row["gmt_created"], end)
        if not gpus or seconds is None:
            continue
        total = totals.setdefault(row["owner"] or "", [0.0, 0])
        total[0] += gpus * seconds / 3600
        total[1] += 1
    ranked = sorted(totals.items(), key=lambda item: (-item[1][0], item[0]))[:GPU_OWNERS]
    owners = [
        {"owner": owner, "gpu_hours": round(hours, 1), "jobs": int(jobs)}
        for owner, (hours, jobs) in ranked
    ]
    return GpuHours(owners, len(rows) > GPU_SCAN)


def requested_gpus(resources: Any) -> float:
    """The GPUs a job's ``resources`` column asks for: per replica type, replicas times
    its ``*/gpu`` requests (else limits, which Kubernetes copies to requests)."""
    if not isinstance(resources, dict):
        return 0.0
    total = 0.0
    for spec in resources.values():
        if not isinstance(spec, dict):
            continue
        replicas = spec.get("replicas", 1)
        wanted = spec.get("resources")
        if not isinstance(wanted, dict):
            continue
        for part in ("requests", "limits"):
            amounts = wanted.get(part)
            gpus = _gpu_count(amounts) if isinstance(amounts, dict) else 0.0
            if gpus:
                total += gpus * (replicas if isinstance(replicas, int) else 1)
                break
    return total


def _gpu_count(amounts: dict[str, Any]) -> float:
    count = 0.0
    for name, amount in amounts.items():
        if not str(name).endswith("/gpu"):
            continue
        try:
            value = float(str(amount))
        except ValueError:
            continue
        # A hand-written "1e999" or "nan" requests nothing countable.
        if math.isfinite(value) and value > 0:
            count += value
    return count


# A tail is up to JOBARCHIVE_LOG_TAIL_BYTES (64 KiB by default): fewer per answer than rows.
LOG_TAILS_PAGE = 20
LOG_TAILS_MAX = 100


def log_tail_json(tail: LogTail) -> dict[str, Any]:
    """A stored log tail: which container instance, how it ended, and its text (or,
    ``captured`` false, the ``note`` saying why there is none)."""
    return {
        "id": tail.id,
        "job_id": tail.job_id,
        "namespace": tail.namespace,
        "pod_name": tail.pod_name,
        "pod_id": tail.pod_id,
        "container": tail.container,
        "container_type": tail.container_type,
        "restart_count": tail.restart_count,
        "exit_code": tail.exit_code,
        "reason": clip(tail.reason, SHORT_TEXT_LENGTH),
        "gmt_failed": rfc3339(tail.gmt_failed),
        "captured": tail.captured,
        "truncated": tail.truncated,
        "note": clip(tail.note, NOTE_LENGTH),
        "log_tail": clip(tail.log_tail, LOG_TAIL_LENGTH),
        "gmt_created": rfc3339(tail.gmt_created),
    }


async def job_log_tails(
    job_uid: str,
    pod: str | None = None,
    container: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Page:
    """A job's failed containers' log tails, newest failure first, one page of at most
    ``limit`` (``LOG_TAILS_PAGE``, up to ``LOG_TAILS_MAX``) and ``PAGE_BYTES``; ``pod``
    (a name or uid) and ``container`` narrow them. Read along the index on (job_id,
    gmt_failed)."""
    size = LOG_TAILS_PAGE if limit is None else limit
    if not 1 <= size <= LOG_TAILS_MAX:
        raise BadQuery(f"limit: {size} is outside 1..{LOG_TAILS_MAX}")
    found = _bounded(LogTail).filter(job_id=fits("uid", job_uid, UID_LENGTH))
    if pod is not None:
        by_name = Q(pod_name=fits("pod", pod, NAME_LENGTH))
        found = found.filter(by_name | Q(pod_id=pod) if len(pod) <= UID_LENGTH else by_name)
    if container is not None:
        found = found.filter(container=fits("container", container, CONTAINER_NAME_LENGTH))
    return await _page(found, Order("gmt_failed", "log-tails"), size, cursor, log_tail_json)


async def pods_with_log_tails(job_uid: str, pod_uids: Sequence[str]) -> set[str]:
    """Which of a job's pods (of those given: a page of them) have a captured log tail."""
    if not pod_uids:
        return set()
    found = (
        await _read(LogTail)
        .filter(job_id=fits("uid", job_uid, UID_LENGTH), pod_id__in=list(pod_uids), captured=True)
        .distinct()
        .values_list("pod_id", flat=True)
    )
    return {str(uid) for uid in found}


async def pod_names_with_log_tails(job_uid: str) -> set[str]:
    """The names of a job's pods with a captured log tail, as many as a timeline draws."""
    found = (
        await _read(LogTail)
        .filter(job_id=fits("uid", job_uid, UID_LENGTH), captured=True)
        .distinct()
        .limit(TIMELINE_PODS)
        .values_list("pod_name", flat=True)
    )
    return {str(name) for name in found}
