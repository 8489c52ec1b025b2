"""Keyset pages: lists are paged newest first (or oldest, as a list says), and a
cursor names the last row of a page by its sort key and the row id, so a page never
repeats or skips a row however many rows are written meanwhile (an offset would shift
under inserts and cost a scan of everything skipped). A cursor also names its list,
so that one list's cursor is refused by another (decision 15).
"""

import base64
import binascii
import dataclasses
import datetime
import json
from collections.abc import Callable
from typing import Any

from tortoise.expressions import Q
from tortoise.queryset import QuerySet

from jobarchive.core.times import aware, from_rfc3339
from jobarchive.reading.params import BadQuery, Named, Page

# No page is longer than this as JSON, whatever its rows hold: past it the page ends
# early and its cursor goes on from there (decision 15). A job's detail holds two.
PAGE_BYTES = 2 * 2**20
MAX_CURSOR = 200


@dataclasses.dataclass(frozen=True)
class Order:
    """How a list is paged: by which field, which way, and the name its cursors carry."""

    field: str
    kind: str
    ascending: bool = False


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
    refused = BadQuery(
        Named("cursor"), f": not a cursor of this list ({kind}) that this archive gave out"
    )
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
        when = from_rfc3339(stamp) if stamp else None
    except ValueError:
        raise refused from None
    return when, row_id


def after(
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
    later = Q(**before) | Q(**tied)
    if query.model._meta.fields_map[field].null:
        unknown: dict[str, Any] = {f"{field}__isnull": True}
        later |= Q(**unknown)
    return query.filter(later)


def ordered(query: "QuerySet[Any]", order: Order, limit: int, cursor: str | None) -> Any:
    """One more row than the page holds: its presence says another page follows."""
    field = order.field
    by = (field, "id") if order.ascending else (f"-{field}", "-id")
    return after(query, field, cursor, order.kind, order.ascending).order_by(*by).limit(limit + 1)


async def paged(
    query: "QuerySet[Any]",
    order: Order,
    limit: int,
    cursor: str | None,
    shape: Callable[[Any], dict[str, Any]],
) -> Page:
    """One page of ``query``'s rows as ``shape`` makes them: at most ``limit`` rows and
    ``PAGE_BYTES`` of JSON (one row at least); the cursor goes on after the last."""
    rows: list[Any] = await ordered(query, order, limit, cursor)
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
