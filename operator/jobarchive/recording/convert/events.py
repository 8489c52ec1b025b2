"""core/v1 Event -> ``event_info`` row.

Events written through events.k8s.io and read through core/v1 leave
``count``, ``firstTimestamp`` and ``lastTimestamp`` empty and carry ``series``
and ``eventTime`` instead; both shapes give the same row. The events.k8s.io
field names (``regarding``, ``note``, ``deprecated*``) are read too, so an Event
in either API's shape converts.
"""

import dataclasses
from collections.abc import Mapping
from typing import Any

from jobarchive.core.cutting import clip
from jobarchive.core.rows import (
    EVENT_NAME_LENGTH,
    KIND_LENGTH,
    MESSAGE_LENGTH,
    NAME_LENGTH,
    NAMESPACE_LENGTH,
    SHORT_TEXT_LENGTH,
    UID_LENGTH,
    EventRow,
)
from jobarchive.core.times import timestamp
from jobarchive.core.untrusted import integer, mapping, text
from jobarchive.recording.convert.common import InvalidObject, identity, uid


@dataclasses.dataclass(frozen=True)
class InvolvedObject:
    """What an Event is about."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str


def involved_object(event: Mapping[str, Any]) -> InvolvedObject:
    """The object the Event is about; raises InvalidObject when it names none."""
    raw = mapping(event.get("involvedObject")) or mapping(event.get("regarding"))
    meta = mapping(event.get("metadata"))
    kind = text(raw.get("kind"))
    name = text(raw.get("name"))
    if not kind or not name:
        raise InvalidObject("involvedObject has no kind or name")
    if len(name) > NAME_LENGTH or len(kind) > KIND_LENGTH:
        raise InvalidObject("involvedObject's kind or name is too long for a Kubernetes object")
    namespace = text(raw.get("namespace")) or text(meta.get("namespace")) or ""
    return InvolvedObject(
        api_version=text(raw.get("apiVersion")) or "",
        kind=kind,
        namespace=clip(namespace, NAMESPACE_LENGTH) or "",
        name=name,
        uid=clip(text(raw.get("uid")), UID_LENGTH) or "",
    )


def event_row(
    event: Mapping[str, Any],
    region: str | None,
    job_uid: str | None = None,
    involved: InvolvedObject | None = None,
) -> EventRow:
    """The ``event_info`` row of an Event, about the job ``job_uid`` when known;
    ``involved`` is its ``involved_object``, when the caller has read it already."""
    if involved is None:
        involved = involved_object(event)
    series = mapping(event.get("series"))
    base = identity(event)
    if len(base["name"]) > EVENT_NAME_LENGTH:
        raise InvalidObject("metadata.name is too long")
    event_time = timestamp(event.get("eventTime"))
    first = (
        timestamp(event.get("firstTimestamp"))
        or timestamp(event.get("deprecatedFirstTimestamp"))
        or event_time
        or base["gmt_created"]
    )
    last = (
        timestamp(event.get("lastTimestamp"))
        or timestamp(event.get("deprecatedLastTimestamp"))
        or timestamp(series.get("lastObservedTime"))
        or event_time
        or first
    )
    count = (
        _positive(event.get("count"))
        or _positive(event.get("deprecatedCount"))
        or _positive(series.get("count"))
        or 1
    )
    return {
        "event_id": uid(event),
        "version": base["version"],
        "name": base["name"],
        "gmt_created": base["gmt_created"],
        "kind": involved.kind,
        "type": clip(text(event.get("type")), SHORT_TEXT_LENGTH) or "",
        "obj_namespace": involved.namespace,
        "obj_name": involved.name,
        "obj_uid": involved.uid,
        "job_id": job_uid,
        "reason": clip(text(event.get("reason")), SHORT_TEXT_LENGTH) or "",
        "message": clip(
            text(event.get("message")) or text(event.get("note")) or "", MESSAGE_LENGTH
        ),
        "count": min(count, 2**31 - 1),
        "region": clip(region, SHORT_TEXT_LENGTH),
        "first_timestamp": first,
        "last_timestamp": last,
    }


def _positive(value: object) -> int | None:
    number = integer(value)
    return number if number is not None and number > 0 else None
