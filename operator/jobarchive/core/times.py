"""Times for every part: the one parser of RFC 3339 text (Kubernetes' Time or
MicroTime as an aware UTC datetime), a database's naive UTC made aware, RFC 3339
written back, and the one way a duration is written."""

import datetime


def from_rfc3339(text: str) -> datetime.datetime:
    """An RFC 3339 time or MicroTime, or a date (its midnight), as written, aware: one
    with no offset is in UTC, and ``Z`` is UTC after a date too. ValueError when it is
    none of them. The one parser of a time written as text."""
    parsed = datetime.datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=datetime.UTC)


def timestamp(value: object) -> datetime.datetime | None:
    """An RFC 3339 Time or MicroTime (``from_rfc3339``) as an aware UTC datetime; None
    if it is not one, or falls outside the years 1 to 9999 in UTC."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return from_rfc3339(value).astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        return None


def aware(moment: datetime.datetime | None) -> datetime.datetime | None:
    """A time as a database gives it (MySQL: naive, in UTC), aware; None stays None."""
    if moment is None:
        return None
    return moment.replace(tzinfo=datetime.UTC) if moment.tzinfo is None else moment


def rfc3339(moment: datetime.datetime | None) -> str | None:
    """``2026-11-29T10:00:05Z`` (with microseconds when it has them); None stays None."""
    when = aware(moment)
    if when is None:
        return None
    return when.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def seconds(start: datetime.datetime | None, end: datetime.datetime | None) -> float | None:
    """Seconds from ``start`` to ``end`` (never negative); None unless both are known."""
    first, last = aware(start), aware(end)
    if first is None or last is None:
        return None
    return max(0.0, (last - first).total_seconds())


# A duration's units, largest first.
UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration(seconds: float | None) -> str:
    """``1h 23m``, ``45s``, ``2d 3h``, ``13d``: the largest unit and the one after it
    (left out when zero: ``13d 39s`` would claim a precision the first unit does not
    have), or ``-`` when unknown; the one way the CLI and the console write a duration."""
    if seconds is None:
        return "-"
    left = round(seconds)
    for index, (unit, size) in enumerate(UNITS):
        if left >= size:
            written = f"{left // size}{unit}"
            if index + 1 == len(UNITS):
                return written
            smaller, smaller_size = UNITS[index + 1]
            rest = left % size // smaller_size
            return f"{written} {rest}{smaller}" if rest else written
    return "0s"
