"""What a job's timeline draws, read as raw rows along the (job_id, time) indexes: only
the fields the bars and marks need, and at most so many pods and Events (decision 18)."""

import dataclasses
import datetime
from collections.abc import Sequence
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.rows import REMARK_LENGTH, UID_LENGTH
from jobarchive.core.times import aware, timestamp
from jobarchive.reading.params import EARLIEST, fits
from jobarchive.reading.queries.source import Head, read
from jobarchive.storage import dialects
from jobarchive.storage.models import Job
from jobarchive.storage.readpool import reader

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
    "restarts",
    "gmt_restarted",
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
# The text a timeline shows, cut by the database to one past what it shows.
_TIMELINE_HEADS = {"remark": TIMELINE_REMARK + 1, "message": TIMELINE_MESSAGE + 1}


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
        await read(Job)
        .filter(job_id=uid)
        .annotate(head=Head("remark", REMARK_LENGTH + 1))
        .first()
        .values("head")
    )
    if job is None:
        return None
    connection = reader()
    dialect = dialects.of(connection)
    placeholder, name = dialect.placeholder, dialect.name
    # Raw rows: Tortoise's conversion of 2,000 rows costs 0.2 s, a tenth of that here.
    _, found = await connection.execute_query(_timeline_pods_sql(placeholder, name), [uid])
    pods = [_pod(row) for row in found]
    events: list[dict[str, Any]] = []
    events_cut = False
    for warning in (True, False):
        sql = _timeline_events_sql(placeholder, name, warning)
        _, rows = await connection.execute_query(sql, [uid])
        events_cut = events_cut or len(rows) > TIMELINE_EVENTS
        events.extend(_event(row) for row in rows[:TIMELINE_EVENTS])
    events.sort(key=lambda event: event["last_timestamp"] or EARLIEST)
    return Timeline(
        clip(job["head"], REMARK_LENGTH),
        pods[:TIMELINE_PODS],
        len(pods) > TIMELINE_PODS,
        events,
        events_cut,
    )


def _pod(row: Any) -> dict[str, Any]:
    pod = dict(row)
    for field in ("gmt_created", "gmt_started", "gmt_finished", "gmt_restarted"):
        pod[field] = _moment(pod[field])
    pod["remark"] = clip(pod["remark"], TIMELINE_REMARK)
    return pod


def _event(row: Any) -> dict[str, Any]:
    event = dict(row)
    for field in ("first_timestamp", "last_timestamp"):
        event[field] = _moment(event[field])
    event["message"] = clip(event["message"] or "", TIMELINE_MESSAGE)
    return event


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
        return timestamp(value)
    return aware(value) if isinstance(value, datetime.datetime) else None
