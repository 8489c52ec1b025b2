"""Events: the filtered list, most recent occurrence first.

What an index reads first (a namespace, a start of the window, the object's uid, a
reason) must be among the filters; the others only sift what it found (decision 15).
"""

from typing import Any

from tortoise.queryset import QuerySet

from jobarchive.core.rows import (
    EVENT_NAME_LENGTH,
    NAME_LENGTH,
    SHORT_TEXT_LENGTH,
    UID_LENGTH,
)
from jobarchive.reading.lists import Asked, EventQuery, Listing, Shape
from jobarchive.reading.params import (
    BUILTIN,
    EVENT_LEADING,
    EVENT_PARAMS,
    EVENT_TYPES,
    BadQuery,
    Clusters,
    KnownKinds,
    Named,
    Page,
    check_namespace,
    cluster_filter,
    fits,
    one_of,
    page_size,
)
from jobarchive.reading.queries.paging import Order, ordered, paged
from jobarchive.reading.queries.shapes import event_json
from jobarchive.reading.queries.source import bounded
from jobarchive.storage.models import Event

RECENT = Order("last_timestamp", "events")


async def list_events(
    query: EventQuery,
    limit: int | None = None,
    cursor: str | None = None,
    kinds: KnownKinds = BUILTIN,
    scope: Clusters = None,
    shape: Shape = event_json,
) -> Page:
    """Events matching the filters within the ``scope`` of clusters, most recent
    occurrence first, one page, each row as ``shape`` makes it."""
    found = _event_filters(query, kinds).filter(**cluster_filter(scope))
    return await paged(found, RECENT, page_size(limit), cursor, shape)


async def _events_page(
    asked: Asked[EventQuery], scope: Clusters, kinds: KnownKinds, shape: Shape | None
) -> Page:
    shaped = shape or event_json
    return await list_events(asked.filters, asked.limit, asked.cursor, kinds, scope, shaped)


EVENTS = Listing(EVENT_PARAMS, EventQuery, _events_page)


async def event_page_sql(
    query: EventQuery, limit: int | None = None, cursor: str | None = None
) -> str:
    """The SQL of one page of Events, parameters inlined: for EXPLAIN."""
    found = _event_filters(query, BUILTIN)
    sql: str = ordered(found, RECENT, page_size(limit), cursor).sql(params_inline=True)
    return sql


def _event_filters(query: EventQuery, kinds: KnownKinds) -> "QuerySet[Event]":
    # Every value is checked before the index rule: an unknown type is a mistake to
    # be told as such, not a filter to be placed.
    clusters = cluster_filter(query.cluster)
    exact = {
        # Checked as its record was made (``reading.lists``), before its review.
        "obj_namespace": query.namespace,
        "obj_name": fits("object", query.object_name, NAME_LENGTH),
        "obj_uid": fits("uid", query.object_uid, UID_LENGTH),
        "kind": one_of("kind", query.object_kind, kinds.objects),
        "type": one_of("type", query.type, EVENT_TYPES),
        "reason": fits("reason", query.reason, SHORT_TEXT_LENGTH),
        "last_timestamp__gte": query.since,
        "last_timestamp__lt": query.until,
    }
    _refuse_scans(query)
    found = bounded(Event).filter(**clusters)
    return found.filter(**{field: value for field, value in exact.items() if value is not None})


def _refuse_scans(query: EventQuery) -> None:
    """Filters no index serves are read within what a leading filter selects only."""
    leading = [getattr(query, field) for field in EVENT_LEADING]
    # A cluster asked for, not a caller's scope: both only sift (decision 36).
    asked = query.cluster if isinstance(query.cluster, str) else None
    for name, value in (
        ("object", query.object_name),
        ("kind", query.object_kind),
        ("type", query.type),
        ("cluster", asked),
    ):
        if value is not None and all(first is None for first in leading):
            raise BadQuery(
                Named(name),
                ": no index serves it; name a ",
                Named("namespace"),
                " or a ",
                Named("since"),
                " with it",
            )


async def named_event(
    namespace: str, name: str, clusters: Clusters = None
) -> dict[str, Any] | None:
    """The Event of that name in a namespace and the ``clusters``: Kubernetes names an
    Event after its object (``<object>.<suffix>``), so the object's index finds it; None
    when not found so."""
    subject, dot, _ = name.rpartition(".")
    if not dot or len(subject) > NAME_LENGTH:
        return None
    found = (
        await bounded(Event)
        .filter(
            obj_namespace=check_namespace(namespace),
            obj_name=fits("name", subject, NAME_LENGTH),
            name=fits("name", name, EVENT_NAME_LENGTH),
            **cluster_filter(clusters),
        )
        .order_by("-last_timestamp", "-id")
        .first()
    )
    return None if found is None else event_json(found)


async def one_event(event_uid: str) -> dict[str, Any] | None:
    """The Event with that uid; None if none has it."""
    found = await bounded(Event).filter(event_id=fits("uid", event_uid, UID_LENGTH)).first()
    return None if found is None else event_json(found)
