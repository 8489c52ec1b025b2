"""What every converter reads the same way: an object's identity (name, uid,
resourceVersion: mandatory, or ``InvalidObject`` says why), its last change, and the
final form of a row whose object is gone."""

import datetime
from collections.abc import Mapping
from typing import Any, TypedDict

from jobarchive.core.cutting import clip
from jobarchive.core.rows import NAME_LENGTH, NAMESPACE_LENGTH, UID_LENGTH, VERSION_LENGTH, LiveRow
from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import mapping, sequence, text

TERMINAL_STATUSES = frozenset({"Succeeded", "Failed"})
STOPPED = "Stopped"


class InvalidObject(ValueError):
    """The object cannot become a row; the message says why."""


def required(meta: Mapping[str, Any], field: str, length: int) -> str:
    """A mandatory identifying string of metadata: present, non-empty, fitting its column."""
    value = text(meta.get(field))
    if not value:
        raise InvalidObject(f"metadata.{field} is missing or not a string")
    if len(value) > length:
        raise InvalidObject(f"metadata.{field} is {len(value)} characters, over {length}")
    return value


class Identity(TypedDict):
    """The columns every row takes from metadata."""

    name: str
    namespace: str
    version: str
    gmt_created: datetime.datetime | None


def identity(obj: Mapping[str, Any]) -> Identity:
    """The columns every row takes from metadata: name, namespace, version, gmt_created.

    The uid is read by each converter under its own column name.
    """
    meta = mapping(obj.get("metadata"))
    return {
        "name": required(meta, "name", NAME_LENGTH),
        "namespace": clip(text(meta.get("namespace")), NAMESPACE_LENGTH) or "",
        "version": required(meta, "resourceVersion", VERSION_LENGTH),
        "gmt_created": timestamp(meta.get("creationTimestamp")),
    }


def uid(obj: Mapping[str, Any]) -> str:
    """The object's uid, mandatory."""
    return required(mapping(obj.get("metadata")), "uid", UID_LENGTH)


def mark_gone(row: LiveRow, now: datetime.datetime) -> None:
    """Turn a job or pod row into its final form once the object is gone.

    The row is kept, not deleted: the archive's point is the history of what is no
    longer in the cluster. A terminal status is kept; any other becomes ``Stopped``
    finished now.
    """
    row["deleted"] = True
    row["is_in_etcd"] = False
    if row.get("status") not in TERMINAL_STATUSES:
        row["status"] = STOPPED
        if row.get("gmt_finished") is None:
            row["gmt_finished"] = now


def last_change(obj: Mapping[str, Any]) -> datetime.datetime | None:
    """The newest time an object says it changed, for the lag metric; None if it says none.

    The API server stamps ``managedFields[].time`` on every write by a manager, so it
    is the best witness; creation, deletion, condition transitions and an Event's
    own times cover objects written without managed fields.
    """
    meta = mapping(obj.get("metadata"))
    status = mapping(obj.get("status"))
    candidates: list[object] = [
        meta.get("creationTimestamp"),
        meta.get("deletionTimestamp"),
        obj.get("lastTimestamp"),
        obj.get("eventTime"),
        mapping(obj.get("series")).get("lastObservedTime"),
    ]
    candidates += [mapping(field).get("time") for field in sequence(meta.get("managedFields"))]
    for condition in sequence(status.get("conditions")):
        candidates += [
            mapping(condition).get("lastTransitionTime"),
            mapping(condition).get("lastUpdateTime"),
        ]
    times = [parsed for parsed in map(timestamp, candidates) if parsed is not None]
    return max(times, default=None)
